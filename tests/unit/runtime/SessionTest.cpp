// The executor on a fake device (built at test time): compiling goes through the kernel
// cache (a second compile compiles nothing), runs check their inputs and params, and
// --repeat timing gives one sample per run.
#include "FakePlugins.h"

#include "ir/Parser.h"
#include "runtime/DeviceRegistry.h"
#include "runtime/Inputs.h"
#include "runtime/Session.h"
#include "schedule/Lower.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <dlfcn.h>

namespace fs = std::filesystem;

namespace unitile {
namespace {

using ::testing::HasSubstr;
using testing::build_c_plugin;
using testing::fake_device_source;
using testing::TempDir;

constexpr const char* kSource = R"(
kernel MatMul {
  input:  f32[M,K] A, f32[K,N] B
  output: f32[M,N] C
  operation: C[i,j] += A[i,k] * B[k,j]
}
kernel Scale {
  input:  f64[N] X
  output: f64[N] Y
  param:  f64 alpha
  operation: Y[i] = X[i] * alpha
}
)";

class SessionTest : public ::testing::Test {
protected:
  void SetUp() override {
    plugin_ = build_c_plugin(dir_.path(), "fakesession", fake_device_source("fakesession"));
    ASSERT_FALSE(plugin_.empty());
    module_ = parse_module(SourceFile{"test.ut", kSource});
  }
  // The fake plugin's own counters, through the handle dlopen already holds.
  int plugin_counter(const char* fn) const {
    void* h = dlopen(plugin_.c_str(), RTLD_NOW | RTLD_NOLOAD);
    if (!h) return -1;
    auto f = reinterpret_cast<int (*)()>(dlsym(h, fn));
    int v = f ? f() : -1;
    dlclose(h);
    return v;
  }
  Session session() {
    return Session(open_device("fakesession", {plugin_.string(), ""}),
                   std::make_shared<KernelCache>(dir_.path() / "cache", [](const std::string&) {}));
  }
  std::string user_error_of(const std::function<void()>& f) {
    try {
      f();
    } catch (const UserError& e) {
      return e.what();
    }
    return "(no UserError)";
  }

