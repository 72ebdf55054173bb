// Host tensors: a dtype, a concrete shape and the elements as C-order bytes, plus the
// seeded random inputs `unitile run` feeds a kernel when no .npy file is given.
#pragma once

#include "ir/Type.h"

#include <cstdint>
#include <string>
#include <vector>

namespace unitile {

struct Tensor {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data; // numel() * dtype_bytes(dtype) bytes, C order, little-endian

  /// A tensor of zeros (all-zero bytes) of the given dtype and shape.
  static Tensor zeros(DType t, std::vector<int64_t> shape);

  size_t numel() const;
  size_t nbytes() const { return data.size(); }

  /// Element `i` (flat C-order index) as a double: f16/bf16 are widened exactly, integers
  /// converted (exact up to 2^53), bool is 0 or 1.
  double get(size_t i) const;
  /// Element `i` as an integer; for integer and bool tensors this is exact.
  int64_t get_int(size_t i) const;
  /// Store `v` into element `i`, rounded to the dtype (nearest-even for floats,
  /// truncated toward zero and wrapped for integers, nonzero -> true for bool).
  void set(size_t i, double v);
};

/// Number of elements of a shape (1 for rank 0); a negative extent is an InternalError.
size_t shape_numel(const std::vector<int64_t>& shape);
/// "[2, 3]"; "[]" for a scalar.
std::string shape_string(const std::vector<int64_t>& shape);
/// Multi-index "[i, j]" of flat C-order position `flat` in `shape`.
std::string index_string(const std::vector<int64_t>& shape, size_t flat);

/// Deterministic random contents, the same on every machine for the same seed and
/// stream: floats uniform in [-1, 1] rounded to the dtype, signed integers in [-8, 8],
/// u8 in [0, 8], bools fair coin flips. `stream` separates the tensors of one run (the
/// runtime hashes the input's name into it) so adding an input does not change others.
Tensor random_tensor(DType t, std::vector<int64_t> shape, uint64_t seed, uint64_t stream = 0);

} // namespace unitile
