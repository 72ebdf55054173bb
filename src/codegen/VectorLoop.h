// Which vectorized loops the C printer can turn into GCC vector-extension code.
//
// A vectorized loop qualifies when its body is one or more Stores that are unit-stride in
// the loop variable, whose values read memory only unit-stride (a vector load) or
// invariantly (a broadcast), and which use nothing but + - * / min max select and casts
// on f32/f64/i32/i64 lanes, lane-wise math of f32 (exp/sigmoid/tanh/erf in CHelpers.cpp,
// the functions of VectorMath.h), logic, comparisons, casts and selects on i8/u8/bool
// lanes, and in select conditions comparisons of integer indices affine in the loop
// variable (`j <= i`). Anything else (other math calls, gathers, guarded reads, i16 or
// 16-bit float types) is printed as a scalar loop: correctness first, and the host
// compiler may still vectorize it.
#pragma once

#include "ir/Loop.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace unitile::codegen {

/// How a linearised row-major access moves when `var` grows by one.
enum class AccessStride : uint8_t { Invariant, Unit, Other };

/// Coefficient of `var` in `e` when `e` is affine in it (0 when `e` does not use it).
std::optional<int64_t> affine_coefficient(const Expr& e, const std::string& var);
bool uses_var(const Expr& e, const std::string& var);
/// The lanes a Select `sel` is computed in when its value is wanted as `want`: an integer
/// select between two values invariant in `var` (`(a > b ? 1 : -1) * 0.25`) converts its
/// arms instead of its result, so it blends `want` lanes (the same values: converting
/// then choosing is choosing then converting) and needs no integer-to-float lane
/// conversion; otherwise its own type.
DType select_lanes(const Expr& sel, DType want, const std::string& var);
AccessStride access_stride(const std::vector<Expr>& indices, const std::vector<int64_t>& shape,
                           const std::string& var);

/// Element types a vector lane may hold.
bool vector_lane_type(DType t);
/// The one-byte ones among them (i8, u8, bool): bool lanes hold 0 or 1; no arithmetic
/// on these lanes, only loads, stores, casts, selects, logic and comparisons.
bool byte_lane_type(DType t);

/// Looks up a buffer's dtype and shape by name (nullptr when unknown).
struct VectorBufferInfo {
  DType dtype;
  const std::vector<int64_t>* shape;
};
using VectorBufferLookup = std::function<std::optional<VectorBufferInfo>(const std::string&)>;

/// f16 and bf16: in a vector loop (with `half_lanes`), their values are f32 lanes,
/// converted on load and rounded on store and at casts, as the scalar code computes them.
bool half_type(DType t);
/// The lane type a value of `t` has in vector code (f32 for f16 and bf16).
DType lane_type(DType t);

/// The Stores of `loop`'s body when the loop can be printed with vector extensions,
/// after its Prefetch hints (printed once per vector), otherwise nullopt. `half_lanes`:
/// the dialect can hold f16/bf16 values as f32 lanes (CHelperSet::need_half_lanes).
std::optional<std::vector<const StmtNode*>> vector_loop_stores(const StmtNode& loop,
                                                               const VectorBufferLookup& buffers,
                                                               bool half_lanes = false);

} // namespace unitile::codegen
