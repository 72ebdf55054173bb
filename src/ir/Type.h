// Element types of the IR: the dtypes a tensor or scalar can hold.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace unitile {

enum class DType : uint8_t { F16, BF16, F32, F64, I8, I16, I32, I64, U8, Bool };

/// Canonical text name: f16, bf16, f32, f64, i8, i16, i32, i64, u8, bool.
std::string_view dtype_name(DType t);
/// Accepts the canonical names plus the aliases `float` (f32), `double` (f64),
/// `half` (f16), `int` (i32), `long` (i64).
std::optional<DType> parse_dtype(std::string_view s);
/// Storage size in bytes.
int dtype_bytes(DType t);
bool is_float(DType t);    // f16, bf16, f32, f64
bool is_integer(DType t);  // i8..i64, u8
bool is_signed(DType t);
/// The type arithmetic on values of `t` is carried out in: f16/bf16 compute in f32
/// (they are storage formats), narrow integers in i32, everything else in itself.
DType compute_type(DType t);
/// Usual promotion for a binary arithmetic op: float beats int, wider beats narrower.
DType promote(DType a, DType b);

} // namespace unitile
