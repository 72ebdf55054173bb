// Tests of index linearisation, interval bounds, stride and constant folding.
#include "TestKernels.h"

#include "schedule/IndexArith.h"
#include "schedule/Specialize.h"

#include <gtest/gtest.h>

namespace unitile {
namespace {

using namespace unitile::test;

TEST(IndexArith, LinearizeCollectsCoefficients) {
  auto f = linearize(sub(add(mul(v("y"), c(2)), v("r")), add(v("y"), c(3))));
  ASSERT_TRUE(f);
  EXPECT_EQ(f->coefficient("y"), 1);
  EXPECT_EQ(f->coefficient("r"), 1);
  EXPECT_EQ(f->constant, -3);
  EXPECT_FALSE(linearize(mul(v("i"), v("j"))));
  EXPECT_FALSE(linearize(binary(BinaryOp::FloorDiv, v("i"), c(2))));
}

TEST(IndexArith, AffineBoundsAreExact) {
  LoopExtents loops{{"i", 5}, {"j", 4}};
  // i - i is exactly 0, which plain interval arithmetic would not see.
  auto z = bounds_of(sub(v("i"), v("i")), loops);
  ASSERT_TRUE(z);
  EXPECT_EQ(z->min, 0);
  EXPECT_EQ(z->max, 0);
  auto r = bounds_of(sub(mul(c(2), v("i")), v("j")), loops); // [0-3, 8-0]
  ASSERT_TRUE(r);
  EXPECT_EQ(r->min, -3);
  EXPECT_EQ(r->max, 8);
}

TEST(IndexArith, DivAndModBoundsAreSound) {
  LoopExtents loops{{"i", 10}};
  auto d = bounds_of(binary(BinaryOp::FloorDiv, sub(v("i"), c(1)), c(4)), loops); // (-1..8)//4
  ASSERT_TRUE(d);
  EXPECT_EQ(d->min, -1);
  EXPECT_EQ(d->max, 2);
  auto m = bounds_of(binary(BinaryOp::Mod, v("i"), c(4)), loops);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->min, 0);
  EXPECT_EQ(m->max, 3);
  auto m2 = bounds_of(binary(BinaryOp::Mod, add(v("i"), c(20)), c(40)), loops); // 20..29
  ASSERT_TRUE(m2);
  EXPECT_EQ(m2->min, 20);
  EXPECT_EQ(m2->max, 29);
  EXPECT_FALSE(bounds_of(binary(BinaryOp::FloorDiv, v("i"), v("i")), loops));
  EXPECT_FALSE(bounds_of(v("unknown"), loops));
}

TEST(IndexArith, UnitStride) {
  Expr a = access("X", {v("i"), add(v("j"), v("r"))}, DType::F32);
  EXPECT_TRUE(unit_stride_in(a, "j"));
  EXPECT_TRUE(unit_stride_in(a, "r"));
  EXPECT_FALSE(unit_stride_in(a, "i"));
  EXPECT_FALSE(unit_stride_in(access("X", {v("j"), v("j")}, DType::F32), "j"));
  EXPECT_FALSE(unit_stride_in(access("X", {mul(v("j"), c(2))}, DType::F32), "j"));
  EXPECT_FALSE(unit_stride_in(access("X", {}, DType::F32), "j"));
}

TEST(Specialize, SubstitutesAndFolds) {
  Expr idx = sub(add(mul(v("y"), v("T")), v("r")), v("P"));
  std::set<std::string> names{"T", "P"};
  EXPECT_EQ(to_string(specialize(idx, names, {{"T", 1}, {"P", 0}})), "y + r");
  EXPECT_EQ(to_string(specialize(idx, names, {{"T", 2}, {"P", 1}})), "y * 2 + r - 1");
  EXPECT_EQ(to_string(specialize(add(sub(v("i"), v("P")), c(3)), names, {{"P", 1}})), "i + 2");
  EXPECT_EQ(to_string(specialize(add(sub(v("i"), v("P")), c(1)), names, {{"P", 1}})), "i");
  // Only the names asked for are replaced.
  EXPECT_EQ(to_string(specialize(add(v("i"), v("Q")), names, {{"Q", 1}})), "i + Q");
  EXPECT_EQ(fold_constants(binary(BinaryOp::FloorDiv, c(-7), c(2)))->int_value, -4);
  EXPECT_EQ(fold_constants(binary(BinaryOp::Mod, c(-7), c(3)))->int_value, 2);
}

TEST(Specialize, FindsIntegerParamsUsedInIndices) {
  Kernel k;
  k.name = "K";
  k.params = {ParamDecl{"S", DType::I64, {}}, ParamDecl{"n", DType::I32, {}},
              ParamDecl{"alpha", DType::F32, {}}};
  k.tensors = {tensor("X", DType::F32, {v("N")}, TensorRole::Input),
               tensor("Y", DType::F32, {v("N")}, TensorRole::Output)};
  Expr value = mul(access("X", {binary(BinaryOp::Mod, add(v("i"), v("S")), v("N"))}, DType::F32),
                   add(var("alpha", DType::F32), cast(DType::F32, var("n", DType::I32))));
  k.body = {stmt("Y", {"i"}, ReduceKind::Assign, value, {}, {{"i", v("N")}})};
  EXPECT_EQ(specialization_params(k), (std::set<std::string>{"S"}));
  EXPECT_EQ(bound_names(k), (std::set<std::string>{"N", "S"}));
}

} // namespace
} // namespace unitile
