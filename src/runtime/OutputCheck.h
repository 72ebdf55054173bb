// Comparing a device's outputs with the sim reference: per-dtype tolerances and the
// `check: ok` / `check: FAILED` report of `unitile run --check`.
#pragma once

#include "ir/Kernel.h"
#include "runtime/Tensor.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace unitile {

/// Elementwise pass iff |x - ref| <= atol + rtol*|ref| (NaN where ref is NaN).
struct Tolerance {
  double atol = 0;
  double rtol = 0; // both 0: exact (integers, bool)
};

/// f64 1e-9/1e-9; f32 rtol 1e-4 and atol 1e-4*sqrt(K) for the longest reduction extent
/// K (a sum of K terms carries about sqrt(K) roundings); f16 atol 1e-3 rtol 2e-3; bf16
/// atol 1e-2 rtol 1.6e-2; integers and bool exact.
Tolerance tolerance_for(DType t, int64_t longest_reduction);

/// The longest reduction extent of any comprehension of `k` under `b` (1 if none).
int64_t longest_reduction_extent(const Kernel& k, const ShapeBindings& b);

struct OutputMismatch {
  std::string output;
  std::string index;  // "[i, j]"
  double got = 0, expected = 0;
  double max_abs_err = 0; // of this output
  size_t bad = 0, total = 0;
};

struct CheckReport {
  double max_abs_err = 0; // over every output
  std::optional<OutputMismatch> failure; // the first failing output, in `order`
  bool ok() const { return !failure; }
  /// "check: ok max_abs_err=X" or "check: FAILED OUT at [i, j]: got A, expected B
  /// (max_abs_err=X, N of M elements outside tolerance)".
  std::string message() const;
};

/// Compare `got` with `ref` output by output, in `order`. Shapes and dtypes must agree
/// (they come from the same kernel; a difference is an InternalError).
CheckReport compare_outputs(const std::vector<std::string>& order, const std::map<std::string, Tensor>& got,
                            const std::map<std::string, Tensor>& ref, int64_t longest_reduction);

} // namespace unitile
