// Reverse mode over a graph (see Autodiff.h): which values carry a gradient, the
// cotangent sums, and one gradient node per forward node, derived or registered.
#include "graph/Autodiff.h"

#include "graph/DeriveVjp.h"
#include "graph/GradientOps.h"
#include "ir/Diagnostic.h"
#include "ops/OpContext.h"
#include "ops/OpLibrary.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <optional>

namespace unitile::graph {

namespace {

UserError located(const std::string& where, const std::string& message) {
  return UserError(where.empty() ? "error: " + message
                                 : fmt::format("{}: error: {}", where, message));
}

class Reverse {
public:
  explicit Reverse(Graph& g) : g_(g) {}

  std::vector<ValueId> run(ValueId loss, const std::vector<ValueId>& wrt,
                           std::optional<ValueId> seed) {
    const ops::TensorSpec lt = g_.value(loss).type;
    if (!is_float(lt.dtype) || ops::numel(lt.shape) != 1)
      throw UserError(fmt::format("error: the loss must be a single float value, got {}{}",
                                  dtype_name(lt.dtype), ops::shape_text(lt.shape)));
    const size_t forward_nodes = g_.nodes().size();
    varied_.assign(g_.values().size(), false);
    for (ValueId w : wrt)
      if (is_float(g_.value(w).type.dtype))
        varied_[static_cast<size_t>(w)] = true;
    for (const Node& n : g_.nodes()) {
      const bool in = std::any_of(n.inputs.begin(), n.inputs.end(), [&](const auto& p) {
        return varied_[static_cast<size_t>(p.second)];
      });
      for (const auto& [port, v] : n.outputs)
        if (in && is_float(g_.value(v).type.dtype))
          varied_[static_cast<size_t>(v)] = true;
    }
    parts_[loss].push_back(seed_value(loss, seed));
    for (size_t i = forward_nodes; i-- > 0;) {
      const Node n = g_.nodes()[i]; // a copy: adding nodes moves the vector
      std::vector<std::pair<std::string, ValueId>> cots;
      for (const auto& [port, v] : n.outputs)
        if (varied_[static_cast<size_t>(v)] && parts_.count(v))
          cots.emplace_back(port, total(v, n.where));
      if (cots.empty())
        continue;
      std::vector<std::string> wrt_ports;
      const ops::OpDef& op = graph_op(n.op);
      for (const auto& [port, v] : n.inputs)
        if (varied_[static_cast<size_t>(v)] && port_kind(op, port) == ops::PortKind::Data)
          wrt_ports.push_back(port);
      if (wrt_ports.empty())
        continue;
      const std::map<std::string, ValueId> grads = differentiate(n, cots, wrt_ports);
      for (const auto& [port, v] : n.inputs)
        if (auto it = grads.find(port); it != grads.end())
          parts_[v].push_back(it->second);
    }
    std::vector<ValueId> out;
    for (ValueId w : wrt) {
      if (!is_float(g_.value(w).type.dtype))
        throw UserError(fmt::format(
            "error: cannot differentiate with respect to a {} value (only floats have gradients)",
            dtype_name(g_.value(w).type.dtype)));
      out.push_back(parts_.count(w) ? total(w, "") : zeros(g_.value(w).type, ""));
    }
    return out;
  }

private:
  Graph& g_;
  std::vector<bool> varied_;
  std::map<ValueId, std::vector<ValueId>> parts_; // cotangent terms of each value

  static ops::PortKind port_kind(const ops::OpDef& op, const std::string& port) {
    for (const ops::Port& p : op.inputs)
      if (p.name == port ||
          (p.variadic && port.starts_with(p.name) && port.size() > p.name.size() &&
           std::all_of(port.begin() + static_cast<long>(p.name.size()), port.end(), ::isdigit)))
        return p.kind;
    return ops::PortKind::Data;
  }

