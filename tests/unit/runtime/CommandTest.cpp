// The `unitile` binary as other tools see it: concurrent processes sharing one cache,
// corrupt entries rebuilt, a failed --check, and the exit status of each kind of error.
#include "FakePlugins.h"

#include "runtime/KernelCache.h"

#include <fmt/core.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sys/wait.h>

namespace fs = std::filesystem;

namespace unitile {
namespace {

using ::testing::HasSubstr;
using testing::build_c_plugin;
using testing::fake_device_source;
using testing::TempDir;

struct CommandResult {
  int status = -1;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {(std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()};
}

class CommandTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::ofstream(dir_.path() / "mm.ut") << "kernel MatMul {\n  input: f32[M,K] A, f32[K,N] B\n"
                                            "  output: f32[M,N] C\n  operation: C[i,j] += A[i,k] * B[k,j]\n}\n";
  }
  // Run `unitile ARGS` with the cache in `cache`; stdout and stderr captured.
  CommandResult unitile(const std::string& args, const std::string& env = "") {
    const fs::path out = dir_.path() / "out.txt", err = dir_.path() / "err.txt";
    const std::string cmd = fmt::format("{} UNITILE_CACHE_DIR='{}' '{}/unitile' {} >'{}' 2>'{}'", env, cache_.string(),
                                        UNITILE_BIN_DIR, args, out.string(), err.string());
    const int raw = std::system(cmd.c_str());
    return {WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, slurp(out), slurp(err)};
  }
  std::string ut() const { return (dir_.path() / "mm.ut").string(); }
  std::vector<fs::path> entries() const {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(cache_ / "kernels")) out.push_back(e.path());
    return out;
  }

  TempDir dir_{"command"};
  fs::path cache_ = dir_.path() / "cache";
};

TEST_F(CommandTest, TwoProcessesCompilingTheSameKernelBothSucceedWithOneEntry) {
  const std::string run = fmt::format("'{}/unitile' run '{}' --device cpu --shape M=33,K=17,N=9", UNITILE_BIN_DIR, ut());
  const fs::path d = dir_.path();
  const std::string cmd = fmt::format(
      "cd '{0}' && export UNITILE_CACHE_DIR='{1}' && ({2} >o1 2>e1; echo $? >rc1) & "
      "(cd '{0}' && export UNITILE_CACHE_DIR='{1}' && {2} >o2 2>e2; echo $? >rc2) & wait",
      d.string(), cache_.string(), run);
  ASSERT_EQ(std::system(("sh -c \"" + cmd + "\"").c_str()), 0);
  EXPECT_EQ(slurp(d / "rc1"), "0\n") << slurp(d / "e1");
  EXPECT_EQ(slurp(d / "rc2"), "0\n") << slurp(d / "e2");
  const auto files = entries();
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].extension(), ".bin");
  std::string why;
  const std::string bytes = slurp(files[0]);
  EXPECT_TRUE(decode_cache_entry({bytes.begin(), bytes.end()}, &why)) << why;
}

TEST_F(CommandTest, CorruptEntryIsReportedAndRebuilt) {
  ASSERT_EQ(unitile("run " + ut() + " --device cpu --shape M=4,K=4,N=4").status, 0);
  const auto files = entries();
  ASSERT_EQ(files.size(), 1u);
  fs::resize_file(files[0], fs::file_size(files[0]) / 2);
  CommandResult r = unitile("run " + ut() + " --device cpu --shape M=4,K=4,N=4 --check");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("unitile: note: rebuilding corrupt cache entry " + files[0].string()));
  EXPECT_THAT(r.out, HasSubstr("check: ok"));
  std::string why;
  const std::string bytes = slurp(files[0]);
  EXPECT_TRUE(decode_cache_entry({bytes.begin(), bytes.end()}, &why)) << why;
}

TEST_F(CommandTest, UnusableCacheDirectoryOnlyCostsANote) {
  std::ofstream(dir_.path() / "file") << "x";
  cache_ = dir_.path() / "file"; // a regular file: kernels/ cannot be created under it
  CommandResult r = unitile("run " + ut() + " --device cpu --shape M=4,K=4,N=4 --check");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("continuing without a disk cache"));
  EXPECT_THAT(r.out, HasSubstr("check: ok"));
}

TEST_F(CommandTest, FailedCheckNamesTheFirstBadElementAndExitsOne) {
  // The fake device never computes anything, so its C stays zero while sim's does not.
  const fs::path so = build_c_plugin(dir_.path(), "lazy", fake_device_source("lazy"));
  ASSERT_FALSE(so.empty());
  CommandResult r =
      unitile(fmt::format("run {} --device lazy --device-plugin '{}' --shape M=3,K=5,N=2 --check", ut(), so.string()));
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.out, HasSubstr("check: FAILED C at [0, 0]: got 0, expected "));
  EXPECT_THAT(r.out, HasSubstr("6 of 6 elements outside tolerance)"));
}

TEST_F(CommandTest, InternalErrorsExitTwo) {
  const fs::path so = build_c_plugin(dir_.path(), "broken", fake_device_source("broken"));
  ASSERT_FALSE(so.empty());
  CommandResult r = unitile(fmt::format("run {} --device-plugin '{}' --device broken --shape M=1,K=1,N=1", ut(),
                                        so.string()),
                            "FAKE_LAUNCH_INTERNAL=1");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("fake internal failure"));
}

TEST_F(CommandTest, UserErrorsExitOne) {
  EXPECT_EQ(unitile("run " + ut() + " --device cpu --shape M=1").status, 1);
  EXPECT_EQ(unitile("run " + ut() + " --device no-such-device --shape M=1,K=1,N=1").status, 1);
  EXPECT_EQ(unitile("run --not-a-flag").status, 1);
  EXPECT_EQ(unitile("run --help").status, 0);
}

} // namespace
} // namespace unitile
