// Common-subexpression elimination. Why: the tracer records every call as written, and
// reverse-mode autodiff recomputes the same forward pieces for several gradients
// (the same transpose, the same broadcast); computing one value twice doubles its
// kernel time and its memory. All ops are pure (dropout and random ops take their seed
// as an attribute or input), so two nodes with the same op, the same attributes and the
// same input values give the same results, and the later one can read the earlier's.
#include "graph/GraphRewrite.h"
#include "graph/GraphText.h"
#include "graph/Passes.h"

#include <fmt/core.h>

#include <map>

namespace unitile::graph {

Graph eliminate_common_subexpressions(const Graph& g, size_t* removed) {
  GraphRewrite rw(g);
  std::map<std::string, size_t> seen; // node key -> the first node with it
  size_t repeats = 0;
  for (size_t n = 0; n < g.nodes().size(); ++n) {
    const Node& node = g.nodes()[n];
    // The key: op, attributes as text (exact: floats print shortest round-trip), and the
    // new values bound to each port.
    std::string key = node.op + "(";
    for (const auto& [port, v] : node.inputs) key += fmt::format("{}={},", port, rw.map(v));
    key += "){";
    for (const auto& [name, value] : node.attrs) key += name + "=" + attr_text(value) + ",";
    key += "}";
    auto [it, first] = seen.emplace(key, n);
    if (first) {
      rw.copy(n);
      continue;
    }
    const Node& earlier = g.nodes()[it->second];
    for (size_t i = 0; i < node.outputs.size(); ++i)
      rw.alias(node.outputs[i].second, rw.map(earlier.outputs[i].second));
    ++repeats;
  }
  if (removed) *removed = repeats;
  return rw.finish();
}

} // namespace unitile::graph
