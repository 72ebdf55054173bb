// The auto-scheduler's inlining rule: which elementwise locals to substitute into their
// readers (the `inline` primitive, Inline.cpp).
#pragma once

#include "ir/Kernel.h"

#include <optional>
#include <set>
#include <string>

namespace unitile {

/// The first local of `k` (in statement order) worth inlining, or nullopt. A local
/// qualifies when one assignment writes it, every statement reading it is an elementwise
/// assignment (no reduction, no scatter), nothing it reads is rewritten before its last
/// reader, and either its expression is cheap (reads and arithmetic, no calls: a copy,
/// a layout change, a bias add), so repeating it per read costs nothing, or it is read
/// exactly once at a point per element it defines (no broadcast read), so inlining
/// computes every value once, as before, without the store and reload.
/// Locals in `refused` are skipped (the caller tried them and the schedule failed).
std::optional<std::string> next_inline_candidate(const Kernel& k, const ShapeBindings& b,
                                                 const std::set<std::string>& refused = {});

} // namespace unitile
