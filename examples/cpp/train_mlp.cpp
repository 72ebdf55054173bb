// The C++ training API end to end: a two-layer MLP regression written as a graph of
// library ops, its parameters, AdamW under a warm-up + cosine schedule with a parameter
// group (no weight decay on the biases), clipping by the global norm, and the compiled
// step run for --steps updates. With --check the example checks itself: the first
// step's derived gradients against central finite differences of the forward graph
// (f64), and the loss falling to under a quarter of the first.
//
//   build/bin/example_train_mlp --steps 60 --device cpu --check
#include "graph/Executor.h"
#include "graph/Graph.h"
#include "ir/Diagnostic.h"
#include "runtime/DeviceRegistry.h"
#include "runtime/KernelCache.h"
#include "train/TrainStep.h"

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace ut = unitile;
namespace train = unitile::train;
using ut::graph::ValueId;

namespace {

constexpr int64_t kRows = 64, kIn = 3, kHidden = 16;

ut::Tensor random_tensor(std::vector<int64_t> shape, double scale, std::mt19937& rng) {
  std::normal_distribution<double> normal(0, scale);
  ut::Tensor t = ut::Tensor::zeros(ut::DType::F64, std::move(shape));
  for (size_t i = 0; i < t.numel(); ++i)
    t.set(i, normal(rng));
  return t;
}

// loss = mean((tanh(X @ W1 + b1) @ W2 + b2 - Y)^2); inputs X, Y, then the parameters.
struct Model {
  ut::graph::Graph g;
  ValueId loss = -1;
  std::vector<std::string> params{"W1", "b1", "W2", "b2"};

