// The graph passes, one per file: dead-code elimination (DeadCode.cpp) and
// common-subexpression elimination (CommonSubexpressions.cpp). Fusion and memory
// planning have their own headers (Fusion.h, MemoryPlan.h). Each pass returns a new
// graph with the same inputs and outputs, in the same order.
#pragma once

#include "graph/Graph.h"

namespace unitile::graph {

/// `g` without the nodes no output depends on; `removed` (when given) counts them.
Graph eliminate_dead_code(const Graph& g, size_t* removed = nullptr);

/// `g` with each node that repeats an earlier one (same op, same attributes, same input
/// values on the same ports) replaced by the earlier node's results; `removed` counts them.
Graph eliminate_common_subexpressions(const Graph& g, size_t* removed = nullptr);

} // namespace unitile::graph