  // Types are copied, never referenced: adding a node may move the graph's values.
  ValueId seed_value(ValueId loss, std::optional<ValueId> seed) {
    const ops::TensorSpec lt = g_.value(loss).type;
    ValueId s;
    if (seed) {
      const ops::TensorSpec st = g_.value(*seed).type;
      if (st.dtype != lt.dtype || ops::numel(st.shape) != 1)
        throw UserError(
            fmt::format("error: the seed must be a single {} value like the loss, got {}{}",
                        dtype_name(lt.dtype), dtype_name(st.dtype), ops::shape_text(st.shape)));
      s = *seed;
    } else {
      s = g_.add_node("constant", {},
                      {{"value", 1.0}, {"dtype", std::string(dtype_name(lt.dtype))}}, "")[0];
    }
    if (g_.value(s).type.shape != lt.shape)
      s = g_.add_node("reshape", {s}, {{"shape", lt.shape}}, "")[0];
    return s;
  }

  /// The cotangent of `v`: the sum of its terms (summed once, then kept).
  ValueId total(ValueId v, const std::string& where) {
    std::vector<ValueId>& terms = parts_.at(v);
    while (terms.size() > 1) {
      const ValueId sum = g_.add_node("add", {terms[0], terms[1]}, {}, where)[0];
      terms.erase(terms.begin(), terms.begin() + 2);
      terms.insert(terms.begin(), sum);
    }
    return terms.front();
  }

  ValueId zeros(ops::TensorSpec t, const std::string& where) {
    const ValueId z = g_.add_node(
        "constant", {}, {{"value", 0.0}, {"dtype", std::string(dtype_name(t.dtype))}}, where)[0];
    if (t.shape.empty())
      return z;
    return g_.add_node("expand", {z}, {{"shape", t.shape}}, where)[0];
  }

  /// The forward output whose cotangent the VJP kernel copies unchanged into its output
  /// `grad` (`dA[i, j] = dC[i, j]`), if it does.
  static std::optional<std::string> passed_through(const VjpKernel& vjp, const std::string& grad) {
    const Comprehension* def = nullptr;
    for (const Comprehension& c : vjp.kernel().body)
      if (c.output == grad) {
        if (def)
          return std::nullopt;
        def = &c;
      }
    if (!def || def->reduce != ReduceKind::Assign || def->is_indirect_store())
      return std::nullopt;
    const Expr& v = def->value;
    if (v->kind != ExprKind::Access || v->guard || v->operands.size() != def->indices.size())
      return std::nullopt;
    for (size_t d = 0; d < def->indices.size(); ++d)
      if (v->operands[d]->kind != ExprKind::Var || v->operands[d]->name != def->indices[d])
        return std::nullopt;
    for (const auto& [out, name] : vjp.cotangent_inputs)
      if (name == v->name)
        return out;
    return std::nullopt;
  }

  std::map<std::string, ValueId>
  differentiate(const Node& n, const std::vector<std::pair<std::string, ValueId>>& cots,
                const std::vector<std::string>& wrt_ports) {
    const ops::OpDef& op = graph_op(n.op);
    std::map<std::string, ops::TensorSpec> specs;
    std::vector<std::string> in_ports, cot_ports;
    std::vector<ValueId> ins;
    for (const auto& [port, v] : n.inputs) {
      specs[port] = g_.value(v).type;
      in_ports.push_back(port);
      ins.push_back(v);
    }
    const ops::OpInstance inst = ops::instantiate(op, specs, n.attrs);
    VjpRequest req;
    for (const auto& [port, v] : cots) {
      req.cotangents.push_back(port);
      cot_ports.push_back(port);
      ins.push_back(v);
    }
    // Only inputs the kernel reads can have a gradient (a vjp node, for one, does not
    // read every forward input it is given: matmul's dA does not read A).
    std::vector<std::string> read_ports;
    for (const std::string& port : wrt_ports)
      if (std::any_of(
              inst.kernel().tensors.begin(), inst.kernel().tensors.end(),
              [&](const TensorDecl& t) { return t.name == port && t.role == TensorRole::Input; }))
        read_ports.push_back(port);
    std::map<std::string, ValueId> grads;
    if (read_ports.empty())
      return grads; // the inputs asked for do not reach the outputs
    req.wrt = read_ports;
    const VjpDerivation d = derive_vjp(inst.kernel(), req);
    if (d.vjp) {
      // A gradient that is a cotangent as it is (add's, a copy's) is that value: no node.
      std::vector<std::string> computed;
      for (const std::string& port : read_ports) {
        if (const std::optional<std::string> out =
                passed_through(*d.vjp, d.vjp->gradient_outputs.at(port))) {
          for (const auto& [cport, v] : cots)
            if (cport == *out && g_.value(v).type == specs.at(port))
              grads[port] = v;
          if (grads.count(port))
            continue;
        }
        computed.push_back(port);
      }
      if (computed.empty())
        return grads;
      const std::vector<ValueId> gs =
          g_.add_node("vjp", ins, vjp_attrs(n.op, n.attrs, in_ports, cot_ports, computed), n.where);
      for (size_t j = 0; j < computed.size(); ++j)
        grads[computed[j]] = gs[j];
      return grads;
    }
    if (op.gradient.empty())
      throw located(
          n.where,
          fmt::format("op:{} has no gradient: it cannot be derived from its kernel ({}) and no "
                      "gradient op is registered for it",
                      n.op, d.why_not));
    return registered(n, op, cots, wrt_ports);
  }

