// Fusion: the graph partitioned into kernels. Why: one kernel per op writes every
// intermediate to memory and launches once per op; one kernel for the whole graph gives
// the scheduler statements it cannot schedule well together (a GEMM after a row chain)
// and compile times that grow with the model. Groups that follow the scheduler's own
// fusion rules (GEMM + epilogue, per-row chains, maps) get both: few launches and
// kernels the auto-scheduler knows how to make fast. The rules are in Fusion.h.
#include "graph/Fusion.h"

#include "graph/DataReads.h"
#include "graph/GraphRewrite.h"
#include "ir/Diagnostic.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <queue>
#include <set>

namespace unitile::graph {

FusionClass fusion_class(const ops::OpDef& op) {
  const std::string& c = op.category;
  if (c == "elementwise" || c == "data-movement" || c == "data movement" || c == "creation")
    return FusionClass::Map;
  if (c == "reduction" || c == "normalization" || c == "loss" || c == "elementwise-backward" ||
      c == "reduction-backward" || c == "normalization-backward" || c == "data-movement-backward" ||
      c == "loss-backward")
    return FusionClass::Reduction;
  if (c == "matmul") return FusionClass::Contraction;
  return FusionClass::Opaque;
}

const char* fusion_class_name(FusionClass c) {
  switch (c) {
  case FusionClass::Map: return "map";
  case FusionClass::Reduction: return "reduction";
  case FusionClass::Contraction: return "contraction";
  case FusionClass::Opaque: return "opaque";
  }
  return "?";
}

namespace {

struct Building {
  std::vector<size_t> nodes;
  std::set<int> reads_from; // groups it reads values of
  std::set<ValueId> reads;  // every value its nodes read
  bool contraction = false, reduction = false, opaque = false;
  std::string why;
};

class Partitioner {
public:
  Partitioner(const Graph& g, const FusionOptions& opts)
      : g_(g), opts_(opts), live_(live_nodes(g)), data_reads_(data_reads(g, live_)) {
    readers_.assign(g.values().size(), 0);
    for (size_t n = 0; n < g.nodes().size(); ++n) {
      if (!live_[n]) continue;
      const Node& node = g.nodes()[n];
      for (size_t i = 0; i < node.inputs.size(); ++i)
        if (data_reads_[n][i]) ++readers_[static_cast<size_t>(node.inputs[i].second)];
    }
    for (ValueId v : g.outputs()) ++readers_[static_cast<size_t>(v)]; // a returned value is read outside
  }

  Partition run() {
    group_of_.assign(g_.nodes().size(), -1);
    for (size_t n = 0; n < g_.nodes().size(); ++n) {
      if (!live_[n]) continue;
      const FusionClass cls = fusion_class(graph_op(g_.nodes()[n].op));
      int target = -1;
      if (opts_.fuse) {
        // The producers' groups, latest first: a node most often continues the chain it
        // just read from.
        std::vector<int> producers = producer_groups(n);
        std::sort(producers.rbegin(), producers.rend());
        for (int grp : producers)
          if (can_join(grp, n, cls, producers)) {
            target = grp;
            break;
          }
        // Else a sibling: the latest group of maps and reductions that reads one of the
        // same values, so the value is read by one kernel instead of two. Only recent
        // groups are looked at, which keeps the pass linear in the graph.
        constexpr int kSiblingWindow = 32;
        const int newest = static_cast<int>(groups_.size()) - 1;
        for (int grp = newest; target < 0 && grp >= 0 && grp > newest - kSiblingWindow; --grp)
          if (!groups_[static_cast<size_t>(grp)].contraction && reads_any(grp, n) && can_join(grp, n, cls, producers))
            target = grp;
      }
      if (target < 0) {
        target = static_cast<int>(groups_.size());
        groups_.emplace_back();
        groups_.back().why = cls == FusionClass::Contraction ? "contraction"
                             : cls == FusionClass::Opaque     ? "opaque op (a group of its own)"
                             : cls == FusionClass::Reduction  ? "row chain"
                                                              : "maps";
      }
      Building& b = groups_[static_cast<size_t>(target)];
      if (cls == FusionClass::Map && b.contraction && b.why == "contraction") b.why = "contraction + epilogue";
      if (cls == FusionClass::Reduction && !b.reduction && b.why == "maps") b.why = "row chain";
      b.nodes.push_back(n);
      b.contraction = b.contraction || cls == FusionClass::Contraction;
      b.reduction = b.reduction || cls == FusionClass::Reduction;
      b.opaque = b.opaque || cls == FusionClass::Opaque;
      group_of_[n] = target;
      for (const auto& [port, v] : g_.nodes()[n].inputs) b.reads.insert(v);
      for (int p : producer_groups(n))
        if (p != target) b.reads_from.insert(p);
    }
    return finish();
  }

private:
  std::vector<int> producer_groups(size_t n) const {
    std::vector<int> out;
    for (const auto& [port, v] : g_.nodes()[n].inputs) {
      const int p = g_.value(v).producer;
      if (p < 0) continue;
      const int grp = group_of_[static_cast<size_t>(p)];
      if (std::find(out.begin(), out.end(), grp) == out.end()) out.push_back(grp);
    }
    return out;
  }

