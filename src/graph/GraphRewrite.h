// Rebuilding a graph node by node: the passes copy the nodes they keep into a fresh
// graph with the same inputs, and this maps the old values to the new ones.
#pragma once

#include "graph/Graph.h"

#include <vector>

namespace unitile::graph {

class GraphRewrite {
public:
  /// A new graph with `from`'s inputs (same names, types and order) and no nodes yet.
  explicit GraphRewrite(const Graph& from);

  /// Copy node `n` of the old graph, its inputs mapped; its outputs map to the copies.
  void copy(size_t n);
  /// Make old value `v` stand for new value `to` (a node left out because it repeats one).
  void alias(ValueId v, ValueId to) { map_[static_cast<size_t>(v)] = to; }
  /// The new value for old value `v` (it must be an input or copied already).
  ValueId map(ValueId v) const;

  /// The graph being built, for passes that add nodes of their own.
  Graph& graph() { return to_; }

  /// The new graph, returning the old graph's outputs mapped.
  Graph finish();
  /// The new graph, returning `outputs` (values of the new graph).
  Graph finish(std::vector<ValueId> outputs);

private:
  const Graph& from_;
  Graph to_;
  std::vector<ValueId> map_;
};

/// The nodes some output of `g` depends on, in order, as a mask over g.nodes().
std::vector<bool> live_nodes(const Graph& g);

} // namespace unitile::graph
