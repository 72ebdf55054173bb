// The inputs of a graph target (`unitile graph --run`, `unitile profile FILE.utg`): each
// from an --input NAME=FILE.npy, checked against the graph input's type, else random,
// seeded per input name.
#pragma once

#include "graph/GraphText.h"
#include "runtime/Tensor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace unitile::cli {

/// One host tensor per input of `g`, in g.inputs() order. An --input naming no input of
/// the graph, given twice, or holding another type is a UserError.
std::vector<Tensor> graph_host_inputs(const graph::NamedGraph& g, const std::vector<std::string>& input_flags,
                                      uint64_t seed);

} // namespace unitile::cli