  TempDir dir_{"session"};
  fs::path plugin_;
  Module module_;
};

TEST_F(SessionTest, SecondCompileOfTheSameKernelCompilesNothing) {
  const Kernel& k = *module_.find("MatMul");
  const ShapeBindings b = bind_shapes(k, {}, {{"M", 4}, {"K", 3}, {"N", 5}});
  {
    Session s = session();
    ASSERT_EQ(plugin_counter("fake_compile_count"), 0) << "each test builds its own fake plugin";
    auto first = s.compile(k, b);
    EXPECT_EQ(plugin_counter("fake_compile_count"), 1);
    auto second = s.compile(k, b);
    EXPECT_EQ(plugin_counter("fake_compile_count"), 1);
    EXPECT_EQ(first->key, second->key);
    EXPECT_EQ(first->entries.size(), first->program.funcs.size());
    EXPECT_EQ(first->source.dialect, "loopir");
  }
  // A fresh session (as in a new process) loads the binary from the disk cache.
  Session again = session();
  again.compile(k, b);
  EXPECT_EQ(plugin_counter("fake_compile_count"), 1);
  EXPECT_EQ(again.cache().stats().disk_hits, 1);
  // Other shapes are another kernel.
  again.compile(k, bind_shapes(k, {}, {{"M", 4}, {"K", 3}, {"N", 6}}));
  EXPECT_EQ(plugin_counter("fake_compile_count"), 2);
}

TEST_F(SessionTest, RunLaunchesEveryFuncAndTimesRepeats) {
  const Kernel& k = *module_.find("MatMul");
  const ShapeBindings b = bind_shapes(k, {}, {{"M", 4}, {"K", 3}, {"N", 5}});
  Session s = session();
  auto ck = s.compile(k, b);
  const auto inputs = complete_inputs(k, b, {}, 0);
  const int before = plugin_counter("fake_launch_count");
  RunResult r = s.run(*ck, inputs, {}, 4);
  const int funcs = static_cast<int>(ck->program.funcs.size());
  EXPECT_EQ(plugin_counter("fake_launch_count"), before + funcs * 5) << "one warm-up and four timed runs";
  ASSERT_TRUE(r.timing);
  EXPECT_EQ(r.timing->samples_ms.size(), 4u);
  EXPECT_LE(r.timing->min_ms, r.timing->median_ms);
  ASSERT_EQ(r.outputs.count("C"), 1u);
  EXPECT_EQ(r.outputs.at("C").shape, (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(r.outputs.at("C").dtype, DType::F32);
}

TEST_F(SessionTest, RunChecksInputsAndParams) {
  const Kernel& k = *module_.find("MatMul");
  const ShapeBindings b = bind_shapes(k, {}, {{"M", 4}, {"K", 3}, {"N", 5}});
  Session s = session();
  auto ck = s.compile(k, b);
  auto inputs = complete_inputs(k, b, {}, 0);
  inputs["A"] = random_tensor(DType::F32, {4, 2}, 0);
  EXPECT_EQ(user_error_of([&] { s.run(*ck, inputs, {}); }), "error: input 'A': expected f32[4, 3], got f32[4, 2]");
  inputs["A"] = random_tensor(DType::F64, {4, 3}, 0);
  EXPECT_EQ(user_error_of([&] { s.run(*ck, inputs, {}); }), "error: input 'A': expected f32[4, 3], got f64[4, 3]");
  inputs.erase("A");
  EXPECT_THAT(user_error_of([&] { s.run(*ck, inputs, {}); }), HasSubstr("no value for input 'A'"));

  const Kernel& scale = *module_.find("Scale");
  const ShapeBindings sb = bind_shapes(scale, {}, {{"N", 8}});
  auto sck = s.compile(scale, sb);
  const auto sin = complete_inputs(scale, sb, {}, 0);
  EXPECT_THAT(user_error_of([&] { s.run(*sck, sin, {}); }),
              HasSubstr("param 'alpha' (f64) has no value; pass --param alpha=VALUE"));
  EXPECT_NO_THROW(s.run(*sck, sin, {{"alpha", 2.0}}));
}

TEST_F(SessionTest, CompileFailureCarriesTheVendorLog) {
  // The fake compiler rejects any source that mentions FAKE_REJECT: name a tensor so.
  Module m = parse_module(SourceFile{"r.ut", R"(
kernel Reject {
  input:  f32[N] FAKE_REJECT
  output: f32[N] Y
  operation: Y[i] = FAKE_REJECT[i]
})"});
  Session s = session();
  const Kernel& k = m.kernels[0];
  EXPECT_THAT(user_error_of([&] { s.compile(k, bind_shapes(k, {}, {{"N", 2}})); }),
              HasSubstr("fake.c:1:1: error: rejected on purpose"));
  EXPECT_EQ(s.cache().stats().compiles, 0) << "a failed compile caches nothing";
}

TEST(Timing, MedianAndMin) {
  Timing t = summarize_timing({3, 1, 2});
  EXPECT_EQ(t.median_ms, 2);
  EXPECT_EQ(t.min_ms, 1);
  t = summarize_timing({4, 1, 3, 2});
  EXPECT_EQ(t.median_ms, 2.5);
  EXPECT_EQ(t.samples_ms, (std::vector<double>{4, 1, 3, 2}));
}

TEST(Inputs, SpecialisationParamsAreIntegerParamsInIndices) {
  Module m = parse_module(SourceFile{"s.ut", R"(
kernel Shift {
  input:  f32[N] X
  output: f32[N] Y
  param:  i32 s, f32 gain, i32 unused
  operation: Y[i] = (X[i + s] ?? 0) * gain
})"});
  EXPECT_EQ(specialisation_params(m.kernels[0]), (std::vector<std::string>{"s"}));
}

} // namespace
} // namespace unitile
