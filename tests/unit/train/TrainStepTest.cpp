// Whole training steps on the cpu device: a linear model with a hand-written backward
// (so these tests check the step apart from autodiff, and then autodiff against it) trained for a few steps by SGD with momentum
// and dampening, Adam and AdamW under a warm-up + cosine schedule and clipping, checked
// against the same training computed here on the host in double precision (torch.optim's
// formulas; tests/python/test_train.py checks against torch itself). Also: the optimizer
// state kept per parameter, gradients kept, and a bad call changing nothing.
#include "ir/Diagnostic.h"
#include "runtime/DeviceRegistry.h"
#include "runtime/KernelCache.h"
#include "train/TrainStep.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace unitile::train {
namespace {

using ::testing::HasSubstr;

// 2 / (kRows * kOut) is exact in f32, as the graph's constant op writes its literal.
constexpr int kRows = 4, kIn = 3, kOut = 2;

Tensor random_f64(std::vector<int64_t> shape, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-1, 1);
  Tensor t = Tensor::zeros(DType::F64, std::move(shape));
  for (size_t i = 0; i < t.numel(); ++i)
    t.set(i, u(rng));
  return t;
}

std::vector<double> values(const Tensor& t) {
  std::vector<double> v;
  for (size_t i = 0; i < t.numel(); ++i)
    v.push_back(t.get(i));
  return v;
}

// loss = mean((X @ W + b - Y)^2) with its gradients written out by hand.
struct LinearModel {
  graph::Graph g;
  graph::ValueId loss = -1;
  std::vector<graph::ValueId> grads; // W, b

  LinearModel() {
    const ops::TensorSpec f64{DType::F64, {}};
    const graph::ValueId x = g.add_input("X", {DType::F64, {kRows, kIn}});
    const graph::ValueId w = g.add_input("W", {DType::F64, {kIn, kOut}});
    const graph::ValueId y = g.add_input("Y", {DType::F64, {kRows, kOut}});
    const graph::ValueId b = g.add_input("b", {DType::F64, {kOut}});
    auto node = [&](const std::string& op, std::vector<graph::ValueId> in, ops::Attrs attrs = {}) {
      return g.add_node(op, in, attrs, "test").front();
    };
    const graph::ValueId diff = node("sub", {node("add", {node("matmul", {x, w}), b}), y});
    loss = node("reduce_mean", {node("mul", {diff, diff})}, {{"axes", std::vector<int64_t>{}}, {"keepdims", int64_t{0}}});
    const graph::ValueId two_over_n =
        node("constant", {}, {{"value", 2.0 / (kRows * kOut)}, {"dtype", std::string("f64")}});
    const graph::ValueId dpred = node("mul", {diff, two_over_n});
    grads.push_back(node("matmul", {node("transpose", {x}, {{"perm", std::vector<int64_t>{}}}), dpred}));
    grads.push_back(node("reduce_sum", {dpred}, {{"axes", std::vector<int64_t>{0}}, {"keepdims", int64_t{0}}}));
    (void)f64;
  }
};

// The same model and training on the host.
struct HostTraining {
  std::vector<double> x, y;
  std::vector<std::vector<double>> params; // W, b
  std::vector<std::vector<std::vector<double>>> state;
  OptimizerConfig config;
  std::optional<double> clip;
  int64_t step = 0;
  std::vector<OptimizerConfig> per_param; // parameter groups: each parameter's settings

  double loss_and_grads(std::vector<std::vector<double>>& grads) const {
    const std::vector<double>& w = params[0];
    const std::vector<double>& b = params[1];
    grads = {std::vector<double>(w.size()), std::vector<double>(b.size())};
    double loss = 0;
    const double scale = 2.0 / (kRows * kOut);
    for (int r = 0; r < kRows; ++r)
      for (int o = 0; o < kOut; ++o) {
        double pred = b[o];
        for (int k = 0; k < kIn; ++k)
          pred += x[r * kIn + k] * w[k * kOut + o];
        const double d = pred - y[r * kOut + o];
        loss += d * d / (kRows * kOut);
        for (int k = 0; k < kIn; ++k)
          grads[0][k * kOut + o] += x[r * kIn + k] * d * scale;
        grads[1][o] += d * scale;
      }
    return loss;
  }

