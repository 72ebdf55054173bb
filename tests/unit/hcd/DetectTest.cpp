// Host detection gives sane values on whatever machine runs the tests.
#include "hcd/Hcd.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>

namespace unitile::hcd {
namespace {

bool has_feature(const Hcd& h, const std::string& f) {
  return std::find(h.isa.begin(), h.isa.end(), f) != h.isa.end();
}

TEST(HcdDetect, HostCpuIsSane) {
  Hcd h = detect_host_cpu();
  EXPECT_EQ(h.name, "host-cpu");
  EXPECT_EQ(h.kind, DeviceKind::Cpu);
  EXPECT_EQ(h.plugin, "cpu");
  EXPECT_EQ(h.dialect, "c");
  EXPECT_EQ(h.source, "detected");
  EXPECT_GE(h.units, 1);
  EXPECT_TRUE(h.vector_bits == 128 || h.vector_bits == 256 || h.vector_bits == 512)
      << h.vector_bits;
  EXPECT_EQ(h.lanes_for(DType::F32), h.vector_bits / 32);
  EXPECT_EQ(h.lanes.at(DType::F64), h.vector_bits / 64);
  EXPECT_EQ(h.compiler, "cc");
  EXPECT_EQ(h.flags, (std::vector<std::string>{"-O3", "-march=native", "-fno-math-errno",
                                               "-fno-tree-loop-if-convert"}));
  EXPECT_EQ(h.max_block, (std::vector<int64_t>{1, 1, 1}));
  EXPECT_GT(h.peak_gflops.at(DType::F32), 0);
  EXPECT_GT(h.peak_gflops.at(DType::F32), h.peak_gflops.at(DType::F64));
}

TEST(HcdDetect, CachesComeFirstAndDramLast) {
  Hcd h = detect_host_cpu();
  const MemoryLevel* l1 = h.level("L1");
  ASSERT_NE(l1, nullptr);
  EXPECT_EQ(&h.memory.front(), l1);
  EXPECT_GE(l1->size_bytes, 8 * 1024);
  EXPECT_LE(l1->size_bytes, 4 * 1024 * 1024);
  EXPECT_GE(l1->line_bytes, 16);
  EXPECT_EQ(h.memory.back().name, "DRAM");
  EXPECT_EQ(h.memory.back().scope, "global");
  for (size_t i = 1; i < h.memory.size(); ++i)
    EXPECT_GE(h.memory[i].size_bytes, h.memory[i - 1].size_bytes) << h.memory[i].name;
  for (const auto& m : h.memory) {
    EXPECT_GE(m.shared_by, 1);
    EXPECT_LE(m.shared_by, std::max(h.units, 1024));
    EXPECT_GT(m.bandwidth_gbps, 0);
    EXPECT_GT(m.latency_ns, 0);
  }
}

TEST(HcdDetect, IsaFeaturesAreConsistent) {
  Hcd h = detect_host_cpu();
#if defined(__x86_64__)
  // cpuid answers must agree with each other and with the vector width chosen.
  if (has_feature(h, "avx512f")) {
    EXPECT_EQ(h.vector_bits, 512);
    EXPECT_EQ(h.vector_registers, 32);
  } else if (has_feature(h, "avx2")) {
    EXPECT_EQ(h.vector_bits, 256);
    EXPECT_EQ(h.vector_registers, 16);
  }
  if (has_feature(h, "avx2")) {
    EXPECT_TRUE(has_feature(h, "avx"));
  }
  // The matrix unit: AMX's 16x16x32 tiles where cpuid reports them, else AVX512-BF16's
  // vdpbf16ps as a 1x16x2 unit on 512-bit vectors (Zen 4), else none.
  const bool amx = has_feature(h, "amx-bf16");
  const bool pairs = !amx && has_feature(h, "avx512_bf16") && h.vector_bits == 512;
  ASSERT_EQ(h.matrix_units.size(), amx || pairs ? 1u : 0u);
  if (amx || pairs) {
    const MatrixUnit& u = h.matrix_units[0];
    EXPECT_EQ(std::vector<int>({u.m, u.n, u.k}), amx ? std::vector<int>({16, 16, 32}) : std::vector<int>({1, 16, 2}));
    EXPECT_EQ(u.input_dtypes, std::vector<DType>{DType::BF16});
    EXPECT_EQ(u.accumulator, DType::F32);
  }
  EXPECT_EQ(__builtin_cpu_supports("avx512bf16") != 0, has_feature(h, "avx512_bf16"));
  EXPECT_EQ(__builtin_cpu_supports("avx2") != 0, has_feature(h, "avx2"));
  EXPECT_EQ(__builtin_cpu_supports("avx512f") != 0, has_feature(h, "avx512f"));
  EXPECT_EQ(h.target_triple, "x86_64-linux-gnu");
#elif defined(__aarch64__)
  EXPECT_TRUE(has_feature(h, "neon"));
  EXPECT_EQ(h.vector_registers, 32);
#endif
}

TEST(HcdDetect, DetectionIsStableAcrossCalls) {
  // The kernel cache and tuning database key on the hash: it must not wander.
  EXPECT_EQ(detect_host_cpu().hash(), detect_host_cpu().hash());
  EXPECT_EQ(builtin("host-cpu").hash(), detect_host_cpu().hash());
}

TEST(HcdDetect, BuiltinHostFollowsTheThreadCount) {
  // `unitile bench --threads 1,all` changes UNITILE_NUM_THREADS between sessions in one
  // process; each session's host HCD must count the units it will run on (the first
  // value used to stick: a two-thread GEMM got the one-unit schedule).
  const char* old = std::getenv("UNITILE_NUM_THREADS");
  const std::string saved = old ? old : "";
  unsetenv("UNITILE_NUM_THREADS");
  const int all = builtin("host-cpu").units;
  setenv("UNITILE_NUM_THREADS", "1", 1);
  const Hcd one = builtin("host-cpu");
  EXPECT_EQ(one.units, 1);
  EXPECT_EQ(one.hash(), builtin("host-cpu").hash());
  unsetenv("UNITILE_NUM_THREADS");
  EXPECT_EQ(builtin("host-cpu").units, all);
  if (all > 1) {
    EXPECT_NE(builtin("host-cpu").hash(), one.hash());
  }
  if (old) setenv("UNITILE_NUM_THREADS", saved.c_str(), 1);
}

} // namespace
} // namespace unitile::hcd
