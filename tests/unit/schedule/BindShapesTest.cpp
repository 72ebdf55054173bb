// Tests of bind_shapes and concrete_shape: sources of bindings, and the errors.
#include "TestKernels.h"

#include "schedule/Lower.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace unitile {
namespace {

using namespace unitile::test;
using ::testing::HasSubstr;

std::string error_of(const Kernel& k, const std::map<std::string, std::vector<int64_t>>& in,
                     const ShapeBindings& given) {
  try {
    bind_shapes(k, in, given);
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(BindShapes, GivenValuesAndInputShapes) {
  Kernel k = matmul();
  ShapeBindings b = bind_shapes(k, {{"A", {4, 3}}, {"B", {3, 5}}}, {});
  EXPECT_EQ(b, (ShapeBindings{{"M", 4}, {"K", 3}, {"N", 5}}));
  EXPECT_EQ(concrete_shape(k, "C", b), (std::vector<int64_t>{4, 5}));
  // --shape alone, with entries for other kernels ignored.
  EXPECT_EQ(bind_shapes(k, {}, {{"M", 1}, {"K", 2}, {"N", 3}, {"Z", 9}}),
            (ShapeBindings{{"M", 1}, {"K", 2}, {"N", 3}}));
}

TEST(BindShapes, ConflictNamesBothTensorsAndValues) {
  EXPECT_THAT(error_of(matmul(), {{"A", {4, 32}}, {"B", {31, 5}}}, {}),
              HasSubstr("tensor 'B' dimension 0 is 31, but K = 32 (from tensor 'A' dimension 1)"));
  EXPECT_THAT(error_of(matmul(), {{"A", {4, 3}}}, {{"M", 8}}),
              HasSubstr("tensor 'A' dimension 0 is 4, but M = 8 (from --shape)"));
}

TEST(BindShapes, ComputedDimensionIsChecked) {
  Kernel k;
  k.name = "Pairs";
  k.tensors = {tensor("X", DType::F32, {v("D")}, TensorRole::Input),
               tensor("Z", DType::F32, {mul(c(2), v("D"))}, TensorRole::Input)};
  EXPECT_THAT(error_of(k, {{"X", {4}}, {"Z", {7}}}, {}),
              HasSubstr("tensor 'Z' dimension 0 is 7, but 2 * D = 8 (with D = 4 from tensor 'X' "
                        "dimension 0)"));
  EXPECT_EQ(bind_shapes(k, {{"X", {4}}, {"Z", {8}}}, {}).at("D"), 4);
}

TEST(BindShapes, UnboundSymbolHasAHint) {
  std::string msg = error_of(matmul(), {{"A", {4, 3}}}, {});
  EXPECT_THAT(msg, HasSubstr("shape symbol 'N' is not bound"));
  EXPECT_THAT(msg, HasSubstr("hint: pass --shape N=<value> or an input that has it"));
}

TEST(BindShapes, SpecialisationParamMustBeGiven) {
  Kernel k;
  k.name = "Shift";
  k.tensors = {tensor("X", DType::F32, {v("N")}, TensorRole::Input),
               tensor("Y", DType::F32, {v("N")}, TensorRole::Output)};
  k.params = {ParamDecl{"S", DType::I32, {}}};
  k.body = {stmt("Y", {"i"}, ReduceKind::Assign,
                 access("X", {add(v("i"), var("S", DType::I32))}, DType::F32, float_imm(0.0)), {},
                 {{"i", v("N")}})};
  EXPECT_THAT(error_of(k, {{"X", {5}}}, {}), HasSubstr("integer param 'S'"));
  EXPECT_EQ(bind_shapes(k, {{"X", {5}}}, {{"S", 2}}), (ShapeBindings{{"N", 5}, {"S", 2}}));
}

TEST(BindShapes, NonPositiveSizesAreErrors) {
  EXPECT_THAT(error_of(matmul(), {}, {{"M", 0}, {"K", 2}, {"N", 3}}),
              HasSubstr("tensor 'A' dimension 0 is 0: sizes must be positive"));
  Kernel k;
  k.name = "Valid";
  k.tensors = {tensor("X", DType::F32, {v("H")}, TensorRole::Input),
               tensor("Y", DType::F32, {add(sub(v("H"), v("R")), c(1))}, TensorRole::Output)};
  EXPECT_THAT(error_of(k, {{"X", {2}}}, {{"R", 5}}),
              HasSubstr("tensor 'Y' dimension 0 is -2: sizes must be positive"));
}

TEST(BindShapes, RankAndNameOfInputsAreChecked) {
  EXPECT_THAT(error_of(matmul(), {{"A", {4}}}, {}),
              HasSubstr("tensor 'A' is declared with 2 dimensions, but the input has 1"));
  EXPECT_THAT(error_of(matmul(), {{"C", {4, 4}}}, {}),
              HasSubstr("kernel 'MatrixMul' has no input named 'C'"));
}

TEST(BindShapes, DivisionByZeroInAShapeIsAUserError) {
  Kernel k;
  k.name = "Strided";
  k.tensors = {tensor("X", DType::F32, {binary(BinaryOp::FloorDiv, v("H"), v("T"))}, TensorRole::Input)};
  EXPECT_THAT(error_of(k, {}, {{"H", 4}, {"T", 0}}), HasSubstr("division by zero"));
}

} // namespace
} // namespace unitile