  bool reads_any(int grp, size_t n) const {
    const Building& b = groups_[static_cast<size_t>(grp)];
    for (const auto& [port, v] : g_.nodes()[n].inputs)
      if (b.reads.count(v)) return true;
    return false;
  }

  // Whether group `from` reads (directly or through other groups) a value of `target`.
  bool depends_on(int from, int target) const {
    std::vector<int> work{from};
    std::set<int> seen;
    while (!work.empty()) {
      const int x = work.back();
      work.pop_back();
      if (x == target) return true;
      if (!seen.insert(x).second) continue;
      for (int y : groups_[static_cast<size_t>(x)].reads_from) work.push_back(y);
    }
    return false;
  }

  bool can_join(int grp, size_t n, FusionClass cls, const std::vector<int>& producers) const {
    const Building& b = groups_[static_cast<size_t>(grp)];
    if (b.nodes.size() >= opts_.max_group_nodes || b.opaque) return false;
    if (cls == FusionClass::Opaque || cls == FusionClass::Contraction) return false;
    if (b.contraction) {
      // An epilogue: an elementwise op over the contraction's result space, reading
      // values of the group that nothing else reads (so the GEMM result never has to
      // be written out for another reader).
      if (cls != FusionClass::Map || graph_op(g_.nodes()[n].op).category != "elementwise") return false;
      const Node& node = g_.nodes()[n];
      for (const auto& [port, v] : node.inputs) {
        const int p = g_.value(v).producer;
        if (p < 0 || group_of_[static_cast<size_t>(p)] != grp) continue;
        if (readers_[static_cast<size_t>(v)] != 1) return false;
        for (const auto& [oport, out] : node.outputs)
          if (g_.value(out).type.shape != g_.value(v).type.shape) return false;
      }
    }
    // No cycle: no other group this node reads may itself wait on `grp`.
    for (int other : producers)
      if (other != grp && depends_on(other, grp)) return false;
    return true;
  }

  Partition finish() {
    // Order groups so each runs after the groups it reads (Kahn, lowest index first).
    const size_t count = groups_.size();
    std::vector<int> pending(count, 0);
    std::vector<std::vector<int>> readers(count);
    for (size_t i = 0; i < count; ++i)
      for (int p : groups_[i].reads_from) {
        ++pending[i];
        readers[static_cast<size_t>(p)].push_back(static_cast<int>(i));
      }
    std::priority_queue<int, std::vector<int>, std::greater<>> ready;
    for (size_t i = 0; i < count; ++i)
      if (pending[i] == 0) ready.push(static_cast<int>(i));
    std::vector<int> order;
    while (!ready.empty()) {
      const int i = ready.top();
      ready.pop();
      order.push_back(i);
      for (int r : readers[static_cast<size_t>(i)])
        if (--pending[static_cast<size_t>(r)] == 0) ready.push(r);
    }
    UT_INTERNAL_ASSERT(order.size() == count, "fusion made a cycle between groups");

    Partition p;
    std::vector<int> position(count);
    for (size_t k = 0; k < order.size(); ++k) position[static_cast<size_t>(order[k])] = static_cast<int>(k);
    p.group_of_node.assign(g_.nodes().size(), -1);
    for (size_t n = 0; n < g_.nodes().size(); ++n)
      if (group_of_[n] >= 0) p.group_of_node[n] = position[static_cast<size_t>(group_of_[n])];
    std::set<ValueId> returned(g_.outputs().begin(), g_.outputs().end());
    for (int gi : order) {
      const Building& b = groups_[static_cast<size_t>(gi)];
      FusionGroup fg;
      fg.nodes = b.nodes;
      fg.why = b.why;
      const int self = position[static_cast<size_t>(gi)];
      std::set<ValueId> data_read; // outside values some node of the group reads the data of
      for (size_t n : b.nodes) {
        const Node& node = g_.nodes()[n];
        for (size_t i = 0; i < node.inputs.size(); ++i) {
          const ValueId v = node.inputs[i].second;
          const int prod = g_.value(v).producer;
          const bool outside = prod < 0 || p.group_of_node[static_cast<size_t>(prod)] != self;
          if (!outside) continue;
          if (std::find(fg.inputs.begin(), fg.inputs.end(), v) == fg.inputs.end()) fg.inputs.push_back(v);
          if (data_reads_[n][i]) data_read.insert(v);
        }
      }
      for (ValueId v : fg.inputs)
        if (!data_read.count(v)) fg.shape_only.push_back(v);
      p.groups.push_back(std::move(fg));
    }
    // Outputs: values whose data another group reads, or returned.
    for (size_t gi = 0; gi < p.groups.size(); ++gi) {
      FusionGroup& fg = p.groups[gi];
      for (size_t n : fg.nodes)
        for (const auto& [port, v] : g_.nodes()[n].outputs) {
          bool needed = returned.count(v) > 0;
          for (size_t other = 0; other < p.groups.size() && !needed; ++other) {
            const FusionGroup& o = p.groups[other];
            needed = other != gi && std::find(o.inputs.begin(), o.inputs.end(), v) != o.inputs.end() &&
                     std::find(o.shape_only.begin(), o.shape_only.end(), v) == o.shape_only.end();
          }
          if (needed) fg.outputs.push_back(v);
        }
    }
    return p;
  }

