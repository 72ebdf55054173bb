// Lookups on Kernel IR declarations.
#include "ir/Kernel.h"

#include <algorithm>
#include <set>

namespace unitile {

const char* reduce_token(ReduceKind k) {
  switch (k) {
  case ReduceKind::Assign: return "=";
  case ReduceKind::Add: return "+=";
  case ReduceKind::Mul: return "*=";
  case ReduceKind::Max: return "max=";
  case ReduceKind::Min: return "min=";
  }
  return "?";
}

const TensorDecl* Kernel::find_tensor(const std::string& n) const {
  for (const auto& t : tensors)
    if (t.name == n) return &t;
  return nullptr;
}

const ParamDecl* Kernel::find_param(const std::string& n) const {
  for (const auto& p : params)
    if (p.name == n) return &p;
  return nullptr;
}

std::vector<const TensorDecl*> Kernel::inputs() const {
  std::vector<const TensorDecl*> r;
  for (const auto& t : tensors)
    if (t.role == TensorRole::Input) r.push_back(&t);
  return r;
}

std::vector<const TensorDecl*> Kernel::outputs() const {
  std::vector<const TensorDecl*> r;
  for (const auto& t : tensors)
    if (t.role == TensorRole::Output) r.push_back(&t);
  return r;
}

std::vector<std::string> Kernel::shape_symbols() const {
  std::vector<std::string> order;
  std::set<std::string> seen;
  for (const auto& t : tensors)
    for (const auto& d : t.shape)
      visit(d, [&](const Expr& e) {
        if (e->kind == ExprKind::Var && seen.insert(e->name).second) order.push_back(e->name);
      });
  return order;
}

const Kernel* Module::find(const std::string& n) const {
  auto it = std::find_if(kernels.begin(), kernels.end(), [&](const Kernel& k) { return k.name == n; });
  return it == kernels.end() ? nullptr : &*it;
}

} // namespace unitile
