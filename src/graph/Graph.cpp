// Building graphs: every node is instantiated when added, which checks it and gives its
// output types.
#include "graph/Graph.h"

#include "graph/GraphOps.h"
#include "ir/Diagnostic.h"
#include "ops/OpLibrary.h"

#include <fmt/core.h>

#include <algorithm>

namespace unitile::graph {

namespace {

// The error prefixed with the caller's location, when there is one.
UserError located(const UserError& e, const std::string& where) {
  if (where.empty()) return e;
  std::string msg = e.what();
  if (msg.starts_with("error: ")) msg = msg.substr(7);
  return UserError(fmt::format("{}: error: {}", where, msg));
}

} // namespace

const ops::OpDef& graph_op(const std::string& name) {
  // The graph's own ops first: the library has ops of the same names (cast, slice,
  // reshape, transpose) with ONNX's attributes, which the tracer does not write.
  if (const ops::OpDef* op = find_graph_op(name)) return *op;
  if (const ops::OpDef* op = ops::find_op(name)) return *op;
  return ops::op_or_error(name); // the library's "no op named ..." with suggestions
}

ValueId Graph::add_input(const std::string& name, ops::TensorSpec type) {
  for (ValueId v : inputs_)
    if (values_[static_cast<size_t>(v)].input_name == name)
      throw UserError(fmt::format("error: graph input '{}' is given twice", name));
  values_.push_back(Value{std::move(type), name, -1});
  inputs_.push_back(static_cast<ValueId>(values_.size() - 1));
  return inputs_.back();
}

std::vector<ValueId> Graph::add_node(const std::string& op_name, const std::vector<ValueId>& inputs,
                                     const ops::Attrs& attrs, const std::string& where) {
  std::vector<std::pair<std::string, ValueId>> bound;
  try {
    const ops::OpDef& op = graph_op(op_name);
    std::vector<std::string> ports;
    for (const ops::Port& p : op.inputs) {
      if (!p.variadic) {
        ports.push_back(p.name);
        continue;
      }
      for (size_t i = ports.size(), k = 0; i < inputs.size(); ++i, ++k) ports.push_back(p.name + std::to_string(k));
    }
    if (inputs.size() > ports.size())
      throw UserError(fmt::format("error: op:{} takes at most {} inputs, got {}", op_name, ports.size(), inputs.size()));
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i] == kAbsent) {
        const ops::Port* port = nullptr;
        for (const ops::Port& p : op.inputs)
          if (p.name == ports[i]) port = &p;
        if (port == nullptr || !port->optional)
          throw UserError(fmt::format("error: op:{}: input '{}' is not optional", op_name, ports[i]));
        continue;
      }
      bound.emplace_back(ports[i], inputs[i]);
    }
  } catch (const UserError& e) {
    throw located(e, where);
  }
  return add_node_ports(op_name, bound, attrs, where);
}

std::vector<ValueId> Graph::add_node_ports(const std::string& op_name,
                                           const std::vector<std::pair<std::string, ValueId>>& inputs,
                                           const ops::Attrs& attrs, const std::string& where) {
  try {
    const ops::OpDef& op = graph_op(op_name);
    Node n;
    n.op = op_name;
    n.attrs = attrs;
    n.where = where;
    std::map<std::string, ops::TensorSpec> specs;
    for (const auto& [port, v] : inputs) {
      UT_INTERNAL_ASSERT(v >= 0 && static_cast<size_t>(v) < values_.size(), "unknown graph value");
      if (specs.count(port)) throw UserError(fmt::format("error: op:{}: input '{}' is given twice", op_name, port));
      n.inputs.emplace_back(port, v);
      specs[port] = values_[static_cast<size_t>(v)].type;
    }
    const ops::OpInstance inst = ops::instantiate(op, specs, attrs);
    n.attrs = inst.attrs;
    std::vector<ValueId> out;
    for (const auto& [port, spec] : inst.outputs) {
      values_.push_back(Value{spec, {}, static_cast<int>(nodes_.size())});
      out.push_back(static_cast<ValueId>(values_.size() - 1));
      n.outputs.emplace_back(port, out.back());
    }
    nodes_.push_back(std::move(n));
    return out;
  } catch (const UserError& e) {
    throw located(e, where);
  }
}

std::vector<ValueId> Graph::copy_node(const Node& node, const std::vector<ValueId>& inputs,
                                      const std::vector<ops::TensorSpec>& output_types) {
  UT_INTERNAL_ASSERT(inputs.size() == node.inputs.size() && output_types.size() == node.outputs.size(),
                     "copy_node: inputs or outputs do not match the node");
  Node n = node;
  for (size_t i = 0; i < inputs.size(); ++i) {
    UT_INTERNAL_ASSERT(inputs[i] >= 0 && static_cast<size_t>(inputs[i]) < values_.size(), "unknown graph value");
    n.inputs[i].second = inputs[i];
  }
  std::vector<ValueId> out;
  for (size_t i = 0; i < output_types.size(); ++i) {
    values_.push_back(Value{output_types[i], {}, static_cast<int>(nodes_.size())});
    out.push_back(static_cast<ValueId>(values_.size() - 1));
    n.outputs[i].second = out.back();
  }
  nodes_.push_back(std::move(n));
  return out;
}

} // namespace unitile::graph
