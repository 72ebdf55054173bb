// Shape binding: giving every shape symbol and specialisation param of a kernel a value,
// from the command line and from the shapes of the inputs it is called with, and
// checking that the inputs agree with the declarations and with each other.
#include "schedule/Lower.h"
#include "schedule/ShapeEval.h"
#include "schedule/Specialize.h"

#include <fmt/core.h>

#include <set>

namespace unitile {

namespace {

Diagnostic error(std::string message, std::string hint = {}) {
  return Diagnostic{{}, {}, std::move(message), std::move(hint), {}, 1};
}

// Where each bound value came from, for error messages: "--shape" or
// "tensor 'A' dimension 1".
using Origins = std::map<std::string, std::string>;

// "K = 32 (from tensor 'A' dimension 1)" for a bare symbol; for an expression the
// value of every symbol in it and where each came from.
std::string explain(const Expr& dim, int64_t value, const ShapeBindings& b, const Origins& from) {
  if (dim->kind == ExprKind::Var)
    return fmt::format("{} = {} (from {})", dim->name, value, from.at(dim->name));
  if (dim->kind == ExprKind::IntImm) return fmt::format("it is declared as {}", value);
  std::set<std::string> seen;
  std::string with;
  visit(dim, [&](const Expr& e) {
    if (e->kind != ExprKind::Var || !seen.insert(e->name).second) return;
    with += fmt::format("{}{} = {} from {}", with.empty() ? "" : ", ", e->name, b.at(e->name),
                        from.at(e->name));
  });
  return fmt::format("{} = {} (with {})", to_string(dim), value, with);
}

} // namespace

ShapeBindings bind_shapes(const Kernel& k,
                          const std::map<std::string, std::vector<int64_t>>& input_shapes,
                          const ShapeBindings& given) {
  const std::set<std::string> names = bound_names(k);
  ShapeBindings b;
  Origins from;
  for (const auto& [name, value] : given) {
    if (!names.count(name)) continue; // --shape is shared by every kernel of a file
    b[name] = value;
    from[name] = "--shape";
  }

  for (const auto& [name, shape] : input_shapes) {
    const TensorDecl* t = k.find_tensor(name);
    if (!t || t->role != TensorRole::Input)
      throw UserError(error(fmt::format("kernel '{}' has no input named '{}'", k.name, name)));
    if (shape.size() != t->shape.size())
      throw UserError(error(fmt::format("tensor '{}' is declared with {} dimensions, but the "
                                        "input has {}",
                                        name, t->shape.size(), shape.size())));
  }

  // A symbol standing alone as a dimension takes that dimension's size, first one wins.
  for (const TensorDecl* t : k.inputs()) {
    auto it = input_shapes.find(t->name);
    if (it == input_shapes.end()) continue;
    for (size_t d = 0; d < t->shape.size(); ++d) {
      const Expr& dim = t->shape[d];
      if (dim->kind != ExprKind::Var || b.count(dim->name)) continue;
      b[dim->name] = it->second[d];
      from[dim->name] = fmt::format("tensor '{}' dimension {}", t->name, d);
    }
  }

  // Every declared dimension of every given input must match; dimensions whose symbols
  // are still unbound are reported as unbound below.
  for (const TensorDecl* t : k.inputs()) {
    auto it = input_shapes.find(t->name);
    if (it == input_shapes.end()) continue;
    for (size_t d = 0; d < t->shape.size(); ++d) {
      std::string what = fmt::format("dimension {} of tensor '{}'", d, t->name);
      auto expected = try_eval_int(t->shape[d], b, what);
      if (!expected || *expected == it->second[d]) continue;
      throw UserError(error(fmt::format("tensor '{}' dimension {} is {}, but {}", t->name, d,
                                        it->second[d], explain(t->shape[d], *expected, b, from))));
    }
  }

  for (const std::string& s : k.shape_symbols())
    if (!b.count(s))
      throw UserError(error(fmt::format("shape symbol '{}' is not bound (kernel '{}')", s, k.name),
                            fmt::format("pass --shape {}=<value> or an input that has it", s)));
  for (const std::string& p : specialization_params(k))
    if (!b.count(p))
      throw UserError(error(fmt::format("integer param '{}' is used in an index, so it is a "
                                        "compile-time constant, and it is not bound (kernel '{}')",
                                        p, k.name),
                            fmt::format("pass --shape {}=<value>", p)));

  // Outputs and locals get their sizes from the same symbols; all must be positive.
  for (const TensorDecl& t : k.tensors) {
    for (size_t d = 0; d < t.shape.size(); ++d) {
      std::string what = fmt::format("dimension {} of tensor '{}'", d, t.name);
      int64_t v = eval_int(t.shape[d], b, what);
      if (v > 0) continue;
      throw UserError(error(fmt::format("tensor '{}' dimension {} is {}: sizes must be positive "
                                        "({})",
                                        t.name, d, v, explain(t.shape[d], v, b, from))));
    }
  }
  return b;
}

std::vector<int64_t> concrete_shape(const Kernel& k, const std::string& name,
                                    const ShapeBindings& b) {
  const TensorDecl* t = k.find_tensor(name);
  if (!t) throw UserError(error(fmt::format("kernel '{}' has no tensor named '{}'", k.name, name)));
  std::vector<int64_t> shape;
  for (size_t d = 0; d < t->shape.size(); ++d)
    shape.push_back(eval_int(t->shape[d], b, fmt::format("dimension {} of tensor '{}'", d, name)));
  return shape;
}

} // namespace unitile
