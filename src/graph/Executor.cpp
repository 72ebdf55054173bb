// Running a graph: passes, partition, memory plan, one compiled kernel per group, and
// runs that pass device tensors from kernel to kernel without touching the host.
#include "graph/Executor.h"

#include "graph/GraphRewrite.h"
#include "graph/GraphText.h"
#include "graph/Passes.h"
#include "ir/Diagnostic.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

namespace unitile::graph {

Graph prepare_for_execution(const Graph& g) {
  const Graph cleaned = eliminate_dead_code(eliminate_common_subexpressions(eliminate_dead_code(g)));
  GraphRewrite rw(cleaned);
  for (size_t n = 0; n < cleaned.nodes().size(); ++n) rw.copy(n);
  std::vector<ValueId> outs;
  std::set<ValueId> seen;
  for (ValueId v : cleaned.outputs()) {
    ValueId mapped = rw.map(v);
    if (cleaned.value(v).producer < 0 || !seen.insert(v).second) mapped = rw.graph().add_node("copy", {mapped}, {}, "").front();
    outs.push_back(mapped);
  }
  return rw.finish(std::move(outs));
}

ValueId view_source(const Graph& g, const FusionGroup& group) {
  // The port carrying the data, per reshaping op (the others only give a shape).
  static const std::map<std::string, std::string> data_port = {
      {"reshape", "X"},       {"flatten", "X"},       {"squeeze", "X"},       {"unsqueeze", "X"},
      {"reshape_grad", "dY"}, {"flatten_grad", "dY"}, {"squeeze_grad", "dY"}, {"unsqueeze_grad", "dY"}};
  if (group.outputs.size() != 1 || group.nodes.empty()) return -1;
  const std::vector<ValueId>& returned = g.outputs();
  if (std::find(returned.begin(), returned.end(), group.outputs[0]) != returned.end()) return -1;
  ValueId source = -1, current = -1;
  for (size_t n : group.nodes) {
    const Node& node = g.nodes()[n];
    auto port = data_port.find(node.op);
    if (port == data_port.end() || node.outputs.size() != 1) return -1;
    ValueId data = -1;
    for (const auto& [name, v] : node.inputs)
      if (name == port->second) data = v;
    if (data < 0) return -1;
    if (current < 0) {
      if (std::find(group.inputs.begin(), group.inputs.end(), data) == group.inputs.end()) return -1;
      source = data;
    } else if (data != current) {
      return -1; // not a chain
    }
    const Value& in = g.value(data);
    const Value& out = g.value(node.outputs[0].second);
    if (in.type.dtype != out.type.dtype || shape_numel(in.type.shape) != shape_numel(out.type.shape)) return -1;
    current = node.outputs[0].second;
  }
  return current == group.outputs[0] ? source : -1;
}

GraphExecutor::GraphExecutor(Session& session, Graph g, ExecutorOptions opts)
    : session_(session), opts_(std::move(opts)), graph_(prepare_for_execution(g)) {
  if (graph_.outputs().empty()) throw UserError(fmt::format("error: graph {} returns nothing", opts_.name));
  partition_ = partition_graph(graph_, FusionOptions{opts_.fuse, opts_.max_group_nodes});
  std::map<ValueId, ValueId> views;
  for (const FusionGroup& group : partition_.groups)
    if (ValueId source = view_source(graph_, group); source >= 0) views[group.outputs[0]] = source;
  if (opts_.plan_memory) plan_ = plan_memory(graph_, partition_, views);
  size_t placeholder_bytes = 0;
  for (size_t i = 0; i < partition_.groups.size(); ++i) {
    GroupKernel k;
    const FusionGroup& group = partition_.groups[i];
    if (group.outputs.empty()) {
      k.runs_nothing = true;
      kernels_.push_back(std::move(k));
      continue;
    }
    for (ValueId v : group.shape_only) {
      const ops::TensorSpec& t = graph_.value(v).type;
      placeholder_bytes = std::max(placeholder_bytes, shape_numel(t.shape) * static_cast<size_t>(dtype_bytes(t.dtype)));
    }
    if (auto it = views.find(group.outputs.front()); it != views.end() && group.outputs.size() == 1) {
      k.view_of = it->second;
      k.output_buffers.push_back(-1);
      kernels_.push_back(std::move(k));
      continue;
    }
    k.source = graph_kernel(group_graph(graph_, group), fmt::format("{}_k{}", opts_.name, i));
    k.compiled = session_.compile(k.source.kernel(), {});
    for (ValueId v : partition_.groups[i].outputs) k.output_buffers.push_back(plan_.buffer_of(v));
    kernels_.push_back(std::move(k));
  }
  for (size_t bytes : plan_.buffer_bytes)
    buffers_.push_back(std::make_shared<DeviceBuffer>(session_.device().alloc(std::max<size_t>(bytes, 1))));
  if (placeholder_bytes) placeholder_ = std::make_shared<DeviceBuffer>(session_.device().alloc(placeholder_bytes));
}

std::vector<DeviceTensor> GraphExecutor::run(const std::vector<DeviceTensor>& inputs) {
  const std::vector<ValueId>& ins = graph_.inputs();
  if (inputs.size() != ins.size())
    throw UserError(fmt::format("error: graph {} takes {} inputs, got {}", opts_.name, ins.size(), inputs.size()));
  std::vector<std::optional<DeviceTensor>> env(graph_.values().size());
  for (size_t i = 0; i < ins.size(); ++i) {
    const Value& v = graph_.value(ins[i]);
    const DeviceTensor& t = inputs[i];
    if (t.dtype != v.type.dtype || t.shape != v.type.shape || !t.buffer)
      throw UserError(fmt::format("error: graph {}: input '{}' must be {} but is {}", opts_.name, v.input_name,
                                  type_text(v.type), type_text(ops::TensorSpec{t.dtype, t.shape})));
    env[static_cast<size_t>(ins[i])] = t;
  }
  for (size_t gi = 0; gi < kernels_.size(); ++gi) {
    const FusionGroup& group = partition_.groups[gi];
    const GroupKernel& k = kernels_[gi];
    if (k.runs_nothing) continue;
    if (k.view_of >= 0) {
      const std::optional<DeviceTensor>& source = env[static_cast<size_t>(k.view_of)];
      UT_INTERNAL_ASSERT(source.has_value(), "a view is taken before the value it shows was computed");
      const ops::TensorSpec& type = graph_.value(group.outputs[0]).type;
      env[static_cast<size_t>(group.outputs[0])] = DeviceTensor{type.dtype, type.shape, source->buffer};
      continue;
    }
    std::map<std::string, DeviceTensor> in, into;
    for (size_t i = 0; i < group.inputs.size(); ++i) {
      const ValueId v = group.inputs[i];
      if (std::find(group.shape_only.begin(), group.shape_only.end(), v) != group.shape_only.end()) {
        // Read for its type alone: any storage of its size (it may never be computed).
        const ops::TensorSpec& type = graph_.value(v).type;
        in.emplace(k.source.inputs[i], DeviceTensor{type.dtype, type.shape, placeholder_});
        continue;
      }
      const std::optional<DeviceTensor>& t = env[static_cast<size_t>(v)];
      UT_INTERNAL_ASSERT(t.has_value(), "a kernel runs before the value it reads was computed");
      in.emplace(k.source.inputs[i], *t);
    }
    for (size_t i = 0; i < group.outputs.size(); ++i) {
      const int b = k.output_buffers[i];
      if (b < 0) continue;
      const ops::TensorSpec& type = graph_.value(group.outputs[i]).type;
      into.emplace(k.source.outputs[i], DeviceTensor{type.dtype, type.shape, buffers_[static_cast<size_t>(b)]});
    }
    std::map<std::string, DeviceTensor> out = session_.run_resident_into(*k.compiled, in, into, {});
    for (size_t i = 0; i < group.outputs.size(); ++i)
      env[static_cast<size_t>(group.outputs[i])] = out.at(k.source.outputs[i]);
  }
  std::vector<DeviceTensor> result;
  for (ValueId v : graph_.outputs()) result.push_back(*env[static_cast<size_t>(v)]);
  return result;
}

size_t GraphExecutor::kernel_count() const {
  return static_cast<size_t>(
      std::count_if(kernels_.begin(), kernels_.end(), [](const GroupKernel& k) { return k.compiled != nullptr; }));
}

std::string GraphExecutor::describe() const {
  const std::vector<size_t> order = partition_order(partition_);
  const std::vector<std::string> names = value_names(graph_, order);
  GraphPrintOptions po;
  po.order = order;
  po.comments_before = [&](size_t n) -> std::vector<std::string> {
    const int gi = partition_.group_of_node[n];
    if (gi < 0 || partition_.groups[static_cast<size_t>(gi)].nodes.front() != n) return {};
    const GroupKernel& k = kernels_[static_cast<size_t>(gi)];
    if (k.runs_nothing) return describe_group(partition_, static_cast<size_t>(gi), "", names);
    if (k.view_of >= 0)
      return {fmt::format("view (no kernel): {} shares the storage of {}", names[static_cast<size_t>(partition_.groups[static_cast<size_t>(gi)].outputs[0])],
                          names[static_cast<size_t>(k.view_of)])};
    return describe_group(partition_, static_cast<size_t>(gi), k.source.kernel().name, names);
  };
  if (opts_.plan_memory) po.trailer = describe_plan(plan_, names);
  return print_graph(graph_, opts_.name, po);
}

} // namespace unitile::graph
