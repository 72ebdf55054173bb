// The sim chip model: set-associative LRU caches, the hierarchy's routing and write-back
// traffic, and model_program on hand-written Loop IR (independent of any schedule).
#include "backends/sim/CacheModel.h"
#include "backends/sim/ChipModel.h"
#include "hcd/Hcd.h"
#include "ir/Diagnostic.h"
#include "ir/Parser.h"
#include "ir/Verifier.h"

#include <gtest/gtest.h>

#include <vector>

namespace {

using unitile::sim::CacheHierarchy;
using unitile::sim::SetAssociativeCache;

TEST(SetAssociativeCache, EvictsTheLeastRecentlyUsedLineOfASet) {
  // 4 lines of 64 bytes, 2 ways: 2 sets; even lines map to set 0.
  SetAssociativeCache c(256, 64, 2);
  EXPECT_EQ(c.sets(), 2);
  EXPECT_FALSE(c.access(0, false).hit);
  EXPECT_FALSE(c.access(2, false).hit);
  EXPECT_TRUE(c.access(0, false).hit); // 2 is now the LRU line of set 0
  EXPECT_FALSE(c.access(4, false).hit); // evicts 2
  EXPECT_TRUE(c.access(0, false).hit);
  EXPECT_FALSE(c.access(2, false).hit);
  EXPECT_FALSE(c.access(1, false).hit); // set 1 is untouched by set 0's traffic
  EXPECT_TRUE(c.access(1, false).hit);
}

TEST(SetAssociativeCache, ReportsDirtyVictims) {
  SetAssociativeCache c(128, 64, 2); // one set of two ways
  c.access(7, true);
  c.access(8, false);
  SetAssociativeCache::Result r = c.access(9, false); // evicts 7, which is dirty
  EXPECT_FALSE(r.hit);
  EXPECT_TRUE(r.evicted_dirty);
  EXPECT_EQ(r.evicted_line, 7u);
  r = c.access(10, false); // evicts 8, clean
  EXPECT_FALSE(r.evicted_dirty);
  EXPECT_TRUE(c.take_dirty().empty());
  c.access(10, true);
  EXPECT_EQ(c.take_dirty(), std::vector<uint64_t>{10});
  EXPECT_TRUE(c.take_dirty().empty()) << "take_dirty cleans what it returns";
}

unitile::hcd::Hcd two_level_chip(int units) {
  unitile::hcd::Hcd h;
  h.name = "test-chip";
  h.units = units;
  h.peak_gflops[unitile::DType::F32] = 100.0 * units;
  h.memory.push_back({"L1", "local", 1024, 64, 100, 1, 1});
  h.memory.push_back({"L2", "shared", 8192, 64, 50, 10, 2});
  h.memory.push_back({"DRAM", "global", int64_t{1} << 30, 64, 10, 100, units});
  return h;
}

TEST(CacheHierarchy, StreamingMissesEveryLineOnceAndReusingHits) {
  CacheHierarchy m(two_level_chip(1), 1);
  for (uint64_t a = 0; a < 64 * 100; a += 4) m.access(0, a, 4, false);
  const auto& l = m.levels();
  ASSERT_EQ(l.size(), 3u);
  EXPECT_EQ(l[0].traffic[0].requests, 1600);
  EXPECT_EQ(l[0].traffic[0].hits, 1600 - 100);
  EXPECT_EQ(l[0].traffic[0].read_bytes, 6400);
  EXPECT_EQ(l[1].traffic[0].read_bytes, 100 * 64);
  EXPECT_EQ(l[2].traffic[0].read_bytes, 100 * 64) << "cold misses: every line crosses from DRAM once";
  m.reset_counters();
  for (uint64_t a = 64 * 90; a < 64 * 100; a += 4) m.access(0, a, 4, false); // the last 10 lines fit L1
  EXPECT_EQ(l[0].traffic[0].hits, l[0].traffic[0].requests);
  EXPECT_EQ(l[1].traffic[0].requests, 0);
}

TEST(CacheHierarchy, StreamPrefetchersHideTheLatencyOfSequentialLinesOnly) {
  CacheHierarchy m(two_level_chip(1), 1);
  const auto& l = m.levels();
  // A sequential walk of 100 lines: only the first read of the stream is exposed, at
  // DRAM, which serves them all (cold).
  for (uint64_t a = 0; a < 64 * 100; a += 4) m.access(0, a, 4, false);
  EXPECT_EQ(l[2].traffic[0].hits, 100);
  EXPECT_EQ(l[2].traffic[0].exposed, 1);
  EXPECT_EQ(l[1].traffic[0].exposed, 0) << "the L2 served none of them";
  // Every other line (a stride of 128 bytes) is still a stream; every fourth is not.
  m.reset_counters();
  const uint64_t base = 1 << 20;
  for (uint64_t n = 0; n < 50; ++n) m.access(0, base + n * 128, 4, false);
  EXPECT_EQ(l[2].traffic[0].exposed, 1);
  m.reset_counters();
  for (uint64_t n = 0; n < 50; ++n) m.access(0, 2 * base + n * 256, 4, false);
  EXPECT_EQ(l[2].traffic[0].exposed, 50);
  // 17 interleaved streams outrun the 16 the prefetcher follows: each read starts anew
  // (round-robin replacement); 16 interleaved streams are all followed.
  for (uint64_t streams : {uint64_t{16}, uint64_t{17}}) {
    CacheHierarchy f(two_level_chip(1), 1);
    for (uint64_t n = 0; n < 20; ++n)
      for (uint64_t s = 0; s < streams; ++s) f.access(0, (s + 1) * 4 * base + n * 64, 4, false);
    const int64_t expected = streams <= CacheHierarchy::kStreams ? int64_t(streams) : int64_t(20 * streams);
    EXPECT_EQ(f.levels()[2].traffic[0].exposed, expected) << streams << " streams";
  }
  // Writes back wait for nothing; the first level has no latency term at all.
  m.reset_counters();
  for (uint64_t a = 3 * base; a < 3 * base + 64 * 40; a += 64) m.access(0, a, 64, true);
  m.flush();
  EXPECT_GT(l[2].traffic[0].write_bytes, 0);
  EXPECT_EQ(l[2].traffic[0].exposed, 0) << "whole-line stores fetch nothing; their writes back are not exposed";
  EXPECT_EQ(l[0].traffic[0].exposed, 0);
}

TEST(CacheHierarchy, StreamingStoresGoToMemoryWithoutReadingOrCaching) {
  CacheHierarchy m(two_level_chip(1), 1);
  const auto& l = m.levels();
  for (uint64_t a = 0; a < 64 * 10; a += 4) m.access_streamed(0, a, 4);
  EXPECT_EQ(l[2].traffic[0].write_bytes, 640);
  EXPECT_EQ(l[2].traffic[0].read_bytes, 0) << "nothing read before writing";
  EXPECT_EQ(l[2].traffic[0].requests, 10) << "one request per line completed";
  EXPECT_EQ(l[0].traffic[0].requests, 0);
  EXPECT_EQ(l[1].traffic[0].requests, 0);
  m.access(0, 0, 4, false); // the streamed lines were not allocated: a cold miss
  EXPECT_EQ(l[0].traffic[0].hits, 0);
  EXPECT_EQ(l[2].traffic[0].read_bytes, 64);
}

TEST(CacheHierarchy, StoresAllocateAndWriteBackOnFlush) {
  CacheHierarchy m(two_level_chip(1), 1);
  for (uint64_t a = 0; a < 64 * 4; a += 4) m.access(0, a, 4, true);
  const auto& l = m.levels();
  EXPECT_EQ(l[2].traffic[0].read_bytes, 4 * 64) << "a partial-line store fetches the line";
  EXPECT_EQ(l[2].traffic[0].write_bytes, 0) << "nothing written back before eviction or flush";
  m.flush();
  EXPECT_EQ(l[2].traffic[0].write_bytes, 4 * 64);
  m.flush();
  EXPECT_EQ(l[2].traffic[0].write_bytes, 4 * 64) << "a second flush finds nothing dirty";
}

TEST(CacheHierarchy, UnitsShareInstancesByTheirSharedBy) {
  CacheHierarchy m(two_level_chip(4), 4);
  const auto& l = m.levels();
  EXPECT_EQ(l[0].traffic.size(), 4u);
  EXPECT_EQ(l[1].traffic.size(), 2u);
  EXPECT_EQ(m.instance_of(1, 0), 0u);
  EXPECT_EQ(m.instance_of(1, 1), 0u);
  EXPECT_EQ(m.instance_of(1, 3), 1u);
  // Units 0 and 1 share an L2: the line unit 0 brought in is an L2 hit for unit 1.
  m.access(0, 4096, 4, false);
  m.access(1, 4096, 4, false);
  EXPECT_EQ(l[1].traffic[0].requests, 2);
  EXPECT_EQ(l[1].traffic[0].hits, 1);
  // Unit 2 sits under the other L2 instance: a miss there.
  m.access(2, 4096, 4, false);
  EXPECT_EQ(l[1].traffic[1].hits, 0);
  EXPECT_EQ(l[2].traffic[0].read_bytes, 128);
}

TEST(CacheHierarchy, RefusesHcdsItCannotModel) {
  unitile::hcd::Hcd h = two_level_chip(1);
  h.memory = {{"regs", "register", 1024, 4, 0, 0, 1}};
  EXPECT_THROW(CacheHierarchy(h, 1), unitile::UserError);
  h.memory = {{"huge", "shared", int64_t{1} << 40, 64, 1, 1, 1}, {"DRAM", "global", int64_t{1} << 41, 64, 1, 1, 1}};
  EXPECT_THROW(CacheHierarchy(h, 1), unitile::UserError);
}

unitile::LoopProgram parse(const std::string& text) {
  unitile::LoopProgram p = unitile::parse_loop_program({"<test>", text});
  unitile::verify(p);
  return p;
}

TEST(ModelProgram, DistributesGridBlocksAndCountsTraffic) {
  // 8 blocks of 256 f32 each: C = A + B over 2048 elements, vectorized inner loop.
  unitile::LoopProgram p = parse(R"(
program Add {
  buffer A: f32[8, 256] input
  buffer B: f32[8, 256] input
  buffer C: f32[8, 256] output
  func Add_0 {
    for i in 0..8 grid.x {
      for j in 0..256 vectorized {
        C[i, j] = A[i, j] + B[i, j]
      }
    }
  }
}
)");
  std::vector<float> a(2048, 1), b(2048, 2), c(2048, 0);
  std::vector<unitile::sim::BufferArg> bufs{{a.data(), a.size() * 4}, {b.data(), b.size() * 4}, {c.data(), c.size() * 4}};
  unitile::sim::KernelReport r = unitile::sim::model_program(p, two_level_chip(4), bufs, {});
  ASSERT_EQ(r.launches.size(), 1u);
  const auto& l = r.launches[0];
  EXPECT_EQ(l.blocks, 8);
  EXPECT_EQ(l.busy_units, 4);
  EXPECT_EQ(l.loads, 4096);
  EXPECT_EQ(l.stores, 2048);
  EXPECT_DOUBLE_EQ(l.vector_ops[static_cast<size_t>(unitile::DType::F32)], 2048);
  EXPECT_DOUBLE_EQ(l.scalar_ops[static_cast<size_t>(unitile::DType::F32)], 0);
  // Compulsory DRAM traffic: A and B read, C fetched (write-allocate) and written back.
  ASSERT_EQ(l.levels.size(), 3u);
  EXPECT_EQ(l.levels[2].read_bytes, 3 * 8192);
  EXPECT_EQ(l.levels[2].write_bytes, 8192);
  EXPECT_GT(l.time_s, 0);
  EXPECT_EQ(c[5], 3.0f) << "the traced run computes like the reference";

  // Warm: the 24 KiB do not fit the 2 x 8 KiB of L2, so DRAM still streams, but a
  // second look at a kernel whose data fits is free of DRAM reads.
  unitile::LoopProgram small = parse(R"(
program Small {
  buffer A: f32[4, 64] input
  buffer C: f32[4, 64] output
  func Small_0 {
    for i in 0..4 grid.x {
      for j in 0..64 { C[i, j] = A[i, j] * 2.0 }
    }
  }
}
)");
  std::vector<unitile::sim::BufferArg> sbufs{{a.data(), 1024}, {c.data(), 1024}};
  unitile::sim::ChipModelOptions warm;
  warm.warm = true;
  unitile::sim::KernelReport cold_r = unitile::sim::model_program(small, two_level_chip(4), sbufs, {});
  unitile::sim::KernelReport warm_r = unitile::sim::model_program(small, two_level_chip(4), sbufs, {}, warm);
  EXPECT_EQ(cold_r.launches[0].levels[2].read_bytes, 2048);
  EXPECT_EQ(warm_r.launches[0].levels[2].read_bytes, 0);
  EXPECT_DOUBLE_EQ(cold_r.launches[0].scalar_ops[static_cast<size_t>(unitile::DType::F32)], 256);
}

TEST(ModelProgram, ComputeBoundKernelIsBoundByCompute) {
  // Many multiplies per element loaded: time is the busiest unit's compute.
  unitile::LoopProgram p = parse(R"(
program Poly {
  buffer X: f32[64] input
  buffer Y: f32[64] output
  func Poly_0 {
    for i in 0..64 grid.x {
      allocate acc: f32[1] register {
        acc[0] = X[i]
        for r in 0..1000 vectorized { acc[0] = acc[0] * 0.999 + 0.001 }
        Y[i] = acc[0]
      }
    }
  }
}
)");
  std::vector<float> x(64, 1), y(64, 0);
  std::vector<unitile::sim::BufferArg> bufs{{x.data(), 256}, {y.data(), 256}};
  unitile::sim::KernelReport r = unitile::sim::model_program(p, two_level_chip(2), bufs, {});
  const auto& l = r.launches[0];
  EXPECT_EQ(l.bound, "compute");
  EXPECT_EQ(l.register_accesses, 64 * 2002);
  // 32 blocks per unit x 1000 x 2 f32 vector ops at 100 GFLOP/s per unit, plus issue
  // slots for loop iterations and block starts.
  EXPECT_GE(l.compute_time_s, 32 * 2000 / 100e9);
  EXPECT_LT(l.compute_time_s, 2 * 32 * 2000 / 100e9 + 1e-6);
}

} // namespace
