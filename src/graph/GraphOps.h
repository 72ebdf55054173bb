// Ops the tracer needs that the operator library does not have (yet): transpose,
// reshape, slice, cast, constant and copy, written like library ops (an OpDef
// whose generator writes Kernel IR through OpContext). The library's op of the same name
// wins, so each of these retires when the library grows it.
#pragma once

#include "ops/Op.h"

#include <string_view>

namespace unitile::graph {

/// The graph's own op named `name`, or nullptr.
const ops::OpDef* find_graph_op(std::string_view name);
/// Every graph-local op, sorted by name.
const std::vector<ops::OpDef>& graph_ops();

} // namespace unitile::graph
