// Reading and writing NumPy .npy files (format versions 1.0 and 2.0), C order only.
//
// Debian packages no .npy library, so this small, strict reader is the project's own.
// The header dict must hold exactly `descr`, `fortran_order` (False) and `shape`;
// anything else is refused with a message naming the file and what was wrong.
//
// dtype mapping: <f2 f16, <f4 f32, <f8 f64, |i1 i8, <i2 i16, <i4 i32, <i8 i64, |u1 u8,
// |b1 bool. NumPy has no bf16, so bf16 tensors are written as <u2 (the raw bits) and <u2
// is read only when the caller says the tensor is bf16.
#pragma once

#include "runtime/Tensor.h"

#include <optional>
#include <string>
#include <string_view>

namespace unitile {

/// The descr string a tensor of dtype `t` is written with ("<f4"; "<u2" for bf16).
std::string_view npy_descr(DType t);

/// The bytes of a .npy file holding `t` (version 1.0, or 2.0 when the header needs it).
std::string encode_npy(const Tensor& t);
/// Parse .npy bytes; `name` labels errors (usually the path). `as` resolves <u2 to bf16
/// and is otherwise not checked: the caller compares dtypes and names the tensor.
/// Malformed input is a UserError.
Tensor decode_npy(std::string_view bytes, const std::string& name,
                  std::optional<DType> as = std::nullopt);

Tensor read_npy(const std::string& path, std::optional<DType> as = std::nullopt);
void write_npy(const std::string& path, const Tensor& t);

} // namespace unitile
