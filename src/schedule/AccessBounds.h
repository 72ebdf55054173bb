// The static bounds check: every unguarded access must stay inside its tensor for the
// bound shapes.
//
// Generated code does no bounds checks (that is what makes it fast), so an index that
// can leave its tensor is a memory error on the device. With concrete shapes, every
// loop range is known, and for affine indices (plus `//` and `%` by constants) the range
// of each index can be computed at compile time. Doing it here turns a silent wrong
// answer or a crash into an error that names the access and the offending range; reads
// that are meant to run off the edge (padding) say so with a guard: `X[i-1] ?? 0`.
#pragma once

#include "ir/Expr.h"
#include "schedule/IndexArith.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace unitile {

using ConcreteShapes = std::map<std::string, std::vector<int64_t>>;

/// Check `store` (the output access, written) and every unguarded read in `value`
/// against `shapes`, with each loop variable ranging over `loops`. Expressions must be
/// specialised (constants folded in). Guarded reads are skipped: out-of-range reads
/// give their guard. Data-dependent indices (`X[Idx[i]]`) are left to run time; the
/// reads inside them are checked. Throws UserError naming `kernel`, the access and its location.
void check_access_bounds(const std::string& kernel, const Expr& store, const Expr& value,
                         const ConcreteShapes& shapes, const LoopExtents& loops);

} // namespace unitile
