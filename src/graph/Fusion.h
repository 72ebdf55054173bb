// Fusion: partitioning a graph's nodes into groups, each compiled as ONE Kernel IR
// kernel (graph_kernel of the group's subgraph), following the rules the scheduler can
// make fast (docs/ARCHITECTURE.md, "Graph IR"):
//   - elementwise and data-movement nodes fuse into the group of a producer;
//   - reductions and normalizations join a group of maps and reductions, so a row
//     chain (softmax's max, subtract, exp, sum, divide; layernorm's) stays together and
//     the scheduler runs it as one per-row launch;
//   - a contraction (matmul, gemm, linear) starts its own group and takes the
//     elementwise ops that follow it as an epilogue, but only while the value they read
//     has that one reader (a GEMM result read by several groups is materialised once);
//   - a map or reduction that can join no producer's group joins the latest group of
//     maps and reductions that reads one of the same values (siblings share the read);
//   - every other op (attention, convolution, pooling, indexing, optimizers, backward
//     ops of those) is a group of its own;
//   - nodes are never duplicated, so nothing is recomputed; a group never waits on a
//     group that waits on it (no cycles); groups hold at most max_group_nodes nodes;
//   - a value is a group's output only where another group reads its data (or the graph
//     returns it): an input a node takes for its type alone (DataReads.h) is no read, so a
//     group may have no outputs at all, and then runs nothing.
#pragma once

#include "graph/Graph.h"
#include "graph/GraphKernel.h"

#include <string>
#include <vector>

namespace unitile::graph {

/// How the partition treats an op, from its library category.
enum class FusionClass : uint8_t {
  Map,         // elementwise, data movement, constants
  Reduction,   // reductions, normalizations, losses, backward ops of maps and reductions
  Contraction, // matmul, gemm, linear, einsum
  Opaque,      // its own group
};
FusionClass fusion_class(const ops::OpDef& op);
const char* fusion_class_name(FusionClass c);

struct FusionOptions {
  bool fuse = true;            // false: one group per node
  size_t max_group_nodes = 16; // bounds each kernel's size, so compile times stay sane
};

struct FusionGroup {
  std::vector<size_t> nodes;    // indices into g.nodes(), in graph order
  std::vector<ValueId> inputs;  // values read from outside: graph inputs, other groups' outputs
  std::vector<ValueId> outputs; // values later groups read the data of, or the graph returns
  std::string why;              // which rule formed it ("contraction + epilogue", ...)
  /// The inputs whose data no node of the group reads: taken for their type alone (a
  /// gradient op's forward value). They are not written out for this group, may never be
  /// computed at all, and bind to any storage of their size.
  std::vector<ValueId> shape_only;
};

/// The groups in an order that runs them (every group after the groups it reads).
struct Partition {
  std::vector<FusionGroup> groups;
  std::vector<int> group_of_node; // node index -> group index (-1: a node left out)
};

/// Partition every node of `g` (run dead-code elimination first to leave dead ones out).
Partition partition_graph(const Graph& g, const FusionOptions& opts = {});

/// The group as a graph of its own: its inputs are the group's inputs (named after the
/// graph input, or v<ID> for a value computed elsewhere), its outputs the group's outputs.
Graph group_graph(const Graph& g, const FusionGroup& group);

/// The comment lines describing group `i` for the printer: its kernel, why it formed,
/// what it reads and writes (value names as `names` gives them).
std::vector<std::string> describe_group(const Partition& p, size_t i, const std::string& kernel_name,
                                        const std::vector<std::string>& names);

/// The node order in which the partition runs: group by group.
std::vector<size_t> partition_order(const Partition& p);

} // namespace unitile::graph
