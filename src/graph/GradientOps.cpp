// The graph's gradient ops (see GradientOps.h), written like library ops.
#include "graph/GradientOps.h"

#include "graph/DeriveVjp.h"
#include "graph/Graph.h"
#include "ir/Printer.h"
#include "ops/OpContext.h"
#include "ops/OpLibrary.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>

namespace unitile::graph {

namespace {

using ops::AttrKind;
using ops::AttrValue;
using ops::OpContext;
using ops::OpDef;

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos)
      comma = text.size();
    out.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

nlohmann::json attr_json(const AttrValue& v) {
  return std::visit([](const auto& x) { return nlohmann::json(x); }, v);
}

// The forward attributes back from JSON, each read as the kind the forward op declares.
ops::Attrs decode_attrs(const OpContext& ctx, const OpDef& op, const std::string& text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    ctx.fail("attribute 'attrs' is not JSON: {}", e.what());
  }
  if (!j.is_object())
    ctx.fail("attribute 'attrs' must be a JSON object");
  ops::Attrs out;
  for (const auto& [name, v] : j.items()) {
    auto spec = std::find_if(op.attrs.begin(), op.attrs.end(),
                             [&](const ops::AttrSpec& a) { return a.name == name; });
    if (spec == op.attrs.end())
      ctx.fail("op:{} has no attribute '{}'", op.name, name);
    try {
      switch (spec->kind) {
      case AttrKind::Int:
      case AttrKind::Bool:
        out[name] = v.get<int64_t>();
        break;
      case AttrKind::Float:
        out[name] = v.get<double>();
        break;
      case AttrKind::String:
        out[name] = v.get<std::string>();
        break;
      case AttrKind::Ints:
        out[name] = v.get<std::vector<int64_t>>();
        break;
      case AttrKind::Floats:
        out[name] = v.get<std::vector<double>>();
        break;
      }
    } catch (const nlohmann::json::exception&) {
      ctx.fail("attribute '{}' of op:{} has the wrong kind in 'attrs': {}", name, op.name,
               v.dump());
    }
  }
  return out;
}

std::vector<int64_t> concrete(const OpContext& ctx, const TensorDecl& t) {
  std::vector<int64_t> shape;
  for (const Expr& d : t.shape) {
    if (d->kind != ExprKind::IntImm)
      ctx.fail("tensor '{}' of the derived kernel has a symbolic shape", t.name);
    shape.push_back(d->int_value);
  }
  return shape;
}

// G0, G1, ... = the gradients of the forward op's `wrt` inputs, from its inputs X0.. and
// the cotangents after them, by differentiating the forward instance's kernel.
void emit_vjp(OpContext& ctx) {
  const OpDef& fwd = graph_op(ctx.attr_string("op"));
  const std::vector<std::string> in_ports = split_list(ctx.attr_string("inputs"));
  const std::vector<std::string> cots = split_list(ctx.attr_string("cotangents"));
  const std::vector<std::string> wrt = split_list(ctx.attr_string("wrt"));
  const std::vector<std::string> given = ctx.variadic("X");
  if (given.size() != in_ports.size() + cots.size())
    ctx.fail("takes {} forward inputs and {} cotangents, got {} inputs", in_ports.size(),
             cots.size(), given.size());
  if (wrt.empty())
    ctx.fail("no input to differentiate ('wrt' is empty)");
  std::map<std::string, ops::TensorSpec> specs;
  VjpRequest req;
  for (size_t k = 0; k < in_ports.size(); ++k) {
    specs[in_ports[k]] = ctx.in(given[k]);
    req.renames[in_ports[k]] = given[k];
  }
  const ops::OpInstance inst =
      ops::instantiate(fwd, specs, decode_attrs(ctx, fwd, ctx.attr_string("attrs")));
  // The gradients are named G0, G1, ...; a forward tensor of such a name (the outputs of
  // a vjp kernel, when this is a second-order gradient) is renamed out of the way first.
  std::set<std::string> used;
  for (const TensorDecl& t : inst.kernel().tensors)
    used.insert(t.name);
  used.insert(given.begin(), given.end());
  std::map<std::string, std::string> moved;
  for (size_t j = 0; j < wrt.size(); ++j) {
    const std::string name = "G" + std::to_string(j);
    if (!std::any_of(inst.kernel().tensors.begin(), inst.kernel().tensors.end(),
                     [&](const TensorDecl& t) { return t.name == name; }))
      continue;
    std::string fresh = name + "_forward";
    while (used.count(fresh))
      fresh += "_";
    used.insert(fresh);
    moved[name] = fresh;
  }
  auto forward_name = [&](const std::string& port) {
    auto it = moved.find(port);
    return it == moved.end() ? port : it->second;
  };
  const Kernel forward =
      moved.empty() ? inst.kernel() : rename_kernel_tensors(inst.kernel(), moved);
  for (size_t m = 0; m < cots.size(); ++m) {
    req.cotangents.push_back(forward_name(cots[m]));
    req.names[forward_name(cots[m])] = given[in_ports.size() + m];
  }
  for (size_t j = 0; j < wrt.size(); ++j) {
    req.wrt.push_back(forward_name(wrt[j]));
    req.names[forward_name(wrt[j])] = "G" + std::to_string(j);
  }
  for (const auto& [port, spec] : inst.outputs)
    if (std::find(cots.begin(), cots.end(), port) != cots.end() &&
        ctx.in(req.names[forward_name(port)]) != spec)
      ctx.fail("the cotangent of {} must have the type of the output", port);
  const VjpDerivation d = derive_vjp(forward, req);
  if (!d.vjp)
    ctx.fail("cannot derive the gradient of op:{}: {}", fwd.name, d.why_not);
  const Kernel& k = d.vjp->kernel();
  for (const TensorDecl& t : k.tensors) {
    switch (t.role) {
    case TensorRole::Input:
      ctx.input(t.name);
      break;
    case TensorRole::Output:
      ctx.output(t.name, t.dtype, concrete(ctx, t));
      break;
    case TensorRole::Local:
      ctx.local(t.name, t.dtype, concrete(ctx, t));
      break;
    }
  }
  for (const Comprehension& c : k.body)
    ctx.stmt(to_string(c));
}

