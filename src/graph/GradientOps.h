// The graph's own gradient ops: `vjp`, which differentiates any op whose kernel the
// comprehension differentiator (DeriveVjp.h) can handle, and the registered gradients of
// graph ops that cannot be derived (slice_grad: its reads have computed indices).
#pragma once

#include "ops/Op.h"

#include <string>
#include <vector>

namespace unitile::graph {

/// The rows GraphOps.cpp adds to the graph's own ops.
std::vector<ops::OpDef> gradient_graph_ops();

/// What a `vjp` node needs to know about the forward node, as its attributes: the forward
/// op and its attributes (as JSON), the forward input ports bound to X0, X1, ..., then the
/// outputs whose cotangents follow them, and the inputs differentiated (outputs G0, ...).
ops::Attrs vjp_attrs(const std::string& op, const ops::Attrs& attrs,
                     const std::vector<std::string>& inputs,
                     const std::vector<std::string>& cotangents,
                     const std::vector<std::string>& wrt);

} // namespace unitile::graph
