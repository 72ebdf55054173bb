// A minimal dataflow graph of library op calls: values with a dtype and a concrete shape,
// and nodes that each call one op (name, attributes, input values) and define its output
// values. What the Python tracer records; graph_kernel turns it into one Kernel IR kernel.
#pragma once

#include "ops/Op.h"

#include <string>
#include <vector>

namespace unitile::graph {

using ValueId = int;
/// In add_node's inputs: an optional port left out, so a later optional port can be given.
inline constexpr ValueId kAbsent = -1;

struct Value {
  ops::TensorSpec type;
  std::string input_name; // graph inputs only
  int producer = -1;      // the node defining it; -1 for a graph input
};

struct Node {
  std::string op;
  ops::Attrs attrs;
  /// The op's input ports and the values bound to them, in port order.
  std::vector<std::pair<std::string, ValueId>> inputs;
  /// The op's output ports and the values they define.
  std::vector<std::pair<std::string, ValueId>> outputs;
  std::string where; // the caller's location ("model.py:12"), for messages
};

class Graph {
public:
  /// A graph input; `name` must be a plain identifier, distinct from the others.
  ValueId add_input(const std::string& name, ops::TensorSpec type);
  /// Call op `op` on `inputs` (bound to its input ports in order) with `attrs`: the op is
  /// instantiated now, so a dtype, shape or attribute error is a UserError at this call,
  /// prefixed with `where`. An optional port may be skipped with kAbsent. Returns the
  /// output values, in port order.
  std::vector<ValueId> add_node(const std::string& op, const std::vector<ValueId>& inputs,
                                const ops::Attrs& attrs, const std::string& where);
  /// The same, with each input bound to a port by name: an optional port may be left out
  /// before a given one (layernorm_grad's dY without Scale); a variadic port X is bound
  /// as X0, X1, .... Ports are taken in the order given.
  std::vector<ValueId> add_node_ports(const std::string& op, const std::vector<std::pair<std::string, ValueId>>& inputs,
                                      const ops::Attrs& attrs, const std::string& where);
  void set_outputs(std::vector<ValueId> outputs) { outputs_ = std::move(outputs); }
  /// A copy of `node` (of this or another graph) reading `inputs` instead, which must
  /// have the types of the values it read there: the op is not instantiated again, its
  /// output types are `output_types`. How passes rebuild graphs cheaply.
  std::vector<ValueId> copy_node(const Node& node, const std::vector<ValueId>& inputs,
                                 const std::vector<ops::TensorSpec>& output_types);

  const Value& value(ValueId v) const { return values_.at(static_cast<size_t>(v)); }
  const std::vector<Value>& values() const { return values_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<ValueId>& inputs() const { return inputs_; }
  const std::vector<ValueId>& outputs() const { return outputs_; }

private:
  std::vector<Value> values_;
  std::vector<Node> nodes_;
  std::vector<ValueId> inputs_, outputs_;
};

/// The op `name`: the library's, else one of the graph's own (GraphOps.h).
const ops::OpDef& graph_op(const std::string& name);

} // namespace unitile::graph
