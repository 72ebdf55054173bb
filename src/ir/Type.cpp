// Names, sizes and promotion rules of the IR's element types.
#include "ir/Type.h"

namespace unitile {

std::string_view dtype_name(DType t) {
  switch (t) {
  case DType::F16: return "f16";
  case DType::BF16: return "bf16";
  case DType::F32: return "f32";
  case DType::F64: return "f64";
  case DType::I8: return "i8";
  case DType::I16: return "i16";
  case DType::I32: return "i32";
  case DType::I64: return "i64";
  case DType::U8: return "u8";
  case DType::Bool: return "bool";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view s) {
  static constexpr std::pair<std::string_view, DType> names[] = {
      {"f16", DType::F16},   {"bf16", DType::BF16}, {"f32", DType::F32},   {"f64", DType::F64},
      {"i8", DType::I8},     {"i16", DType::I16},   {"i32", DType::I32},   {"i64", DType::I64},
      {"u8", DType::U8},     {"bool", DType::Bool}, {"float", DType::F32}, {"double", DType::F64},
      {"half", DType::F16},  {"int", DType::I32},   {"long", DType::I64},
  };
  for (const auto& [name, t] : names)
    if (name == s) return t;
  return std::nullopt;
}

int dtype_bytes(DType t) {
  switch (t) {
  case DType::F16:
  case DType::BF16:
  case DType::I16: return 2;
  case DType::F32:
  case DType::I32: return 4;
  case DType::F64:
  case DType::I64: return 8;
  case DType::I8:
  case DType::U8:
  case DType::Bool: return 1;
  }
  return 0;
}

bool is_float(DType t) {
  return t == DType::F16 || t == DType::BF16 || t == DType::F32 || t == DType::F64;
}

bool is_integer(DType t) {
  return t == DType::I8 || t == DType::I16 || t == DType::I32 || t == DType::I64 ||
         t == DType::U8;
}

bool is_signed(DType t) { return is_float(t) || (is_integer(t) && t != DType::U8); }

DType compute_type(DType t) {
  switch (t) {
  case DType::F16:
  case DType::BF16: return DType::F32;
  case DType::I8:
  case DType::I16:
  case DType::U8:
  case DType::Bool: return DType::I32;
  default: return t;
  }
}

static int rank_of(DType t) {
  // Order used for promotion: bool < ints by width < floats by width.
  switch (t) {
  case DType::Bool: return 0;
  case DType::U8: return 1;
  case DType::I8: return 2;
  case DType::I16: return 3;
  case DType::I32: return 4;
  case DType::I64: return 5;
  case DType::F16: return 6;
  case DType::BF16: return 7;
  case DType::F32: return 8;
  case DType::F64: return 9;
  }
  return 0;
}

DType promote(DType a, DType b) {
  if (a == b) return a;
  // f16 with bf16 has no common 16-bit type: meet in f32.
  if ((a == DType::F16 && b == DType::BF16) || (a == DType::BF16 && b == DType::F16))
    return DType::F32;
  // u8 with i8 meets in i16.
  if ((a == DType::U8 && b == DType::I8) || (a == DType::I8 && b == DType::U8))
    return DType::I16;
  return rank_of(a) >= rank_of(b) ? a : b;
}

} // namespace unitile
