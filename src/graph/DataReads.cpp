// Data reads of graph nodes (see DataReads.h): the op instantiated for the node's input
// types, and the tensors its comprehensions access collected.
#include "graph/DataReads.h"

#include "ops/OpLibrary.h"

#include <map>
#include <set>
#include <string>

namespace unitile::graph {

std::vector<bool> data_read_inputs(const Graph& g, const Node& node) {
  std::map<std::string, ops::TensorSpec> specs;
  for (const auto& [port, v] : node.inputs) specs[port] = g.value(v).type;
  const ops::OpInstance inst = ops::instantiate(graph_op(node.op), specs, node.attrs);
  std::set<std::string> read;
  auto collect = [&](const Expr& e) {
    visit(e, [&](const Expr& n) {
      if (n->kind == ExprKind::Access) read.insert(n->name);
    });
  };
  for (const Comprehension& c : inst.kernel().body) {
    collect(c.value);
    for (const Expr& s : c.store_indices) collect(s);
  }
  // The op's kernel names its tensors after the ports (graph_kernel binds them so).
  std::vector<bool> out;
  for (const auto& [port, v] : node.inputs) out.push_back(read.count(port) > 0);
  return out;
}

std::vector<std::vector<bool>> data_reads(const Graph& g, const std::vector<bool>& live) {
  std::vector<std::vector<bool>> out(g.nodes().size());
  for (size_t n = 0; n < g.nodes().size(); ++n)
    if (n < live.size() && live[n]) out[n] = data_read_inputs(g, g.nodes()[n]);
  return out;
}

} // namespace unitile::graph
