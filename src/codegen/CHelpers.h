// The small C functions and vector types generated code may call: f16/bf16 conversions,
// Python-style floor division and modulo, NaN-propagating min/max, and GCC vector
// extension types with their load/store/splat/blend helpers. Each translation unit gets
// only the ones it uses, so generated code stays short enough to read.
#pragma once

#include "codegen/CDialect.h"
#include "ir/Type.h"

#include "ir/Expr.h"

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace unitile::codegen {

class CHelperSet {
public:
  /// Request scalar helper `name` (e.g. "ut_f32_to_f16", "ut_max_f32"); an unknown name
  /// is a compiler bug.
  void need(std::string_view name);
  /// Request the vector type of `lanes` elements of `elem` (f32, f64, i32, i64, i8, u8,
  /// bool) and its
  /// helpers; returns its name, e.g. "ut_v8f32". The lane count must be a power of two.
  std::string need_vector(DType elem, int lanes);
  /// Request streaming (non-temporal) stores: `<vector>_stream(p, v)` for every vector
  /// type (GCC vector syntax only; plain stores where the target has no such instruction
  /// or `p` is not aligned to the vector's size). The launcher fences them.
  void need_stream() { stream_ = true; }
  /// Request the lane-wise math helper `fn` (VectorMath.h) of that vector type, which
  /// it also requests; returns the helper's name, e.g. "ut_v8f32_log1p".
  std::string need_lane_math(DType elem, int lanes, MathFn fn);
  /// Request the conversions between `lanes` f16 or bf16 elements in memory and a vector
  /// of f32 (GCC vector syntax only): `<name>_load(const uint16_t*)` and `<name>_round(v)`
  /// give f32 vectors, `<name>_store(uint16_t*, v)` rounds to nearest even, each exactly
  /// as the scalar ut_f16_to_f32 / ut_f32_to_f16 (bf16 likewise). Also requests the f32
  /// vector type; returns the name, e.g. "ut_v8f16".
  std::string need_half_lanes(DType elem, int lanes);
  /// Request the two-vector lane shuffles of an in-register transpose of `lanes` x
  /// `lanes` elements of `elem` (4- or 8-byte lanes), which also requests the vector type:
  /// `<name>_tlo<h>(a, b)` and `<name>_thi<h>(a, b)` for h = 1, 2, 4, .. lanes / 2, where
  /// a and b are rows r and r + h of a block whose row bit h is clear. Lane j of tlo is
  /// a's lane j when j's bit h is clear, else b's lane j - h; lane j of thi is a's lane
  /// j + h when that bit is clear, else b's lane j. Applying both to every such pair for
  /// every h swaps each row bit with the column bit: the transpose (CPrinter's
  /// transposing copies). Returns the vector type's name.
  std::string need_transpose(DType elem, int lanes);
  bool empty() const { return scalars_.empty() && vectors_.empty(); }
  /// C definitions of everything requested (dependencies first), in a fixed order, as
  /// dialect `d` declares them (its helper qualifier and its own definitions of some).
  std::string text(const CDialect& d) const;

private:
  std::set<std::string> scalars_;
  std::set<std::pair<int, int>> vectors_; // (dtype, lanes)
  bool stream_ = false;
  std::map<std::pair<int, int>, std::set<std::string>> lane_math_; // (dtype, lanes) -> names
  std::set<std::pair<int, int>> halves_;                             // (f16 or bf16, lanes)
  std::set<std::pair<int, int>> transposes_;                         // (dtype, lanes)
};

/// Name of the vector type of `lanes` elements of `elem`: ut_v<lanes><dtype>.
std::string vector_type_name(DType elem, int lanes);
/// The integer vector type that comparisons of `elem` vectors produce (same lane width).
DType vector_mask_elem(DType elem);

} // namespace unitile::codegen