  // The registered `<op>_grad`: its inputs are named like the forward op's inputs and
  // outputs, plus d<Out> for the outputs' cotangents; its outputs are d<In>.
  std::map<std::string, ValueId>
  registered(const Node& n, const ops::OpDef& op,
             const std::vector<std::pair<std::string, ValueId>>& cots,
             const std::vector<std::string>& wrt_ports) {
    const ops::OpDef& gop = graph_op(op.gradient);
    std::map<std::string, ValueId> available;
    for (const auto& [port, v] : n.inputs)
      available[port] = v;
    for (const auto& [port, v] : n.outputs)
      available[port] = v;
    for (const auto& [port, v] : cots)
      available["d" + port] = v;
    auto resolve = [&](const std::string& name) -> std::optional<ValueId> {
      if (auto it = available.find(name); it != available.end())
        return it->second;
      // An output without a cotangent contributes nothing: its cotangent is zeros.
      if (name.size() > 1 && name[0] == 'd')
        for (const auto& [port, v] : n.outputs)
          if (port == name.substr(1))
            return available[name] = zeros(g_.value(v).type, n.where);
      return std::nullopt;
    };
    std::vector<std::pair<std::string, ValueId>> bound;
    for (const ops::Port& p : gop.inputs) {
      if (p.variadic) {
        for (int k = 0;; ++k) {
          const std::optional<ValueId> v = resolve(p.name + std::to_string(k));
          if (!v)
            break;
          bound.emplace_back(p.name + std::to_string(k), *v);
        }
        continue;
      }
      if (const std::optional<ValueId> v = resolve(p.name))
        bound.emplace_back(p.name, *v);
      else if (!p.optional)
        throw located(
            n.where,
            fmt::format("the gradient op:{} of op:{} takes '{}', which op:{} does not have",
                        gop.name, op.name, p.name, op.name));
    }
    ops::Attrs attrs;
    for (const ops::AttrSpec& a : gop.attrs)
      if (auto it = n.attrs.find(a.name); it != n.attrs.end())
        attrs[a.name] = it->second;
    const std::vector<ValueId> outs = g_.add_node_ports(gop.name, bound, attrs, n.where);
    std::map<std::string, ValueId> by_port;
    const Node& gn = g_.nodes().back();
    for (size_t i = 0; i < outs.size(); ++i)
      by_port[gn.outputs[i].first] = outs[i];
    std::map<std::string, ValueId> grads;
    for (const std::string& port : wrt_ports) {
      auto it = by_port.find("d" + port);
      if (it == by_port.end())
        throw located(n.where,
                      fmt::format("op:{}'s gradient op:{} gives no gradient for its input '{}'",
                                  op.name, gop.name, port));
      grads[port] = it->second;
    }
    return grads;
  }
};

} // namespace

std::vector<ValueId> append_gradients(Graph& g, ValueId loss, const std::vector<ValueId>& wrt,
                                      std::optional<ValueId> seed) {
  return Reverse(g).run(loss, wrt, seed);
}

} // namespace unitile::graph
