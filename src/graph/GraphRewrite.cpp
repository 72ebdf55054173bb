// Rebuilding graphs for the passes (see GraphRewrite.h).
#include "graph/GraphRewrite.h"

#include "ir/Diagnostic.h"

namespace unitile::graph {

GraphRewrite::GraphRewrite(const Graph& from) : from_(from), map_(from.values().size(), -1) {
  for (ValueId v : from.inputs()) map_[static_cast<size_t>(v)] = to_.add_input(from.value(v).input_name, from.value(v).type);
}

ValueId GraphRewrite::map(ValueId v) const {
  const ValueId out = map_.at(static_cast<size_t>(v));
  UT_INTERNAL_ASSERT(out >= 0, "a pass read a value before copying its producer");
  return out;
}

void GraphRewrite::copy(size_t n) {
  const Node& node = from_.nodes()[n];
  std::vector<ValueId> inputs;
  std::vector<ops::TensorSpec> types;
  for (const auto& [port, v] : node.inputs) inputs.push_back(map(v));
  for (const auto& [port, v] : node.outputs) types.push_back(from_.value(v).type);
  const std::vector<ValueId> outs = to_.copy_node(node, inputs, types);
  for (size_t i = 0; i < outs.size(); ++i) map_[static_cast<size_t>(node.outputs[i].second)] = outs[i];
}

Graph GraphRewrite::finish() {
  std::vector<ValueId> outs;
  for (ValueId v : from_.outputs()) outs.push_back(map(v));
  return finish(std::move(outs));
}

Graph GraphRewrite::finish(std::vector<ValueId> outputs) {
  to_.set_outputs(std::move(outputs));
  return std::move(to_);
}

std::vector<bool> live_nodes(const Graph& g) {
  std::vector<bool> live(g.nodes().size(), false);
  std::vector<ValueId> work = g.outputs();
  while (!work.empty()) {
    const ValueId v = work.back();
    work.pop_back();
    const int p = g.value(v).producer;
    if (p < 0 || live[static_cast<size_t>(p)]) continue;
    live[static_cast<size_t>(p)] = true;
    for (const auto& [port, in] : g.nodes()[static_cast<size_t>(p)].inputs) work.push_back(in);
  }
  return live;
}

} // namespace unitile::graph
