// Static launch costs: operations and bytes counted from Loop IR, for the plain default
// lowering and for the auto-scheduler's tiled programs (split tails, packing).
#include "profile/LaunchCost.h"

#include "hcd/Hcd.h"
#include "ir/Parser.h"
#include "schedule/ApplySchedule.h"
#include "schedule/AutoSchedule.h"
#include "schedule/Lower.h"

#include <gtest/gtest.h>

namespace unitile::profile {
namespace {

constexpr const char* kSource = R"(
kernel MatMul {
  input:  f32[M,K] A, f32[K,N] B
  output: f32[M,N] C
  operation: C[i,j] += A[i,k] * B[k,j]
}
kernel Axpy {
  input:  f64[N] X, f64[N] Y
  output: f64[N] Z
  operation: Z[i] = 2.0 * X[i] + Y[i]
}
kernel Gather {
  input:  f32[N] X, i64[M] Idx
  output: f32[M] Y
  operation: Y[i] = X[Idx[i]] * 3.0
}
)";

struct Totals {
  double operations = 0, bytes = 0;
  bool known = true;
};

Totals totals(const LoopProgram& p) {
  Totals t;
  for (const LoopFunc& f : p.funcs) {
    const LaunchCost c = static_launch_cost(p, f);
    t.bytes += c.bytes;
    if (c.operations)
      t.operations += *c.operations;
    else
      t.known = false;
  }
  return t;
}

class LaunchCostTest : public ::testing::Test {
protected:
  Module module_ = parse_module(SourceFile{"cost.ut", kSource});
  hcd::Hcd sim_ = hcd::builtin("sim");
};

TEST_F(LaunchCostTest, DefaultMatmulIsTwoMnkOperations) {
  const Kernel& k = *module_.find("MatMul");
  const ShapeBindings b = bind_shapes(k, {}, {{"M", 7}, {"K", 5}, {"N", 3}});
  const LoopProgram p = lower_to_loops(k, b, sim_);
  const Totals t = totals(p);
  ASSERT_TRUE(t.known);
  EXPECT_EQ(t.operations, 2.0 * 7 * 5 * 3);
}

TEST_F(LaunchCostTest, AutoScheduledMatmulWithTailsCountsTheSame) {
  // Shapes that divide no tile: the split loops get tails the counter must walk.
  const Kernel& k = *module_.find("MatMul");
  const ShapeBindings b = bind_shapes(k, {}, {{"M", 67}, {"K", 45}, {"N", 37}});
  const hcd::Hcd host = hcd::builtin("host-cpu");
  const AutoSchedule a = auto_schedule(k, b, host);
  ASSERT_FALSE(a.schedule.empty()) << "the auto-scheduler should tile a matmul";
  const LoopProgram p = lower_scheduled(k, b, host, a.schedule);
  const Totals t = totals(p);
  ASSERT_TRUE(t.known);
  EXPECT_EQ(t.operations, 2.0 * 67 * 45 * 37);
  // Every launch reads some of A, B and C and writes C: at least A + B + C, at most
  // every buffer read and written once per launch.
  const double a_bytes = 67 * 45 * 4, b_bytes = 45 * 37 * 4, c_bytes = 67 * 37 * 4;
  EXPECT_GE(t.bytes, a_bytes + b_bytes + c_bytes);
  EXPECT_LE(t.bytes, static_cast<double>(p.funcs.size()) * (a_bytes + b_bytes + 2 * c_bytes));
}

TEST_F(LaunchCostTest, ElementwiseCountsEachOperationAndItsDtype) {
  const Kernel& k = *module_.find("Axpy");
  const LoopProgram p = lower_to_loops(k, bind_shapes(k, {}, {{"N", 100}}), sim_);
  ASSERT_EQ(p.funcs.size(), 1u);
  const LaunchCost c = static_launch_cost(p, p.funcs[0]);
  ASSERT_TRUE(c.operations.has_value()) << c.why_unknown;
  EXPECT_EQ(*c.operations, 200.0);
  EXPECT_EQ(c.dtype, DType::F64);
  EXPECT_EQ(c.bytes, 3 * 100 * 8.0); // X and Y read, Z written
}

TEST_F(LaunchCostTest, DataDependentIndicesStillCount) {
  // An index read from data is an address, not control flow: the count is known.
  const Kernel& k = *module_.find("Gather");
  const LoopProgram p = lower_to_loops(k, bind_shapes(k, {}, {{"N", 10}, {"M", 6}}), sim_);
  const Totals t = totals(p);
  ASSERT_TRUE(t.known);
  EXPECT_EQ(t.operations, 6.0);
  EXPECT_EQ(t.bytes, 10 * 4 + 6 * 8 + 6 * 4.0);
}

TEST(LaunchCost, BranchOnDataIsUnknownNotGuessed) {
  const LoopProgram p = parse_loop_program(SourceFile{"branchy.loop", R"(
program Branchy {
  buffer X: f32[8] input
  buffer Y: f32[8] output
  func Branchy_0 {
    for i in 0..8 grid.x {
      let n = i64(X[i]) {
        for j in 0 extent n {
          Y[i] = X[i] + 1.0
        }
      }
    }
  }
}
)"});
  const LaunchCost c = static_launch_cost(p, p.funcs[0]);
  EXPECT_FALSE(c.operations.has_value());
  EXPECT_NE(c.why_unknown.find("data"), std::string::npos) << c.why_unknown;
  EXPECT_EQ(c.bytes, 64.0);
}

TEST(LaunchCost, TailLoopsAreWalkedExactly) {
  // A triangular nest: the inner extent depends on the outer variable.
  const LoopProgram p = parse_loop_program(SourceFile{"tri.loop", R"(
program Tri {
  buffer X: f32[10] input
  buffer Y: f32[10, 10] output
  func Tri_0 {
    for i in 0..10 {
      for j in 0 extent i + 1 {
        Y[i, j] = X[j] * 2.0 + 1.0
      }
    }
  }
}
)"});
  const LaunchCost c = static_launch_cost(p, p.funcs[0]);
  ASSERT_TRUE(c.operations.has_value()) << c.why_unknown;
  EXPECT_EQ(*c.operations, 2.0 * 55);
}

} // namespace
} // namespace unitile::profile
