// Tolerances per dtype and the wording of the check report.
#include "ir/Parser.h"
#include "runtime/OutputCheck.h"

#include <gtest/gtest.h>

#include <cmath>

namespace unitile {
namespace {

Tensor filled(DType t, std::vector<int64_t> shape, std::vector<double> values) {
  Tensor x = Tensor::zeros(t, std::move(shape));
  for (size_t i = 0; i < values.size(); ++i) x.set(i, values[i]);
  return x;
}

TEST(OutputCheck, TolerancesPerDType) {
  EXPECT_EQ(tolerance_for(DType::F64, 100).atol, 1e-9);
  EXPECT_DOUBLE_EQ(tolerance_for(DType::F32, 100).atol, 1e-3);
  EXPECT_EQ(tolerance_for(DType::F32, 100).rtol, 1e-4);
  EXPECT_EQ(tolerance_for(DType::F16, 100).rtol, 2e-3);
  EXPECT_EQ(tolerance_for(DType::BF16, 1).atol, 1e-2);
  EXPECT_EQ(tolerance_for(DType::I32, 100).atol, 0);
  EXPECT_EQ(tolerance_for(DType::Bool, 100).rtol, 0);
}

TEST(OutputCheck, LongestReductionFromTheKernel) {
  Module m = parse_module(SourceFile{"m.ut", R"(
kernel MatMul {
  input:  f32[M,K] A, f32[K,N] B
  output: f32[M,N] C
  operation: C[i,j] += A[i,k] * B[k,j]
})"});
  EXPECT_EQ(longest_reduction_extent(m.kernels[0], {{"M", 2}, {"K", 400}, {"N", 3}}), 400);
}

TEST(OutputCheck, PassesWithinToleranceAndReportsMaxError) {
  Tensor ref = filled(DType::F32, {2}, {1.0, NAN});
  Tensor got = filled(DType::F32, {2}, {1.00005, NAN});
  CheckReport r = compare_outputs({"Y"}, {{"Y", got}}, {{"Y", ref}}, 1);
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.message().rfind("check: ok max_abs_err=", 0), 0u) << r.message();
}

TEST(OutputCheck, FailureNamesOutputIndexAndCounts) {
  Tensor ref = filled(DType::F64, {2, 3}, {0, 1, 2, 3, 4, 5});
  Tensor got = filled(DType::F64, {2, 3}, {0, 1, 2, 3.5, 4, 7});
  CheckReport r = compare_outputs({"Z"}, {{"Z", got}}, {{"Z", ref}}, 1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.message(),
            "check: FAILED Z at [1, 0]: got 3.5, expected 3 (max_abs_err=2, 2 of 6 elements outside tolerance)");
}

TEST(OutputCheck, NaNMustMatchNaNAndIntegersAreExact) {
  Tensor ref = filled(DType::F32, {1}, {1.0});
  Tensor nan = filled(DType::F32, {1}, {NAN});
  EXPECT_FALSE(compare_outputs({"Y"}, {{"Y", nan}}, {{"Y", ref}}, 1).ok());
  EXPECT_FALSE(compare_outputs({"Y"}, {{"Y", ref}}, {{"Y", nan}}, 1).ok());
  Tensor a = filled(DType::I64, {2}, {5, 6}), b = filled(DType::I64, {2}, {5, 7});
  EXPECT_TRUE(compare_outputs({"R"}, {{"R", a}}, {{"R", a}}, 1).ok());
  EXPECT_FALSE(compare_outputs({"R"}, {{"R", a}}, {{"R", b}}, 1).ok());
}

TEST(OutputCheck, F32ToleranceGrowsWithTheReduction) {
  Tensor ref = filled(DType::F32, {1}, {0.0});
  Tensor got = filled(DType::F32, {1}, {5e-4});
  EXPECT_FALSE(compare_outputs({"Y"}, {{"Y", got}}, {{"Y", ref}}, 1).ok());
  EXPECT_TRUE(compare_outputs({"Y"}, {{"Y", got}}, {{"Y", ref}}, 100).ok());
}

} // namespace
} // namespace unitile
