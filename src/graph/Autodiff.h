// Reverse-mode automatic differentiation of a graph: the nodes computing the gradient of
// a scalar loss with respect to chosen values, appended to the same graph.
//
// Nodes are visited in reverse order. A node whose op kernel the comprehension
// differentiator can handle (DeriveVjp.h) gets a `vjp` node (GradientOps.h) that derives
// its gradient when instantiated; any other node calls its op's registered `<op>_grad`.
// A value used several times receives the sum of its cotangents (add nodes). Integer,
// bool and index inputs get no gradient.
#pragma once

#include "graph/Graph.h"

#include <optional>
#include <vector>

namespace unitile::graph {

/// Append to `g` the nodes computing d(loss)/d(w) for every w in `wrt` (any values of g,
/// usually graph inputs); `loss` must be a rank-0 (or single-element) float value; `seed`
/// (optional) is a value holding d(final)/d(loss), default 1. Returns the gradient values
/// in `wrt` order (a zeros node when loss does not depend on w). Elementwise ops and
/// contractions are differentiated from their comprehensions; other ops use the
/// registered `<op>_grad`; an op with neither is a UserError naming the op and `where`.
std::vector<ValueId> append_gradients(Graph& g, ValueId loss, const std::vector<ValueId>& wrt,
                                      std::optional<ValueId> seed = std::nullopt);

} // namespace unitile::graph