  double update() {
    std::vector<std::vector<double>> grads;
    const double loss = loss_and_grads(grads);
    if (clip) {
      double sq = 0;
      for (auto& g : grads)
        for (double v : g)
          sq += v * v;
      const double coef = std::min(*clip / (std::sqrt(sq) + 1e-6), 1.0);
      for (auto& g : grads)
        for (double& v : g)
          v *= coef;
    }
    const double t = static_cast<double>(step + 1);
    for (size_t i = 0; i < params.size(); ++i)
      for (size_t e = 0; e < params[i].size(); ++e) {
        const OptimizerConfig& config = per_param.empty() ? this->config : per_param[i];
        const double lr = config.lr.at(step);
        double& p = params[i][e];
        double g = grads[i][e];
        if (config.kind == OptimizerKind::Sgd) {
          g += config.weight_decay * p;
          if (config.momentum != 0) {
            double& buf = state[i][0][e];
            buf = step == 0 ? g : buf * config.momentum + (1 - config.dampening) * g;
            g = config.nesterov ? g + config.momentum * buf : buf;
          }
          p -= lr * g;
          continue;
        }
        if (config.kind == OptimizerKind::Adam)
          g += config.weight_decay * p;
        else
          p *= 1 - lr * config.weight_decay;
        double& m = state[i][0][e];
        double& v = state[i][1][e];
        m = config.beta1 * m + (1 - config.beta1) * g;
        v = config.beta2 * v + (1 - config.beta2) * g * g;
        const double bc1 = 1 - std::pow(config.beta1, t), bc2 = 1 - std::pow(config.beta2, t);
        p -= lr / bc1 * m / (std::sqrt(v) / std::sqrt(bc2) + config.eps);
      }
    ++step;
    return loss;
  }
};

class TrainStepTest : public ::testing::Test {
protected:
  TrainStepTest()
      : session_(open_device("cpu", {std::string(UNITILE_PLUGIN_DIR) + "/libunitile-device-cpu.so", ""}),
                 std::make_shared<KernelCache>(KernelCache::default_dir())) {
    std::mt19937 rng(7);
    x_ = random_f64({kRows, kIn}, rng);
    y_ = random_f64({kRows, kOut}, rng);
    w_ = random_f64({kIn, kOut}, rng);
    b_ = random_f64({kOut}, rng);
  }

  // Trains `steps` updates on the device and on the host and compares losses, parameters
  // and optimizer state after each.
  // With `b_config`, the bias b is a parameter group of its own with these settings.
  void train_and_compare(const OptimizerConfig& config, std::optional<double> clip, int steps,
                         std::optional<OptimizerConfig> b_config = std::nullopt) {
    LinearModel model;
    TrainStepOptions options;
    options.clip_norm = clip;
    if (b_config)
      options.param_groups.push_back({{"b"}, *b_config});
    TrainStep step(session_, model.g, model.loss, {"W", "b"}, config, options, model.grads);
    TrainState state = make_train_state(session_, {{"W", w_}, {"b", b_}}, config, options.param_groups);
    HostTraining host{values(x_), values(y_), {values(w_), values(b_)}, {}, config, clip, 0, {}};
    if (b_config)
      host.per_param = {config, *b_config};
    for (size_t i = 0; i < host.params.size(); ++i)
      host.state.push_back(std::vector<std::vector<double>>(
          (host.per_param.empty() ? config : host.per_param[i]).state_names().size(),
          std::vector<double>(host.params[i].size(), 0.0)));
    const std::vector<DeviceTensor> batch{upload(session_, x_), upload(session_, y_)};
    for (int s = 0; s < steps; ++s) {
      const double want = host.update();
      EXPECT_NEAR(step.run(state, batch), want, 1e-12 * std::abs(want)) << "step " << s;
      EXPECT_EQ(state.step, s + 1);
      for (size_t i = 0; i < 2; ++i) {
        const std::vector<double> got = values(download(session_, state.params[i]));
        for (size_t e = 0; e < got.size(); ++e)
          EXPECT_NEAR(got[e], host.params[i][e], 1e-12) << "step " << s << " parameter " << i << " element " << e;
        for (size_t k = 0; k < host.state[i].size(); ++k) {
          const std::vector<double> st = values(download(session_, state.optimizer_state[i][k]));
          for (size_t e = 0; e < st.size(); ++e)
            EXPECT_NEAR(st[e], host.state[i][k][e], 1e-12) << "step " << s << " state " << k;
        }
      }
    }
  }

