// The default schedule: for one comprehension, which loop order to use, where the
// partial result lives, which loop goes on the grid and which is vectorized.
//
// It is the plain schedule every kernel gets before tuning, so it must be correct for
// every kernel and never pathologically slow. The reasoning:
//
// - The innermost loop decides whether memory is streamed or strided, so it is chosen
//   first: the variable that is the unit-stride (last) index of the most data. Each
//   access (the store and every read) votes for the variables it is unit-stride in,
//   with a weight equal to the number of elements it can touch (the product of the
//   extents of the loop variables in its indices). Weighting by size is what keeps
//   softmax's `m[i] max= X[i,j]` streaming along the rows of X instead of along the
//   tiny m; a plain count would tie there. Ties go to the last left-hand variable.
// - Assignments loop over their left-hand variables in order; the last one is innermost
//   and unit-stride for the store.
// - A reduction whose chosen innermost variable is spatial, with an output that already
//   is its own compute type (f32, f64, i32, i64), accumulates in place in the output:
//   [other spatial][reduction][that variable], after a nest that stores the identity.
//   This is the classic i,k,j matmul: j innermost, unit-stride for C and B.
// - Every other reduction accumulates in a one-element register buffer of the compute
//   type ([spatial][reduction], one cast store at the end): f16/bf16 outputs must not
//   accumulate in 16 bits, and an innermost reduction axis then needs no store at all.
// - The outermost spatial loop becomes grid.x, one block per iteration (blocks are
//   independent, since each writes its own output slice). A nest whose outermost loop is
//   a reduction axis stays a single block: a reduction axis must not be split across
//   blocks that would race on the output.
// - The innermost loop is vectorized when it is spatial, unit-stride for the store,
//   and every read is either independent of it or unit-stride in it. Guarded reads that
//   move with it keep it serial: their per-lane range test defeats plain SIMD loads.
#pragma once

#include "hcd/Hcd.h"
#include "ir/Kernel.h"
#include "schedule/IndexArith.h"

#include <string>
#include <vector>

namespace unitile {

enum class AccumulateIn : uint8_t {
  Nothing,  // an assignment
  Output,   // init nest, then accumulate in place in the output tensor
  Register, // a one-element register accumulator in the compute type
};

struct NestPlan {
  /// Loop variables, outermost first. For AccumulateIn::Output this is the accumulate
  /// nest; the init nest loops over the spatial variables of `order` in the same order.
  std::vector<std::string> order;
  AccumulateIn accumulate = AccumulateIn::Nothing;
  bool grid_outermost = false;    // order[0] is spatial and becomes grid.x
  bool vectorize_innermost = false; // order.back() becomes a vectorized loop
};

/// Choose the nest for comprehension `c` writing `store` (the output access over its
/// left-hand variables) with element value `value` (both specialised). `out` is the
/// output's dtype; `loops` holds the extent of every index variable of `c`.
/// `output_row_innermost`: for a reduction, make the output's last index innermost
/// whenever the store and every read that moves with it are unit-stride in it (the
/// update nest a schedule will tile: i, k, j for a matmul, even when A is the largest
/// operand and would otherwise pull k innermost).
NestPlan plan_nest(const Comprehension& c, const Expr& store, const Expr& value, DType out,
                   const LoopExtents& loops, const hcd::Hcd& hcd, bool output_row_innermost = false);

} // namespace unitile
