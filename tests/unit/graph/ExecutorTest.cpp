// The graph executor on real devices (cpu, sim, opencl where it can run): fused and
// unfused runs against a host reference written out here, the memory plan's reuse, and
// outputs that the caller owns.
#include "graph/Executor.h"
#include "graph/GraphText.h"
#include "ir/Diagnostic.h"
#include "runtime/DeviceRegistry.h"
#include "runtime/KernelCache.h"

#include <gtest/gtest.h>

#include <cmath>

namespace unitile::graph {
namespace {

constexpr const char* kMlp = R"(graph mlp(x: f32[4, 8], w1: f32[8, 16], b1: f32[16], w2: f32[16, 6]) {
  %0 = matmul(x, w1)
  %1 = add(%0, b1)
  %2 = relu(%1)
  %3 = matmul(%2, w2)
  %4 = softmax(%3) {axis = 1}
  %5 = reduce_sum(%2) {axes = [1], keepdims = false}
  return %4, %5
}
)";

// softmax written out as its row chain, then layernorm with a scale, then gelu.
constexpr const char* kNormChain = R"(graph norms(x: f32[6, 32], s: f32[32]) {
  %m = reduce_max(x) {axes = [1], keepdims = true}
  %d = sub(x, %m)
  %e = exp(%d)
  %z = reduce_sum(%e) {axes = [1], keepdims = true}
  %p = div(%e, %z)
  %y = layernorm(%p, s) {axis = -1, epsilon = 1e-05}
  %g = gelu(%y)
  %h = mul(%g, %g)
  %k = add(%h, %p)
  return %k, %p
}
)";

Graph parse(const char* text) { return parse_graph(SourceFile{"<test>", text}).graph; }

std::vector<float> pattern(size_t n, float scale, float shift) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = std::sin(static_cast<float>(i) * scale + shift);
  return v;
}

struct Fixture {
  Session session;
  DeviceTensor upload(const std::vector<float>& data, std::vector<int64_t> shape) {
    const Device& dev = session.device();
    auto b = std::make_shared<DeviceBuffer>(dev.alloc(data.size() * 4));
    dev.copy_in(*b, data.data(), data.size() * 4);
    return DeviceTensor{DType::F32, std::move(shape), std::move(b)};
  }
  std::vector<float> download(const DeviceTensor& t) {
    std::vector<float> out(t.numel());
    session.device().copy_out(out.data(), *t.buffer, out.size() * 4);
    return out;
  }
};

std::vector<std::string> devices_here() {
  std::vector<std::string> out;
  for (const DeviceListing& l : list_devices())
    if ((l.name == "cpu" || l.name == "sim" || l.name == "opencl") && l.error.empty() && l.unavailable.empty())
      out.push_back(l.name);
  return out;
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want, float tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], tol) << what << " at " << i;
}

class ExecutorTest : public ::testing::TestWithParam<std::string> {
protected:
  Fixture fx{Session(open_device(GetParam()), std::make_shared<KernelCache>(KernelCache::default_dir()))};
};

TEST_P(ExecutorTest, MlpFusedAndUnfusedMatchTheHostReference) {
  const auto x = pattern(4 * 8, 0.37f, 0.1f), w1 = pattern(8 * 16, 0.11f, 0.5f), b1 = pattern(16, 0.7f, 0.2f),
             w2 = pattern(16 * 6, 0.23f, 0.9f);
  // Host reference.
  std::vector<float> h(4 * 16), sm(4 * 6), rs(4, 0);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 16; ++j) {
      float acc = 0;
      for (int k = 0; k < 8; ++k) acc += x[i * 8 + k] * w1[k * 16 + j];
      h[i * 16 + j] = std::max(0.0f, acc + b1[j]);
      rs[i] += h[i * 16 + j];
    }
  for (int i = 0; i < 4; ++i) {
    std::vector<float> logits(6);
    float mx = -INFINITY, sum = 0;
    for (int j = 0; j < 6; ++j) {
      for (int k = 0; k < 16; ++k) logits[j] += h[i * 16 + k] * w2[k * 6 + j];
      mx = std::max(mx, logits[j]);
    }
    for (int j = 0; j < 6; ++j) sum += std::exp(logits[j] - mx);
    for (int j = 0; j < 6; ++j) sm[i * 6 + j] = std::exp(logits[j] - mx) / sum;
  }
  const std::vector<DeviceTensor> in{fx.upload(x, {4, 8}), fx.upload(w1, {8, 16}), fx.upload(b1, {16}),
                                     fx.upload(w2, {16, 6})};
  for (bool fuse : {true, false}) {
    GraphExecutor exec(fx.session, parse(kMlp), ExecutorOptions{fuse, true, 16, "mlp"});
    if (fuse) {
      EXPECT_EQ(exec.kernel_count(), 4u) << exec.describe(); // matmul+add+relu, matmul, softmax, reduce_sum
    } else {
      EXPECT_EQ(exec.kernel_count(), 6u);
      EXPECT_LT(exec.memory_plan().peak_bytes, exec.memory_plan().no_reuse_bytes) << exec.describe();
    }
    const std::vector<DeviceTensor> out = exec.run(in);
    ASSERT_EQ(out.size(), 2u);
    expect_near(fx.download(out[0]), sm, 1e-5f, fuse ? "fused softmax" : "unfused softmax");
    expect_near(fx.download(out[1]), rs, 1e-4f, fuse ? "fused row sums" : "unfused row sums");
  }
}

