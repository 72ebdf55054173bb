// Input checks, random input generation, and which params specialise a kernel.
#include "runtime/Inputs.h"

#include "ir/Diagnostic.h"
#include "schedule/Lower.h"

#include <fmt/core.h>
#include <xxhash.h>

#include <algorithm>
#include <set>

namespace unitile {

void check_input_tensor(const std::string& name, DType want, const std::vector<int64_t>& shape,
                        const Tensor& t) {
  if (t.dtype == want && t.shape == shape) return;
  throw UserError(fmt::format("error: input '{}': expected {}{}, got {}{}", name, dtype_name(want),
                              shape_string(shape), dtype_name(t.dtype), shape_string(t.shape)));
}

std::map<std::string, Tensor> complete_inputs(const Kernel& k, const ShapeBindings& b,
                                              std::map<std::string, Tensor> given, uint64_t seed) {
  std::map<std::string, Tensor> out;
  for (const TensorDecl* in : k.inputs()) {
    const std::vector<int64_t> shape = concrete_shape(k, in->name, b);
    if (auto it = given.find(in->name); it != given.end()) {
      check_input_tensor(in->name, in->dtype, shape, it->second);
      out.emplace(in->name, std::move(it->second));
      continue;
    }
    const uint64_t stream = XXH3_64bits(in->name.data(), in->name.size());
    out.emplace(in->name, random_tensor(in->dtype, shape, seed, stream));
  }
  return out;
}

std::vector<std::string> specialisation_params(const Kernel& k) {
  std::set<std::string> used;
  auto collect = [&](const Expr& e) {
    visit(e, [&](const Expr& n) {
      if (n->kind == ExprKind::Var) used.insert(n->name);
    });
  };
  for (const TensorDecl& t : k.tensors)
    for (const Expr& d : t.shape) collect(d);
  for (const Comprehension& c : k.body) {
    visit(c.value, [&](const Expr& n) {
      if (n->kind != ExprKind::Access) return;
      for (const Expr& idx : n->operands) collect(idx);
    });
  }
  std::vector<std::string> out;
  for (const ParamDecl& p : k.params)
    if ((is_integer(p.dtype)) && used.count(p.name)) out.push_back(p.name);
  return out;
}

} // namespace unitile
