// A graph of op calls as ONE Kernel IR kernel: each node's op is instantiated for its
// input types and its comprehensions are copied in with the tensors renamed; graph inputs
// are the kernel's inputs, graph outputs its outputs, every other value (and every op's
// own locals) a local. One kernel, so the scheduler sees the whole chain and can fuse it.
#pragma once

#include "graph/Graph.h"
#include "ir/Kernel.h"

#include <string>

namespace unitile::graph {

struct GraphKernel {
  std::string text; // the kernel as .ut text
  Module module;    // parsed and verified; module.kernels[0]
  std::vector<std::string> inputs, outputs; // tensor names, in graph order
  const Kernel& kernel() const { return module.kernels.front(); }
};

/// The kernel `name` computing `g`'s outputs (nodes that feed no output are left out).
/// Graph inputs keep their names; outputs are out0, out1, ...
GraphKernel graph_kernel(const Graph& g, const std::string& name);

} // namespace unitile::graph
