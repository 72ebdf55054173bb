// Every built-in device loads, validates and carries the numbers the other layers use.
#include "hcd/Hcd.h"
#include "ir/Diagnostic.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

namespace unitile::hcd {
namespace {

using ::testing::HasSubstr;

TEST(HcdBuiltin, NamesCoverTheDevicesFolderAndTheHost) {
  std::vector<std::string> names = builtin_names();
  for (const char* expected : {"host-cpu", "sim", "pocl", "nvidia-h100", "nvidia-h200",
                               "aarch64-neon", "riscv64-rvv", "virtual-npu"})
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
}

TEST(HcdBuiltin, EveryBuiltinLoadsAndIsConsistent) {
  for (const auto& name : builtin_names()) {
    SCOPED_TRACE(name);
    Hcd h = builtin(name);
    EXPECT_EQ(h.name, name); // the builtin name is the file's stem and the device's name
    EXPECT_FALSE(h.plugin.empty());
    EXPECT_GE(h.units, 1);
    EXPECT_GE(h.vector_bits, 8);
    ASSERT_FALSE(h.memory.empty());
    for (const auto& level : h.memory) {
      EXPECT_GT(level.size_bytes, 0) << level.name;
      EXPECT_EQ(h.level(level.name), &level);
    }
    EXPECT_EQ(h.source, name == "host-cpu" ? "detected" : "builtin:" + name);
    for (DType t : {DType::F16, DType::F32, DType::F64}) EXPECT_GE(h.lanes_for(t), 1);
  }
}

TEST(HcdBuiltin, SimIsTheLoopIrReferenceDevice) {
  Hcd h = builtin("sim");
  EXPECT_EQ(h.plugin, "sim");
  EXPECT_EQ(h.dialect, "loopir");
  EXPECT_EQ(h.kind, DeviceKind::Cpu);
  EXPECT_EQ(h.units, 4);
  EXPECT_EQ(h.lanes_for(DType::F32), 8);  // 256-bit vectors
  EXPECT_EQ(h.lanes_for(DType::F64), 4);
  EXPECT_EQ(h.lanes_for(DType::I8), 32);
  ASSERT_NE(h.level("L1"), nullptr);
  EXPECT_EQ(h.level("L1")->size_bytes, 32 * 1024);
  EXPECT_EQ(h.level("L3"), nullptr);
  EXPECT_EQ(h.memory.back().name, "DRAM");
}

TEST(HcdBuiltin, NvidiaH200MatchesPublicSpecs) {
  Hcd h = builtin("nvidia-h200");
  EXPECT_EQ(h.kind, DeviceKind::Gpu);
  EXPECT_EQ(h.plugin, "cuda");
  EXPECT_EQ(h.dialect, "cuda");
  EXPECT_EQ(h.units, 132);
  EXPECT_EQ(h.warp_size, 32);
  EXPECT_EQ(h.max_threads_per_block, 1024);
  EXPECT_EQ(h.shared_memory_per_block, 227 * 1024);
  EXPECT_EQ(h.level("shared")->size_bytes, 228 * 1024);
  EXPECT_EQ(h.level("L2")->size_bytes, 50 << 20);
  EXPECT_DOUBLE_EQ(h.level("HBM")->bandwidth_gbps, 4800.0);
  EXPECT_EQ(h.compiler, "nvrtc");
  EXPECT_EQ(h.flags, std::vector<std::string>{"--gpu-architecture=sm_90"});
  ASSERT_GE(h.matrix_units.size(), 2u);
  const MatrixUnit& mma = h.matrix_units[0];
  EXPECT_EQ(mma.m, 16);
  EXPECT_EQ(mma.n, 8);
  EXPECT_EQ(mma.k, 16);
  EXPECT_EQ(mma.input_dtypes, (std::vector<DType>{DType::F16, DType::BF16}));
  EXPECT_EQ(mma.accumulator, DType::F32);
  EXPECT_EQ(mma.precision, "inputs");
  // TF32: f32 operands, multiplied at tf32 precision (the scheduler's opt-in).
  const MatrixUnit& tf32 = h.matrix_units[1];
  EXPECT_EQ(tf32.k, 8);
  EXPECT_EQ(tf32.input_dtypes, std::vector<DType>{DType::F32});
  EXPECT_EQ(tf32.precision, "tf32");
  EXPECT_GT(h.peak_gflops.at(DType::BF16), h.peak_gflops.at(DType::F32));
}

TEST(HcdBuiltin, CrossTargetsNameTheirToolchains) {
  Hcd arm = builtin("aarch64-neon");
  EXPECT_EQ(arm.plugin, "cpu-aarch64");
  EXPECT_EQ(arm.compiler, "aarch64-linux-gnu-gcc");
  EXPECT_NE(std::find(arm.flags.begin(), arm.flags.end(), "-march=armv8-a"), arm.flags.end());
  EXPECT_EQ(arm.runner, "qemu-aarch64 -L /usr/aarch64-linux-gnu");
  EXPECT_EQ(arm.vector_bits, 128);
  EXPECT_EQ(arm.vector_registers, 32);
  Hcd rv = builtin("riscv64-rvv");
  EXPECT_EQ(rv.plugin, "cpu-riscv64");
  // clang, because GCC 12 emits no RVV instructions (see the file's comment).
  EXPECT_EQ(rv.compiler, "clang-15");
  EXPECT_NE(std::find(rv.flags.begin(), rv.flags.end(), "--target=riscv64-linux-gnu"), rv.flags.end());
  // V without C: see the file's comment (qemu 7.2 and page-straddling instructions).
  EXPECT_NE(std::find(rv.flags.begin(), rv.flags.end(), "-march=rv64gv"), rv.flags.end());
  EXPECT_THAT(rv.runner, HasSubstr("qemu-riscv64"));
  EXPECT_THAT(rv.runner, HasSubstr("v=true,vlen=128"));
  Hcd pocl = builtin("pocl");
  EXPECT_EQ(pocl.plugin, "opencl");
  EXPECT_EQ(pocl.dialect, "opencl");
}

TEST(HcdBuiltin, VirtualNpuHasLocalMemoryAndAMatrixUnit) {
  Hcd h = builtin("virtual-npu");
  EXPECT_EQ(h.kind, DeviceKind::Npu);
  EXPECT_EQ(h.plugin, "sim");
  EXPECT_EQ(h.dialect, "loopir");
  EXPECT_EQ(h.units, 32);
  EXPECT_EQ(h.vector_bits, 4096);
  EXPECT_EQ(h.lanes_for(DType::F32), 128);
  EXPECT_EQ(h.memory.front().size_bytes, 1 << 20);
  EXPECT_EQ(h.memory.front().shared_by, 1);
  ASSERT_EQ(h.matrix_units.size(), 1u);
  EXPECT_EQ(h.matrix_units[0].m * h.matrix_units[0].n * h.matrix_units[0].k, 16 * 16 * 16);
}

TEST(HcdBuiltin, UnknownNameIsAUserErrorWithASuggestion) {
  try {
    builtin("nvidia-h20");
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    ASSERT_EQ(e.diagnostics().size(), 1u);
    EXPECT_EQ(e.diagnostics()[0].message, "unknown device 'nvidia-h20'");
    EXPECT_THAT(e.diagnostics()[0].hint, HasSubstr("did you mean 'nvidia-h200'?"));
    EXPECT_THAT(e.diagnostics()[0].hint, HasSubstr("sim"));
  }
}

TEST(HcdBuiltin, LanesOverrideTheVectorWidth) {
  Hcd h = builtin("sim");
  h.lanes[DType::F32] = 3;
  EXPECT_EQ(h.lanes_for(DType::F32), 3);
  EXPECT_EQ(h.lanes_for(DType::F64), 4);
  h.vector_bits = 32;
  EXPECT_EQ(h.lanes_for(DType::F64), 1); // never zero lanes
}

TEST(HcdBuiltin, KeptCacheIsTheLargestCacheAtMost16MiBPerSharingCpu) {
  auto level = [](const char* name, const char* scope, int64_t size, int shared_by) {
    MemoryLevel l;
    l.name = name;
    l.scope = scope;
    l.size_bytes = size;
    l.shared_by = shared_by;
    return l;
  };
  constexpr int64_t MiB = int64_t{1} << 20;
  Hcd h = builtin("sim");
  h.kind = DeviceKind::Cpu;
  h.memory = {level("regs", "register", 4096 * MiB, 1), level("L1", "local", MiB / 16, 1),
              level("L2", "local", 2 * MiB, 1), level("L3", "shared", 480 * MiB, 2),
              level("DRAM", "global", 64 * 1024 * MiB, 2)};
  EXPECT_EQ(h.kept_cache_bytes(), 32 * MiB); // a VM's socket-wide L3: 16 MiB per sharing CPU
  h.memory[3].size_bytes = 24 * MiB;
  EXPECT_EQ(h.kept_cache_bytes(), 24 * MiB); // a cache under the cap counts whole
  h.memory.erase(h.memory.begin() + 3);
  EXPECT_EQ(h.kept_cache_bytes(), 2 * MiB); // the largest cache, registers and DRAM aside
  h.kind = DeviceKind::Gpu;
  h.memory.push_back(level("L2g", "shared", 50 * MiB, 132));
  EXPECT_EQ(h.kept_cache_bytes(), 50 * MiB); // the cap is the CPU's VM rule only
  h.memory = {level("DRAM", "global", 1024 * MiB, 1)};
  EXPECT_EQ(h.kept_cache_bytes(), 0);
}

} // namespace
} // namespace unitile::hcd
