// Index simplification of Kernel IR: floor division and modulo of affine indices by
// constants, resolved from the index variables' ranges.
#pragma once

#include "ir/Kernel.h"
#include "schedule/IndexArith.h"

namespace unitile {

/// `x // d` or `x % d` (`e`, with `d` a positive constant and `x` affine in variables of
/// `ranges`) rewritten without the division where the ranges allow it:
/// `(i*512 + j) // 512` is `i` and `(i*512 + j) % 512` is `j` when 0 <= j < 512, and
/// `(i*512 + j) // 32768` is `i // 64`. Returns `e` itself when nothing applies.
Expr simplify_div_mod(const Expr& e, const LoopExtents& ranges);

/// The kernel with every index expression simplified as above, the ranges of each
/// statement's index variables evaluated under `b`. Reshapes, flattens and the
/// layout changes a graph kernel composes write `(flat index) // n` and `% n`; without
/// this their copies are scalar loops of integer divisions, and the statements that read
/// them cannot be recognised as unit-stride, vectorized or inlined.
Kernel simplify_indices(const Kernel& k, const ShapeBindings& b);

} // namespace unitile