  Model() {
    auto input = [&](const std::string& name, std::vector<int64_t> shape) {
      return g.add_input(name, ut::ops::TensorSpec{ut::DType::F64, std::move(shape)});
    };
    const ValueId x = input("X", {kRows, kIn}), y = input("Y", {kRows, 1});
    const ValueId w1 = input("W1", {kIn, kHidden}), b1 = input("b1", {kHidden});
    const ValueId w2 = input("W2", {kHidden, 1}), b2 = input("b2", {1});
    auto op = [&](const std::string& name, std::vector<ValueId> in, ut::ops::Attrs attrs = {}) {
      return g.add_node(name, in, attrs, "examples/cpp/train_mlp.cpp").front();
    };
    const ValueId h = op("tanh", {op("add", {op("matmul", {x, w1}), b1})});
    const ValueId diff = op("sub", {op("add", {op("matmul", {h, w2}), b2}), y});
    loss = op("reduce_mean", {op("mul", {diff, diff})},
              {{"axes", std::vector<int64_t>{}}, {"keepdims", int64_t{0}}});
    g.set_outputs({loss});
  }
};

// The loss of the forward graph alone at these parameter values (host tensors).
double forward_loss(ut::graph::GraphExecutor& forward, ut::Session& session,
                    const std::vector<ut::Tensor>& inputs) {
  std::vector<ut::DeviceTensor> device;
  for (const ut::Tensor& t : inputs)
    device.push_back(train::upload(session, t));
  return train::download(session, forward.run(device)[0]).get(0);
}

// The worst |derived - central difference| / (1e-7 + 1e-5 |fd|) over every parameter
// element: at most 1 passes.
double gradient_error(ut::Session& session, const Model& model, std::vector<ut::Tensor> inputs,
                      const std::vector<ut::DeviceTensor>& gradients) {
  ut::graph::GraphExecutor forward(session, model.g);
  const double eps = 1e-6;
  double worst = 0;
  for (size_t p = 0; p < model.params.size(); ++p) {
    const ut::Tensor derived = train::download(session, gradients[p]);
    ut::Tensor& value = inputs[2 + p];
    for (size_t e = 0; e < value.numel(); ++e) {
      const double v = value.get(e);
      value.set(e, v + eps);
      const double up = forward_loss(forward, session, inputs);
      value.set(e, v - eps);
      const double down = forward_loss(forward, session, inputs);
      value.set(e, v);
      const double fd = (up - down) / (2 * eps);
      worst = std::max(worst, std::abs(derived.get(e) - fd) / (1e-7 + 1e-5 * std::abs(fd)));
    }
  }
  return worst;
}

int run(int steps, const std::string& device, bool check) {
  ut::Session session(ut::open_device(device),
                      std::make_shared<ut::KernelCache>(ut::KernelCache::default_dir()));

  // Data: y = sin(x0) + x1 * x2 / 2 plus a little noise.
  std::mt19937 rng(11);
  const ut::Tensor x = random_tensor({kRows, kIn}, 1.0, rng);
  ut::Tensor y = random_tensor({kRows, 1}, 0.01, rng);
  for (int64_t r = 0; r < kRows; ++r)
    y.set(r, y.get(r) + std::sin(x.get(r * kIn)) + 0.5 * x.get(r * kIn + 1) * x.get(r * kIn + 2));
  const std::vector<train::Parameter> params{{"W1", random_tensor({kIn, kHidden}, 0.5, rng)},
                                             {"b1", ut::Tensor::zeros(ut::DType::F64, {kHidden})},
                                             {"W2", random_tensor({kHidden, 1}, 0.25, rng)},
                                             {"b2", ut::Tensor::zeros(ut::DType::F64, {1})}};

  // AdamW with decoupled weight decay 0.01 under warm-up + cosine; the biases in a group
  // of their own without decay; gradients clipped to a global norm of 1.
  const auto schedule = train::LrSchedule::warmup_cosine(0.05, std::min(5, steps), steps, 0.005);
  const auto adamw = train::OptimizerConfig::adamw(schedule, 0.9, 0.999, 1e-8, 0.01);
  train::TrainStepOptions options;
  options.clip_norm = 1.0;
  options.keep_gradients = check;
  options.param_groups.push_back(
      {{"b1", "b2"}, train::OptimizerConfig::adamw(schedule, 0.9, 0.999, 1e-8, 0.0)});
  options.where = "examples/cpp/train_mlp.cpp";

  Model model;
  train::TrainStep step(session, model.g, model.loss, model.params, adamw, options);
  train::TrainState state = train::make_train_state(session, params, adamw, options.param_groups);
  const std::vector<ut::DeviceTensor> batch{train::upload(session, x), train::upload(session, y)};

  double first = 0, last = 0;
  bool ok = true;
  for (int s = 0; s < steps; ++s) {
    last = step.run(state, batch);
    fmt::print("step {} loss {:.6f} lr {:.5f}{}\n", s, last, schedule.at(s),
               step.grad_norm() ? fmt::format(" grad_norm {:.4f}", *step.grad_norm()) : "");
    if (s == 0) {
      first = last;
      if (check) {
        std::vector<ut::Tensor> inputs{x, y};
        for (const train::Parameter& p : params)
          inputs.push_back(p.initial);
        const double error = gradient_error(session, model, inputs, step.gradients());
        fmt::print("check: gradients of step 0 against central differences: worst {:.3g} of the "
                   "tolerance\n",
                   error);
        ok = ok && error <= 1;
      }
    }
  }
  fmt::print("trained {} steps on {}: loss {:.6f} -> {:.6f}\n", steps, device, first, last);
  if (check && !(last < first / 4)) {
    fmt::print("check: the loss did not fall to under a quarter of the first\n");
    ok = false;
  }
  if (check)
    fmt::print("check: {}\n", ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"Train a small MLP with Unitile's C++ training API"};
  int steps = 100;
  std::string device = "cpu";
  bool check = false;
  app.add_option("--steps", steps, "number of updates")->check(CLI::Range(1, 1000000));
  app.add_option("--device", device, "device to train on");
  app.add_flag("--check", check,
               "check the gradients against finite differences and that the loss falls");
  CLI11_PARSE(app, argc, argv);
  try {
    return run(steps, device, check);
  } catch (const ut::UserError& e) {
    fmt::print(stderr, "{}\n", e.what());
    return 1;
  }
}
