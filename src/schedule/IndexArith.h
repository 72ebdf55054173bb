// Affine forms and value intervals of index expressions over loop ranges.
//
// Two questions about an index decide the default schedule and the bounds check: "how
// does it move when loop v steps by one" (is an access unit-stride in v?) and "which
// values can it take over the whole loop nest" (can it leave its tensor?). Both are
// answered exactly for affine indices; `//` and `%` by positive constants get sound
// (possibly loose) intervals. Anything else is reported as unknown, never guessed.
#pragma once

#include "ir/Expr.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace unitile {

/// sum(coef[v] * v) + constant over loop variables.
struct AffineForm {
  std::map<std::string, int64_t> coef; // no zero entries
  int64_t constant = 0;
  int64_t coefficient(const std::string& v) const;
};

/// The affine form of an integer expression, or nullopt when it is not affine in the
/// variables (a product of two variables, `//`, `%`, a select, an access ...).
std::optional<AffineForm> linearize(const Expr& e);

struct Interval {
  int64_t min = 0, max = 0; // inclusive
};

/// Loop ranges: each variable v takes every value in [0, extent).
using LoopExtents = std::map<std::string, int64_t>;

/// Every value `e` can take while each loop variable ranges over its extent; nullopt
/// when the expression cannot be bounded (a variable without an extent, an access, a
/// division by something that is not a positive constant).
std::optional<Interval> bounds_of(const Expr& e, const LoopExtents& loops);

/// Whether `e` mentions variable `v`.
bool depends_on(const Expr& e, const std::string& v);

/// Whether stepping `v` by one moves `access` by one element: its last index is affine
/// with coefficient 1 in `v` and no other index mentions `v`. False for rank 0.
bool unit_stride_in(const Expr& access, const std::string& v);

} // namespace unitile
