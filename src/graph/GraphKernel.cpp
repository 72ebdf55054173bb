// Turning a graph into one kernel: live nodes in order, each op instance's comprehensions
// copied with its ports renamed to the graph's tensors and its locals made unique.
#include "graph/GraphKernel.h"

#include "ir/Diagnostic.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ops/OpLibrary.h"

#include <fmt/core.h>

#include <functional>
#include <map>
#include <optional>
#include <set>

namespace unitile::graph {

namespace {

std::vector<Expr> shape_exprs(const std::vector<int64_t>& shape) {
  std::vector<Expr> out;
  for (int64_t d : shape) out.push_back(int_imm(d));
  return out;
}

void declare(Kernel& k, const std::string& name, const ops::TensorSpec& t, TensorRole role) {
  TensorDecl d;
  d.name = name;
  d.dtype = t.dtype;
  d.shape = shape_exprs(t.shape);
  d.role = role;
  k.tensors.push_back(std::move(d));
}

Expr renamed(const Expr& e, const std::map<std::string, std::string>& names) {
  return rewrite(e, [&](const Expr& n) {
    if (n->kind != ExprKind::Access) return n;
    auto it = names.find(n->name);
    UT_INTERNAL_ASSERT(it != names.end(), "an op kernel reads an undeclared tensor");
    return access(it->second, n->operands, n->type, n->guard, n->loc);
  });
}

// Copy `inst`'s statements into `k`, its tensors renamed by `ports` (port -> graph
// tensor) and its locals by `local_name`.
void append_instance(Kernel& k, const ops::OpInstance& inst, const std::map<std::string, std::string>& ports,
                     const std::function<std::string(const std::string&)>& local_name) {
  const Kernel& op = inst.kernel();
  UT_INTERNAL_ASSERT(op.params.empty(), "an op kernel with runtime params cannot be fused yet");
  std::map<std::string, std::string> names;
  for (const TensorDecl& t : op.tensors) {
    if (t.role == TensorRole::Local) {
      names[t.name] = local_name(t.name);
      TensorDecl d = t;
      d.name = names[t.name];
      k.tensors.push_back(std::move(d));
      continue;
    }
    auto it = ports.find(t.name);
    UT_INTERNAL_ASSERT(it != ports.end(), "an op kernel declares a port the node does not bind");
    names[t.name] = it->second;
  }
  for (const Comprehension& c : op.body) {
    Comprehension r = c;
    r.output = names.at(c.output);
    r.value = renamed(c.value, names);
    for (Expr& s : r.store_indices) s = renamed(s, names);
    r.reduction_vars.clear();
    r.ranges.clear();
    if (r.is_indirect_store()) r.indices.clear();
    k.body.push_back(std::move(r));
  }
}

} // namespace

GraphKernel graph_kernel(const Graph& g, const std::string& name) {
  const std::vector<Node>& nodes = g.nodes();
  if (g.outputs().empty()) throw UserError(fmt::format("error: kernel {} returns nothing", name));

  // The nodes some output depends on.
  std::vector<bool> live(nodes.size(), false);
  std::vector<ValueId> work = g.outputs();
  while (!work.empty()) {
    const ValueId v = work.back();
    work.pop_back();
    const int p = g.value(v).producer;
    if (p < 0 || live[static_cast<size_t>(p)]) continue;
    live[static_cast<size_t>(p)] = true;
    for (const auto& [port, in] : nodes[static_cast<size_t>(p)].inputs) work.push_back(in);
  }

  // Instantiate first: tensor names must differ from every index name the ops use.
  std::vector<std::optional<ops::OpInstance>> instances(nodes.size());
  std::set<std::string> taken;
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (!live[n]) continue;
    std::map<std::string, ops::TensorSpec> specs;
    for (const auto& [port, v] : nodes[n].inputs) specs[port] = g.value(v).type;
    instances[n] = ops::instantiate(graph_op(nodes[n].op), specs, nodes[n].attrs);
    for (const Comprehension& c : instances[n]->kernel().body) {
      taken.insert(c.indices.begin(), c.indices.end());
      taken.insert(c.reduction_vars.begin(), c.reduction_vars.end());
    }
  }
  const ops::OpDef& copy_op = graph_op("copy");
  auto unique = [&](std::string name) {
    while (taken.count(name)) name += "_";
    taken.insert(name);
    return name;
  };

  GraphKernel out;
  Kernel k;
  k.name = name;
  std::map<ValueId, std::string> tensor;
  for (ValueId v : g.inputs()) {
    tensor[v] = unique(g.value(v).input_name);
    declare(k, tensor[v], g.value(v).type, TensorRole::Input);
    out.inputs.push_back(tensor[v]);
  }
  // Outputs: a value computed here is written straight into its output tensor; an
  // input returned as it is, or a value returned twice, is copied.
  std::vector<std::pair<ValueId, std::string>> copies;
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const ValueId v = g.outputs()[i];
    const std::string o = unique("out" + std::to_string(i));
    declare(k, o, g.value(v).type, TensorRole::Output);
    out.outputs.push_back(o);
    if (g.value(v).producer < 0 || tensor.count(v))
      copies.emplace_back(v, o);
    else
      tensor[v] = o;
  }
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (!live[n]) continue;
    const Node& node = nodes[n];
    std::map<std::string, std::string> ports;
    for (const auto& [port, v] : node.inputs) ports[port] = tensor.at(v);
    for (const auto& [port, v] : node.outputs) {
      if (!tensor.count(v)) {
        tensor[v] = unique("t" + std::to_string(v));
        declare(k, tensor[v], g.value(v).type, TensorRole::Local);
      }
      ports[port] = tensor[v];
    }
    append_instance(k, *instances[n], ports, [&](const std::string& local) {
      return unique(fmt::format("n{}_{}", n, local));
    });
  }
  for (const auto& [v, o] : copies) {
    const ops::OpInstance inst = ops::instantiate(copy_op, {{"X", g.value(v).type}}, {});
    append_instance(k, inst, {{"X", tensor.at(v)}, {"Y", o}}, unique);
  }
  out.text = to_string(k);
  out.module = parse_module(SourceFile{"<graph " + name + ">", out.text});
  return out;
}

} // namespace unitile::graph
