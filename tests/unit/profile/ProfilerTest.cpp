// The profiler with the runtime: a Session records one event per launch only while a
// profiler is active, on the device's clock, with the launch's static cost; and the
// report files are written all or nothing.
#include "profile/Profiler.h"
#include "profile/OutputFile.h"

#include "ir/Parser.h"
#include "runtime/DeviceRegistry.h"
#include "runtime/Inputs.h"
#include "runtime/Session.h"
#include "schedule/Lower.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

namespace fs = std::filesystem;

namespace unitile::profile {
namespace {

using ::testing::HasSubstr;

constexpr const char* kSource = R"(
kernel MatMul {
  input:  f32[M,K] A, f32[K,N] B
  output: f32[M,N] C
  operation: C[i,j] += A[i,k] * B[k,j]
}
)";

Session sim_session() {
  return Session(
      open_device("sim", {std::string(UNITILE_PLUGIN_DIR) + "/libunitile-device-sim.so", ""}),
      std::make_shared<KernelCache>(std::nullopt));
}

TEST(Profiler, OnlyOneIsActiveAtATime) {
  Profiler a, b;
  EXPECT_EQ(active_profiler(), nullptr);
  a.start();
  EXPECT_EQ(active_profiler(), &a);
  a.start(); // starting the active one again is fine
  EXPECT_THROW(b.start(), UserError);
  a.stop();
  EXPECT_EQ(active_profiler(), nullptr);
  b.start();
  EXPECT_TRUE(b.active());
  { Profiler c; } // destroying an inactive profiler leaves the active one alone
  EXPECT_EQ(active_profiler(), &b);
  b.stop();
}

TEST(Profiler, DestroyingTheActiveProfilerStopsIt) {
  {
    Profiler p;
    p.start();
  }
  EXPECT_EQ(active_profiler(), nullptr);
}

TEST(Profiler, SessionRecordsEachLaunchOnlyWhileActive) {
  const Module m = parse_module(SourceFile{"p.ut", kSource});
  const Kernel& k = *m.find("MatMul");
  const ShapeBindings b = bind_shapes(k, {}, {{"M", 5}, {"K", 4}, {"N", 3}});
  Session s = sim_session();
  auto ck = s.compile(k, b, Schedule{}); // the plain lowering: one launch
  const auto inputs = complete_inputs(k, b, {}, 0);

  Profiler p;
  s.run(*ck, inputs, {}, 0);
  EXPECT_TRUE(p.events().empty()) << "not started: nothing recorded";

  p.start();
  s.run(*ck, inputs, {}, 2); // a run plus two timed repeats: three invocations
  p.stop();
  s.run(*ck, inputs, {}, 0);

  const std::vector<ProfileEvent> ev = p.events();
  ASSERT_EQ(ev.size(), 3 * ck->program.funcs.size());
  ASSERT_EQ(p.devices().size(), 1u);
  EXPECT_EQ(p.devices()[0].label, "sim-0");
  EXPECT_EQ(p.devices()[0].hcd.name, "sim");
  double last_end = 0;
  for (const ProfileEvent& e : ev) {
    EXPECT_EQ(e.name, "MatMul");
    EXPECT_EQ(e.shapes, "K=4,M=5,N=3");
    EXPECT_GT(e.duration_us, 0);
    EXPECT_GE(e.start_us, last_end) << "one in-order queue: launches do not overlap";
    last_end = e.start_us + e.duration_us;
  }
  double ops = 0;
  for (const ProfileEvent& e : ev)
    ops += e.operations.value_or(-1e9);
  EXPECT_EQ(ops, 3 * 2.0 * 5 * 4 * 3);
  EXPECT_EQ(ev.front().call + 2, ev.back().call);
  EXPECT_THAT(p.table(), HasSubstr("MatMul"));
  EXPECT_THAT(p.timeline(), HasSubstr("sim-0: MatMul(100%)"));

  p.clear();
  EXPECT_TRUE(p.events().empty());
  p.start();
  s.run(*ck, inputs, {}, 0);
  p.stop();
  EXPECT_EQ(p.events().size(), ck->program.funcs.size()) << "a cleared profiler records afresh";
}

class OutputFileTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fmt::format("unitile-profile-out-{}", ::getpid());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::vector<std::string> files() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_))
      out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
  fs::path dir_;
};

TEST_F(OutputFileTest, CommitWritesEveryFile) {
  StagedOutputs out;
  out.add((dir_ / "a.json").string(), "{}", "trace");
  out.add((dir_ / "b.html").string(), "<html>", "report");
  out.commit();
  EXPECT_EQ(files(), (std::vector<std::string>{"a.json", "b.html"}));
}

TEST_F(OutputFileTest, AFailureLeavesNoFileBehind) {
  {
    StagedOutputs out;
    out.add((dir_ / "a.json").string(), "{}", "trace");
    EXPECT_THROW(out.add((dir_ / "missing" / "b.html").string(), "<html>", "report"), UserError);
  }
  EXPECT_TRUE(files().empty());
}

TEST_F(OutputFileTest, UnwritablePathsAreClearErrors) {
  try {
    check_writable((dir_ / "no" / "t.json").string(), "--trace");
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), HasSubstr("does not exist"));
  }
  try {
    check_writable(dir_.string(), "--trace");
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), HasSubstr("is a folder"));
  }
}

} // namespace
} // namespace unitile::profile
