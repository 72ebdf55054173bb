// Lane-wise math functions of f32 vectors beyond exp/sigmoid/tanh/erf (CHelpers.cpp):
// logarithms, expm1/exp2, trigonometric and hyperbolic functions and their inverses.
//
// Why: a vectorized loop whose body calls a function without a lane-wise version is
// printed as a scalar loop, one libm call per element, and the host compiler cannot
// vectorize a libm call. Elementwise ops like acos, elu (expm1), mish (log1p) and their
// gradients were 5-10x slower than PyTorch's vectorized math for that reason alone.
// With GCC vector extensions each function is a range reduction plus a polynomial
// (Cephes' single-precision coefficients, a few ulp); in OpenCL C it is the built-in,
// which is already overloaded on vector types.
#pragma once

#include "codegen/CDialect.h"
#include "ir/Expr.h"

#include <set>
#include <string>

namespace unitile::codegen {

/// Whether `fn` on `elem` lanes has a helper here (its name is the vector type's name,
/// '_', and math_fn_name(fn): ut_v8f32_log1p).
bool has_lane_math(MathFn fn, DType elem);

/// Definitions of the helpers `names` (math_fn_name spellings) of the `lanes`-lane
/// vector type of `elem`, with their dependencies first, in dialect `d`'s syntax. The
/// vector type and its exp helper must already be defined.
std::string lane_math_text(const CDialect& d, DType elem, int lanes,
                           const std::set<std::string>& names);

} // namespace unitile::codegen