  Session session_;
  Tensor x_, y_, w_, b_;
};

TEST_F(TrainStepTest, SgdWithMomentumAndDampeningUnderASchedule) {
  // Dampening makes the first update a graph of its own (the buffer starts undamped).
  train_and_compare(OptimizerConfig::sgd(LrSchedule::warmup_cosine(0.1, 2, 5, 0.01), 0.9, 0.01, false, 0.2),
                    std::nullopt, 6);
}

TEST_F(TrainStepTest, SgdNesterovAndPlainSgd) {
  train_and_compare(OptimizerConfig::sgd(LrSchedule::constant(0.05), 0.8, 0.0, true), std::nullopt, 3);
  train_and_compare(OptimizerConfig::sgd(LrSchedule::constant(0.05)), std::nullopt, 3);
}

TEST_F(TrainStepTest, AdamWithL2AndClipping) {
  train_and_compare(OptimizerConfig::adam(LrSchedule::warmup_cosine(0.05, 1, 4), 0.8, 0.99, 1e-6, 0.1), 0.5, 5);
}

TEST_F(TrainStepTest, AdamWDecoupledUnderWarmupCosine) {
  train_and_compare(OptimizerConfig::adamw(LrSchedule::warmup_cosine(0.1, 2, 6, 0.01)), std::nullopt, 7);
}

TEST_F(TrainStepTest, ParameterGroupsHaveTheirOwnSettingsAndSchedules) {
  // The bias without weight decay and with its own rate and betas (as GPT training
  // leaves biases and LayerNorm scales undecayed).
  train_and_compare(OptimizerConfig::adamw(LrSchedule::warmup_cosine(0.1, 2, 6, 0.01), 0.9, 0.999, 1e-8, 0.1),
                    0.5, 5, OptimizerConfig::adamw(LrSchedule::constant(0.03), 0.8, 0.99, 1e-8, 0.0));
  // SGD groups keep different state: momentum with dampening (a first graph of its own)
  // for W, none for b.
  train_and_compare(OptimizerConfig::sgd(LrSchedule::constant(0.1), 0.9, 0.01, false, 0.2), std::nullopt, 4,
                    OptimizerConfig::sgd(LrSchedule::warmup_cosine(0.2, 1, 3), 0.0, 0.0));
  train_and_compare(OptimizerConfig::adam(LrSchedule::constant(0.05)), std::nullopt, 3,
                    OptimizerConfig::adam(LrSchedule::constant(0.01), 0.5, 0.9, 1e-6, 0.2));
}