// The gradient of the graph's slice: dX is dY at the positions the slice took, else 0.
void emit_slice_grad(OpContext& ctx) {
  const ops::TensorSpec& x = ctx.in("X");
  const size_t rank = x.shape.size();
  const std::vector<int64_t> starts = ctx.attr_ints("starts"), steps = ctx.attr_ints("steps"),
                             sizes = ctx.attr_ints("sizes"), squeeze = ctx.attr_ints("squeeze");
  if (starts.size() != rank || steps.size() != rank || sizes.size() != rank)
    ctx.fail("starts, steps and sizes need one entry per dimension ({})", rank);
  std::vector<int64_t> y_shape;
  std::vector<std::string> conds, y_idx;
  const std::vector<std::string> j = ops::index_names(static_cast<int64_t>(rank), "j");
  for (size_t d = 0; d < rank; ++d) {
    if (steps[d] == 0)
      ctx.fail("step 0 in dimension {}", d);
    // Y's index i reads X at start + i*step: dX[j] takes dY[(j - start) / step] where that
    // divides exactly (with a negative step, (start - j) / -step).
    const std::string off = steps[d] < 0     ? fmt::format("{} - {}", starts[d], j[d])
                            : starts[d] == 0 ? j[d]
                                             : fmt::format("{} - {}", j[d], starts[d]);
    const int64_t step = steps[d] < 0 ? -steps[d] : steps[d];
    if (std::find(squeeze.begin(), squeeze.end(), static_cast<int64_t>(d)) != squeeze.end()) {
      conds.push_back(fmt::format("{} == {}", j[d], starts[d]));
      continue;
    }
    y_shape.push_back(sizes[d]);
    if (step == 1) {
      // A bare `j` would tie j's range to dY's extent too.
      y_idx.push_back(off == j[d] && sizes[d] != x.shape[d] ? off + " + 0" : off);
    } else {
      conds.push_back(fmt::format("({}) % {} == 0", off, step));
      y_idx.push_back(fmt::format("({}) // {}", off, step));
    }
  }
  if (ctx.in("dY").shape != y_shape || ctx.in("dY").dtype != x.dtype)
    ctx.fail("dY has type {}{} but the slice makes {}{}", ops::dtype_text(ctx.in("dY").dtype),
             ops::shape_text(ctx.in("dY").shape), ops::dtype_text(x.dtype),
             ops::shape_text(y_shape));
  ctx.input("X");
  ctx.input("dY");
  ctx.output("dX", x.dtype, x.shape);
  const std::string read = "(" + ops::access("dY", y_idx) + " ?? 0)";
  ctx.stmt(ops::access("dX", j) + " = " +
           (conds.empty() ? read : ops::join(conds, " && ") + " ? " + read + " : 0"));
}

ops::AttrSpec string_attr(const char* name, const char* doc) {
  return {name, AttrKind::String, std::nullopt, doc};
}
ops::AttrSpec ints(const char* name, const char* doc) {
  return {name, AttrKind::Ints, AttrValue{std::vector<int64_t>{}}, doc};
}

} // namespace

ops::Attrs vjp_attrs(const std::string& op, const ops::Attrs& attrs,
                     const std::vector<std::string>& inputs,
                     const std::vector<std::string>& cotangents,
                     const std::vector<std::string>& wrt) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, v] : attrs)
    j[name] = attr_json(v);
  return {{"op", op},
          {"attrs", j.dump()},
          {"inputs", ops::join(inputs, ",")},
          {"cotangents", ops::join(cotangents, ",")},
          {"wrt", ops::join(wrt, ",")}};
}

std::vector<ops::OpDef> gradient_graph_ops() {
  std::vector<OpDef> v;
  v.push_back({"slice_grad",
               "data movement",
               "gradient of the graph's slice: dY scattered back into X's shape",
               {{"X"}, {"dY"}},
               {{"dX"}},
               {ints("starts", "first index per dimension"), ints("steps", "step per dimension"),
                ints("sizes", "elements taken per dimension"),
                ints("squeeze", "dimensions indexed by an integer")},
               "",
               emit_slice_grad});
  v.push_back(
      {"vjp",
       "autodiff",
       "the gradients of an op's inputs, derived from its kernel's comprehensions",
       {{"X", ops::PortKind::Data, false, true}},
       {{"G", ops::PortKind::Data, false, true}},
       {string_attr("op", "the forward op"),
        {"attrs", AttrKind::String, AttrValue{std::string("{}")},
         "the forward op's attributes (JSON)"},
        string_attr("inputs", "the forward input ports given as X0, X1, ... (comma-separated)"),
        {"cotangents", AttrKind::String, AttrValue{std::string()},
         "the forward outputs whose cotangents follow the inputs"},
        string_attr("wrt", "the forward inputs differentiated: G0, G1, ...")},
       "",
       emit_vjp});
  return v;
}

} // namespace unitile::graph
