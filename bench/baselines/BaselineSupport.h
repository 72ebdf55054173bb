// What the three baseline libraries share: the last-error text, argument checks, and the
// plain causal-softmax loop the attention baseline and the loops library both use.
#pragma once

#include "baseline.h"

#include <cmath>
#include <cstdint>
#include <exception>
#include <string>

namespace unitile::bench_baseline {

inline std::string& last_error_text() {
  thread_local std::string text;
  return text;
}

// Record `why` as the last error; returns `value` so callers can `return fail(...)`.
template <typename T>
T fail(T value, const std::string& why) {
  last_error_text() = why;
  return value;
}

// Every size positive, and exactly `want` of them.
inline bool dims_ok(const int64_t* dims, int ndims, int want, const char* op) {
  if (ndims != want)
    return fail(false, std::string(op) + ": expected " + std::to_string(want) + " sizes, got " +
                           std::to_string(ndims));
  for (int i = 0; i < ndims; ++i)
    if (dims[i] <= 0) return fail(false, std::string(op) + ": sizes must be positive");
  return true;
}

// Row `row` of an n-wide score matrix, in place: softmax over columns 0..limit-1, zeros
// after (the causal mask keeps key j only when j <= the query's row).
inline void causal_softmax_row(float* row, int64_t n, int64_t limit) {
  float m = -INFINITY;
  for (int64_t j = 0; j < limit; ++j) m = row[j] > m ? row[j] : m;
  float sum = 0;
  for (int64_t j = 0; j < limit; ++j) {
    row[j] = std::exp(row[j] - m);
    sum += row[j];
  }
  const float inv = 1.0f / sum;
  for (int64_t j = 0; j < limit; ++j) row[j] *= inv;
  for (int64_t j = limit; j < n; ++j) row[j] = 0;
}

} // namespace unitile::bench_baseline

// The exported ub_last_error and ub_abi_version, defined once per library.
#define UB_DEFINE_COMMON_EXPORTS                                                                   \
  extern "C" const char* ub_last_error(void) {                                                     \
    return unitile::bench_baseline::last_error_text().c_str();                                     \
  }                                                                                                \
  extern "C" int ub_abi_version(void) { return UB_ABI_VERSION; }
