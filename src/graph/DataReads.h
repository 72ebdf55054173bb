// Which inputs of a graph node its op reads the data of, as opposed to taking them only
// for their type. Gradient ops take forward values for their shape alone (slice_grad's
// X, reshape_grad's X, the vjp of a transpose or of an add): the partition and the
// memory plan use this so that such a value is not written out by the forward kernels,
// kept alive until the backward pass, nor counted as a reader that blocks fusion.
#pragma once

#include "graph/Graph.h"

#include <vector>

namespace unitile::graph {

/// One entry per `node.inputs` entry: whether the op's kernel (instantiated for the
/// node's input types) reads that tensor anywhere (values, indices, guards).
std::vector<bool> data_read_inputs(const Graph& g, const Node& node);

/// data_read_inputs for every node of `g` (empty vectors for nodes not `live`).
std::vector<std::vector<bool>> data_reads(const Graph& g, const std::vector<bool>& live);

} // namespace unitile::graph
