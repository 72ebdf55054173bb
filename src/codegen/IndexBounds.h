// Integer interval analysis over index expressions, so the C printer can drop bounds tests
// that always pass and print plain `/` and `%` where both operands are provably
// non-negative (C and Python semantics agree there, and the plain operators keep index
// arithmetic as fast as hand-written C).
#pragma once

#include "ir/Expr.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace unitile::codegen {

/// A closed range [lo, hi] of integer values.
struct Interval {
  int64_t lo = 0;
  int64_t hi = 0;
};

/// Known ranges of the variables in scope (loop variables, lets).
using IntervalEnv = std::map<std::string, Interval>;

/// The range of integer expression `e` given `env`, or nullopt when it is unknown (a
/// float, an unbounded variable, a possible overflow).
std::optional<Interval> bounds_of(const Expr& e, const IntervalEnv& env);

/// True when `e` is provably >= 0.
bool provably_non_negative(const Expr& e, const IntervalEnv& env);

} // namespace unitile::codegen