TEST_F(TrainStepTest, BadParameterGroupsAreUserErrors) {
  LinearModel model;
  const OptimizerConfig config = OptimizerConfig::adamw(LrSchedule::constant(0.1));
  auto message = [&](std::vector<ParamGroup> groups) {
    TrainStepOptions options;
    options.param_groups = std::move(groups);
    try {
      TrainStep(session_, model.g, model.loss, {"W", "b"}, config, options, model.grads);
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(message({{{"c"}, config}}), HasSubstr("parameter group 0 names 'c', which is not a parameter"));
  EXPECT_THAT(message({{{"b"}, config}, {{"W", "b"}, config}}),
              HasSubstr("parameter 'b' is in parameter groups 0 and 1"));
  EXPECT_THAT(message({{{"b"}, OptimizerConfig::sgd(LrSchedule::constant(0.1))}}),
              HasSubstr("parameter group 0 uses sgd but the optimizer is adamw"));
  // A state made without the groups has the wrong state tensors for them.
  const OptimizerConfig sgd = OptimizerConfig::sgd(LrSchedule::constant(0.1), 0.9);
  TrainStepOptions options;
  options.param_groups = {{{"b"}, OptimizerConfig::sgd(LrSchedule::constant(0.1))}};
  TrainStep step(session_, model.g, model.loss, {"W", "b"}, sgd, options, model.grads);
  TrainState state = make_train_state(session_, {{"W", w_}, {"b", b_}}, sgd);
  try {
    step.run(state, {upload(session_, x_), upload(session_, y_)});
    ADD_FAILURE() << "no error";
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), HasSubstr("parameter 'b' has 1 optimizer state tensors"));
  }
  EXPECT_EQ(state.step, 0);
}

TEST_F(TrainStepTest, DerivedGradientsEqualTheHandWrittenOnes) {
  // The same training with the gradients appended by graph::append_gradients.
  LinearModel model;
  const OptimizerConfig config = OptimizerConfig::adamw(LrSchedule::warmup_cosine(0.1, 1, 3));
  TrainStepOptions options;
  options.keep_gradients = true;
  TrainStep given(session_, model.g, model.loss, {"W", "b"}, config, options, model.grads);
  TrainStep derived(session_, model.g, model.loss, {"W", "b"}, config, options);
  TrainState a = make_train_state(session_, {{"W", w_}, {"b", b_}}, config);
  TrainState b = make_train_state(session_, {{"W", w_}, {"b", b_}}, config);
  const std::vector<DeviceTensor> batch{upload(session_, x_), upload(session_, y_)};
  for (int s = 0; s < 3; ++s) {
    EXPECT_NEAR(derived.run(b, batch), given.run(a, batch), 1e-12);
    for (size_t i = 0; i < 2; ++i) {
      const std::vector<double> want = values(download(session_, given.gradients()[i]));
      const std::vector<double> got = values(download(session_, derived.gradients()[i]));
      for (size_t e = 0; e < want.size(); ++e)
        EXPECT_NEAR(got[e], want[e], 1e-12) << "step " << s << " gradient " << i;
    }
  }
  const std::vector<double> want = values(download(session_, a.params[0]));
  const std::vector<double> got = values(download(session_, b.params[0]));
  for (size_t e = 0; e < want.size(); ++e)
    EXPECT_NEAR(got[e], want[e], 1e-12);
}

TEST_F(TrainStepTest, StateHasTheOptimizersTensors) {
  EXPECT_EQ(OptimizerConfig::adamw(LrSchedule::constant(1)).state_names(), (std::vector<std::string>{"m", "v"}));
  EXPECT_EQ(OptimizerConfig::sgd(LrSchedule::constant(1), 0.9).state_names(), std::vector<std::string>{"momentum"});
  EXPECT_TRUE(OptimizerConfig::sgd(LrSchedule::constant(1)).state_names().empty());
  const TrainState s = make_train_state(session_, {{"W", w_}, {"b", b_}}, OptimizerConfig::adam(LrSchedule::constant(1)));
  ASSERT_EQ(s.optimizer_state.size(), 2u);
  ASSERT_EQ(s.optimizer_state[1].size(), 2u);
  EXPECT_EQ(s.optimizer_state[1][1].shape, std::vector<int64_t>{kOut});
  for (double v : values(download(session_, s.optimizer_state[0][0])))
    EXPECT_EQ(v, 0.0);
  EXPECT_EQ(s.step, 0);
}

