// Structural equality of kernels (source locations ignored), for round-trip tests and
// for comparing builder output with parsed text.
#include "ir/Kernel.h"

namespace unitile {

namespace {

bool equal_exprs(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!equal(a[i], b[i])) return false;
  return true;
}

bool equal_decl(const TensorDecl& a, const TensorDecl& b) {
  return a.name == b.name && a.dtype == b.dtype && a.role == b.role && equal_exprs(a.shape, b.shape);
}

bool equal_stmt(const Comprehension& a, const Comprehension& b) {
  if (a.output != b.output || a.indices != b.indices || a.reduce != b.reduce ||
      a.reduction_vars != b.reduction_vars || !equal(a.value, b.value) ||
      !equal_exprs(a.store_indices, b.store_indices) ||
      a.ranges.size() != b.ranges.size())
    return false;
  for (auto ia = a.ranges.begin(), ib = b.ranges.begin(); ia != a.ranges.end(); ++ia, ++ib)
    if (ia->first != ib->first || !equal(ia->second, ib->second)) return false;
  return true;
}

} // namespace

bool equal(const Kernel& a, const Kernel& b) {
  if (a.name != b.name || a.schedule_text != b.schedule_text || a.tensors.size() != b.tensors.size() ||
      a.params.size() != b.params.size() || a.body.size() != b.body.size())
    return false;
  for (size_t i = 0; i < a.tensors.size(); ++i)
    if (!equal_decl(a.tensors[i], b.tensors[i])) return false;
  for (size_t i = 0; i < a.params.size(); ++i)
    if (a.params[i].name != b.params[i].name || a.params[i].dtype != b.params[i].dtype) return false;
  for (size_t i = 0; i < a.body.size(); ++i)
    if (!equal_stmt(a.body[i], b.body[i])) return false;
  return true;
}

bool equal(const Module& a, const Module& b) {
  if (a.kernels.size() != b.kernels.size()) return false;
  for (size_t i = 0; i < a.kernels.size(); ++i)
    if (!equal(a.kernels[i], b.kernels[i])) return false;
  return true;
}

} // namespace unitile