  const Graph& g_;
  const FusionOptions& opts_;
  std::vector<bool> live_;
  std::vector<std::vector<bool>> data_reads_; // per live node, per input: read for its data
  std::vector<int> readers_;                  // per value: the nodes reading its data (+1 if returned)
  std::vector<int> group_of_;
  std::vector<Building> groups_;
};

} // namespace

Partition partition_graph(const Graph& g, const FusionOptions& opts) { return Partitioner(g, opts).run(); }

Graph group_graph(const Graph& g, const FusionGroup& group) {
  Graph sub;
  std::map<ValueId, ValueId> map;
  std::set<std::string> taken;
  for (ValueId v : group.inputs)
    if (g.value(v).producer < 0) taken.insert(g.value(v).input_name);
  for (ValueId v : group.inputs) {
    const Value& val = g.value(v);
    std::string name = val.input_name;
    if (val.producer >= 0) {
      name = fmt::format("v{}", v);
      while (!taken.insert(name).second) name += "_";
    }
    map[v] = sub.add_input(name, val.type);
  }
  for (size_t n : group.nodes) {
    const Node& node = g.nodes()[n];
    std::vector<ValueId> inputs;
    std::vector<ops::TensorSpec> types;
    for (const auto& [port, v] : node.inputs) inputs.push_back(map.at(v));
    for (const auto& [port, v] : node.outputs) types.push_back(g.value(v).type);
    const std::vector<ValueId> outs = sub.copy_node(node, inputs, types);
    for (size_t i = 0; i < outs.size(); ++i) map[node.outputs[i].second] = outs[i];
  }
  std::vector<ValueId> outs;
  for (ValueId v : group.outputs) outs.push_back(map.at(v));
  sub.set_outputs(outs);
  return sub;
}

std::vector<std::string> describe_group(const Partition& p, size_t i, const std::string& kernel_name,
                                        const std::vector<std::string>& names) {
  const FusionGroup& fg = p.groups[i];
  std::vector<std::string> ins, shapes, outs;
  for (ValueId v : fg.inputs)
    (std::find(fg.shape_only.begin(), fg.shape_only.end(), v) == fg.shape_only.end() ? ins : shapes)
        .push_back(names[static_cast<size_t>(v)]);
  for (ValueId v : fg.outputs) outs.push_back(names[static_cast<size_t>(v)]);
  const std::string shape_text = shapes.empty() ? "" : fmt::format("; the shape of {}", fmt::join(shapes, ", "));
  if (outs.empty())
    return {fmt::format("no kernel ({}, {} node{}): nothing reads the data of its values", fg.why, fg.nodes.size(),
                        fg.nodes.size() == 1 ? "" : "s")};
  return {fmt::format("kernel {} ({}, {} node{}): reads {}{}; writes {}", kernel_name, fg.why, fg.nodes.size(),
                      fg.nodes.size() == 1 ? "" : "s", ins.empty() ? "nothing" : fmt::format("{}", fmt::join(ins, ", ")),
                      shape_text, fmt::join(outs, ", "))};
}

std::vector<size_t> partition_order(const Partition& p) {
  std::vector<size_t> order;
  for (const FusionGroup& fg : p.groups) order.insert(order.end(), fg.nodes.begin(), fg.nodes.end());
  return order;
}

} // namespace unitile::graph
