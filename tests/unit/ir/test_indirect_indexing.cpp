// Data-dependent (indirect) indexing in Kernel IR: gathers read at an index taken from a
// tensor, scatters write at one. Checks what the parser and verifier fill in, that the
// builder writes the same IR as the text, and what lowering makes of a scatter.
#include "unitile/builder.h"

#include "hcd/Hcd.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "schedule/Lower.h"

#include <gtest/gtest.h>

namespace b = unitile::builder;
using unitile::DType;

namespace {

unitile::Kernel parse_one(const std::string& text) {
  unitile::Module m = unitile::parse_module(unitile::SourceFile{"test.ut", text});
  EXPECT_EQ(m.kernels.size(), 1u);
  return m.kernels.at(0);
}

const char* const kScatterAdd = R"(
kernel ScatterAdd {
  input:  f32[N, D] X, i32[M, D] Idx, f32[M, D] U
  output: f32[N, D] Y
  operation:
    Y[r, j] = X[r, j]
    Y[Idx[i, j], j] += U[i, j]
})";

TEST(IndirectIndexing, GatherTypesTheIndexAndInfersRanges) {
  unitile::Kernel k = parse_one(R"(
kernel Gather {
  input:  f32[N, D] X, i32[M, D] Idx
  output: f32[M, D] Y
  operation: Y[i, j] = X[Idx[i, j] + 1, j] ?? 0
})");
  const unitile::Comprehension& c = k.body.at(0);
  EXPECT_FALSE(c.is_indirect_store());
  EXPECT_TRUE(c.reduction_vars.empty());
  // i's range comes from Idx (inside the index), j's from every tensor it indexes.
  EXPECT_EQ(unitile::to_string(c.ranges.at("i")), "M");
  EXPECT_EQ(unitile::to_string(c.ranges.at("j")), "D");
  const unitile::Expr& read = c.value;
  ASSERT_EQ(read->kind, unitile::ExprKind::Access);
  EXPECT_TRUE(unitile::reads_tensor(read->operands[0]));
  EXPECT_FALSE(unitile::reads_tensor(read->operands[1]));
  EXPECT_EQ(read->operands[0]->type, DType::I32); // the weak literal took Idx's type
}

TEST(IndirectIndexing, ScatterFillsItsIndexVariables) {
  unitile::Kernel k = parse_one(kScatterAdd);
  const unitile::Comprehension& c = k.body.at(1);
  ASSERT_TRUE(c.is_indirect_store());
  ASSERT_EQ(c.store_indices.size(), 2u);
  EXPECT_EQ(c.indices, (std::vector<std::string>{"i", "j"}));
  EXPECT_TRUE(c.reduction_vars.empty());
  EXPECT_EQ(unitile::to_string(c.ranges.at("i")), "M");
  EXPECT_EQ(c.store_indices[0]->type, DType::I32);
  // Printing gives the same text back, and it re-parses to an equal kernel.
  unitile::Kernel again = parse_one(unitile::to_string(k));
  EXPECT_TRUE(unitile::equal(k, again));
  // A different scatter index is a different kernel.
  std::string other = kScatterAdd;
  other.replace(other.find("Y[Idx[i, j], j]"), 15, "Y[Idx[i, j] + 1, j]");
  EXPECT_FALSE(unitile::equal(k, parse_one(other)));
}

TEST(IndirectIndexing, ScatterReductionVariables) {
  unitile::Kernel k = parse_one(R"(
kernel RowSums {
  input:  f32[M, K] U, i64[M] Idx
  output: f32[N] Y
  operation:
    Y[r] = 0
    Y[Idx[i]] += U[i, k]
})");
  EXPECT_EQ(k.body.at(1).indices, (std::vector<std::string>{"i"}));
  EXPECT_EQ(k.body.at(1).reduction_vars, (std::vector<std::string>{"k"}));
}

TEST(IndirectIndexing, BuilderWritesTheSameScatter) {
  b::Kernel k("ScatterAdd");
  b::Size N = k.size("N"), D = k.size("D"), M = k.size("M");
  b::Tensor X = k.input("X", DType::F32, {N, D}), Idx = k.input("Idx", DType::I32, {M, D});
  b::Tensor U = k.input("U", DType::F32, {M, D});
  b::Tensor Y = k.output("Y", DType::F32, {N, D});
  b::Index r("r"), i("i"), j("j");
  Y(r, j) = X(r, j);
  Y(Idx(i, j), j) += U(i, j);
  unitile::Kernel built = k.build();
  unitile::Kernel parsed = parse_one(kScatterAdd);
  EXPECT_EQ(unitile::to_string(built), unitile::to_string(parsed));
  EXPECT_TRUE(unitile::equal(built, parsed));
}

TEST(IndirectIndexing, BuilderRejectsOffsetBesideAScatterIndex) {
  b::Kernel k("Bad");
  b::Size N = k.size("N"), M = k.size("M");
  b::Tensor Idx = k.input("Idx", DType::I64, {M}), U = k.input("U", DType::F32, {M, N});
  b::Tensor Y = k.output("Y", DType::F32, {N, N});
  b::Index r("r"), c("c"), i("i"), j("j");
  Y(r, c) = 0;
  Y(Idx(i), j + 0) = U(i, j);
  EXPECT_THROW(k.build(), unitile::UserError);
}

TEST(IndirectIndexing, ScatterLowersSeriallyWithTheBareVariableOnTheGrid) {
  unitile::Kernel k = parse_one(kScatterAdd);
  unitile::hcd::Hcd hcd;
  unitile::LoopProgram p = unitile::lower_to_loops(k, {{"N", 5}, {"D", 7}, {"M", 9}}, hcd);
  ASSERT_EQ(p.funcs.size(), 2u);
  const std::string text = unitile::to_string(p.funcs[1].body);
  // j writes disjoint columns, so it is the grid loop; i stays serial, in order.
  EXPECT_NE(text.find("for j in 0..7 grid.x"), std::string::npos) << text;
  EXPECT_NE(text.find("for i in 0..9 {"), std::string::npos) << text;
  EXPECT_NE(text.find("Y[Idx[i, j], j] = Y[Idx[i, j], j] + U[i, j]"), std::string::npos) << text;
}

TEST(IndirectIndexing, ScatterWithoutABareVariableIsOneBlock) {
  unitile::Kernel k = parse_one(R"(
kernel Hist {
  input:  i32[M] Idx
  output: i64[N] Count
  operation:
    Count[r] = 0
    Count[Idx[i]] += 1
})");
  unitile::hcd::Hcd hcd;
  unitile::LoopProgram p = unitile::lower_to_loops(k, {{"N", 4}, {"M", 6}}, hcd);
  const std::string text = unitile::to_string(p.funcs.at(1).body);
  EXPECT_EQ(text.find("grid"), std::string::npos) << text;
}

} // namespace