TEST_F(TrainStepTest, KeepsGradientsAndTheNormBeforeClipping) {
  LinearModel model;
  TrainStepOptions options;
  options.keep_gradients = true;
  options.clip_norm = 1e-3; // clips: the kept gradients must still be the raw ones
  const OptimizerConfig config = OptimizerConfig::sgd(LrSchedule::constant(0.1));
  TrainStep step(session_, model.g, model.loss, {"W", "b"}, config, options, model.grads);
  TrainState state = make_train_state(session_, {{"W", w_}, {"b", b_}}, config);
  EXPECT_THAT([&] { step.gradients(); }, ::testing::Throws<UserError>());
  step.run(state, {upload(session_, x_), upload(session_, y_)});
  HostTraining host{values(x_), values(y_), {values(w_), values(b_)}, {}, config, {}, 0, {}};
  std::vector<std::vector<double>> want;
  host.loss_and_grads(want);
  double sq = 0;
  for (size_t i = 0; i < 2; ++i) {
    const std::vector<double> got = values(download(session_, step.gradients()[i]));
    ASSERT_EQ(got.size(), want[i].size());
    for (size_t e = 0; e < got.size(); ++e) {
      EXPECT_NEAR(got[e], want[i][e], 1e-12);
      sq += want[i][e] * want[i][e];
    }
  }
  ASSERT_TRUE(step.grad_norm().has_value());
  EXPECT_NEAR(*step.grad_norm(), std::sqrt(sq), 1e-12);
}

TEST_F(TrainStepTest, BadCallsAreUserErrorsAndChangeNothing) {
  LinearModel model;
  const OptimizerConfig config = OptimizerConfig::adamw(LrSchedule::constant(0.1));
  TrainStep step(session_, model.g, model.loss, {"W", "b"}, config, {}, model.grads);
  TrainState state = make_train_state(session_, {{"W", w_}, {"b", b_}}, config);
  const std::vector<double> before = values(download(session_, state.params[0]));
  auto message = [&](auto call) {
    try {
      call();
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(message([&] { step.run(state, {upload(session_, y_), upload(session_, y_)}); }),
              HasSubstr("batch tensor 0 is f64[4, 2] but the step was built for f64[4, 3]"));
  EXPECT_THAT(message([&] { step.run(state, {upload(session_, x_)}); }), HasSubstr("takes 2 batch tensors, got 1"));
  TrainState other = make_train_state(session_, {{"W", w_}, {"c", b_}}, config);
  EXPECT_THAT(message([&] { step.run(other, {upload(session_, x_), upload(session_, y_)}); }),
              HasSubstr("no parameter named 'b'"));
  EXPECT_EQ(values(download(session_, state.params[0])), before);
  EXPECT_EQ(state.step, 0);
  EXPECT_THAT(message([&] { TrainStep(session_, model.g, model.loss, {"W", "nope"}, config, {}, model.grads); }),
              HasSubstr("parameter 'nope' is not an input of the forward graph"));
  EXPECT_THAT(message([&] { TrainStep(session_, model.g, model.grads[0], {"W", "b"}, config, {}, model.grads); }),
              HasSubstr("the loss must be a single float value, got f64[3, 2]"));
  EXPECT_THAT(message([&] { make_train_state(session_, {{"W", w_}, {"W", b_}}, config); }),
              HasSubstr("parameter 'W' is given twice"));
  EXPECT_THAT(message([&] { OptimizerConfig::adamw(LrSchedule::constant(0.1), 1.0); }),
              HasSubstr("betas must be in [0, 1)"));
  EXPECT_THAT(message([&] { set_parameter(state, "b", upload(session_, w_)); }),
              HasSubstr("parameter 'b' is f64[2] but the new value is f64[3, 2]"));
}

} // namespace
} // namespace unitile::train
