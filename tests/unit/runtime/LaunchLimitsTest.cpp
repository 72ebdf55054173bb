// The HCD's launch limits: blocks, threads per block, grid and shared memory are checked
// per func before compiling, with a message naming the func, the limit and the HCD.
#include "runtime/LaunchLimits.h"

#include "ir/Diagnostic.h"
#include "ir/Parser.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace unitile {
namespace {

using ::testing::HasSubstr;

// A grid of G blocks of T threads staging a tile of S floats in shared memory.
LoopProgram staged(int g, int t, int s) {
  std::string text = "program P {\n  buffer X: f32[" + std::to_string(s) +
                     "] input\n  buffer Y: f32[" + std::to_string(s) +
                     "] output\n  func P_0 {\n    for b in 0.." + std::to_string(g) +
                     " grid.x {\n      allocate tile: f32[" + std::to_string(s) +
                     "] shared {\n        for t in 0.." + std::to_string(t) +
                     " thread.x {\n          tile[t] = X[t]\n          barrier\n          Y[t] = "
                     "tile[0]\n        }\n      }\n    }\n  }\n}\n";
  return parse_loop_program(SourceFile{"staged.loop", text});
}

hcd::Hcd gpu_like() {
  hcd::Hcd h;
  h.name = "test-gpu";
  h.source = "test.toml";
  h.max_threads_per_block = 256;
  h.max_block = {128, 128, 64};
  h.max_grid = {1000, 65535, 65535};
  h.shared_memory_per_block = 1024;
  return h;
}

std::string refusal(const LoopProgram& p, const hcd::Hcd& h) {
  const LoopFunc& f = p.funcs.at(0);
  try {
    check_launch_limits(p.kernel, f, launch_dims(f), h);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(LaunchLimits, ThreadLoopsUnderAllocationsSetTheBlock) {
  LoopProgram p = staged(4, 64, 64);
  LaunchDims d = launch_dims(p.funcs[0]);
  EXPECT_EQ(d.grid[0], 4u);
  EXPECT_EQ(d.block[0], 64u);
  EXPECT_EQ(shared_bytes(p.funcs[0]), 256);
}

TEST(LaunchLimits, AFittingLaunchPasses) {
  EXPECT_EQ(refusal(staged(4, 64, 64), gpu_like()), "");
}

TEST(LaunchLimits, EachLimitIsNamed) {
  hcd::Hcd h = gpu_like();
  EXPECT_THAT(refusal(staged(4, 200, 200), h),
              HasSubstr("kernel P (func P_0) does not fit device 'test-gpu' (HCD test.toml): "
                        "thread.x has 200 threads per block; [limits] max_block allows 128"));
  h.max_block = {1024, 1, 1};
  EXPECT_THAT(refusal(staged(4, 512, 200), h),
              HasSubstr("a block of 512 x 1 x 1 = 512 threads; [compute] max_threads_per_block "
                        "allows 256"));
  EXPECT_THAT(refusal(staged(2000, 8, 8), h),
              HasSubstr("grid.x has 2000 blocks; [limits] max_grid allows 1000"));
  EXPECT_THAT(refusal(staged(4, 8, 512), h),
              HasSubstr("2048 bytes of shared allocations; [limits] shared_memory_per_block "
                        "allows 1024"));
}

} // namespace
} // namespace unitile