TEST_P(ExecutorTest, NormChainFusesIntoOneKernelAndMatchesUnfused) {
  const auto x = pattern(6 * 32, 0.31f, 0.3f), s = pattern(32, 0.9f, 1.1f);
  const std::vector<DeviceTensor> in{fx.upload(x, {6, 32}), fx.upload(s, {32})};
  GraphExecutor fused(fx.session, parse(kNormChain), ExecutorOptions{true, true, 16, "norms"});
  GraphExecutor unfused(fx.session, parse(kNormChain), ExecutorOptions{false, true, 16, "norms"});
  EXPECT_EQ(fused.kernel_count(), 1u) << fused.describe();
  EXPECT_EQ(unfused.kernel_count(), 9u);
  EXPECT_LT(unfused.memory_plan().peak_bytes, unfused.memory_plan().no_reuse_bytes) << unfused.describe();
  const auto a = fused.run(in), b = unfused.run(in);
  ASSERT_EQ(a.size(), 2u);
  for (size_t i = 0; i < 2; ++i) expect_near(fx.download(a[i]), fx.download(b[i]), 1e-5f, "fused vs unfused");
  // Host reference of the softmax output.
  const std::vector<float> p = fx.download(a[1]);
  for (int r = 0; r < 6; ++r) {
    float mx = -INFINITY, sum = 0;
    for (int c = 0; c < 32; ++c) mx = std::max(mx, x[r * 32 + c]);
    for (int c = 0; c < 32; ++c) sum += std::exp(x[r * 32 + c] - mx);
    for (int c = 0; c < 32; ++c) ASSERT_NEAR(p[r * 32 + c], std::exp(x[r * 32 + c] - mx) / sum, 1e-6f);
  }
}

TEST_P(ExecutorTest, OutputsAreFreshAndPlannedBuffersSurviveRepeatedRuns) {
  // A chain long enough that planned buffers are reused; its output fed back in.
  Graph g = parse(R"(graph chain(x: f32[64]) {
  %0 = exp(x)
  %1 = reduce_sum(%0) {axes = [0], keepdims = true}
  %2 = div(%0, %1)
  %3 = sqrt(%2)
  %4 = reduce_sum(%3) {axes = [0], keepdims = true}
  %5 = div(%3, %4)
  return %5, x
}
)");
  GraphExecutor exec(fx.session, g, ExecutorOptions{false, true, 16, "chain"});
  EXPECT_LT(exec.memory_plan().peak_bytes, exec.memory_plan().no_reuse_bytes);
  std::vector<float> x = pattern(64, 0.2f, 0.0f);
  DeviceTensor cur = fx.upload(x, {64});
  for (int step = 0; step < 3; ++step) {
    std::vector<float> want(64);
    float s1 = 0, s2 = 0;
    for (float v : x) s1 += std::exp(v);
    for (size_t i = 0; i < 64; ++i) s2 += std::sqrt(std::exp(x[i]) / s1);
    for (size_t i = 0; i < 64; ++i) want[i] = std::sqrt(std::exp(x[i]) / s1) / s2;
    const std::vector<DeviceTensor> out = exec.run({cur});
    ASSERT_EQ(out.size(), 2u);
    EXPECT_NE(out[1].buffer, cur.buffer) << "a returned input must be a fresh copy";
    expect_near(fx.download(out[1]), x, 0, "returned input");
    expect_near(fx.download(out[0]), want, 1e-6f, "step " + std::to_string(step));
    cur = out[0];
    x = fx.download(cur);
  }
}

TEST_P(ExecutorTest, WrongInputsAreUserErrors) {
  GraphExecutor exec(fx.session, parse(kMlp), ExecutorOptions{true, true, 16, "mlp"}); // the kernels compiled above
  EXPECT_THROW(exec.run({}), UserError);
  std::vector<DeviceTensor> in{fx.upload(pattern(32, 1, 0), {8, 4}), fx.upload(pattern(128, 1, 0), {8, 16}),
                               fx.upload(pattern(16, 1, 0), {16}), fx.upload(pattern(96, 1, 0), {16, 6})};
  try {
    exec.run(in);
    FAIL() << "a wrong shape ran";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("input 'x' must be f32[4, 8] but is f32[8, 4]"), std::string::npos)
        << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, ExecutorTest, ::testing::ValuesIn(devices_here()),
                         [](const auto& info) { return info.param; });

} // namespace
} // namespace unitile::graph
