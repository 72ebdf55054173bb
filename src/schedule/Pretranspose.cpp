// pretranspose: copy an operand a contraction reads "across" its unit-stride output
// axis into a local laid out so that axis is last, and read the local instead.
//
// Why: `Y[m, n] += X[m, k] * W[n, k]` (a Linear layer in PyTorch's weight layout, and
// every `dA = dY B^T` of a matmul's gradient) reads W with stride K along n, the output's
// unit-stride axis, so no vector loop runs along n and the register-blocked GEMM does not
// apply: it fell back to one scalar accumulator per output element, about 70x slower.
// One pass over W (K x N elements, against M x N x K multiply-adds) writes
// `W_t[k, n] = W[n, k]`, and the contraction becomes an ordinary GEMM. This works on
// Kernel IR, before lowering, like inline and widen.
#include "schedule/KernelEdit.h"
#include "schedule/Primitives.h"

#include <fmt/core.h>

#include <algorithm>

namespace unitile {

Kernel pretranspose_operand(const Kernel& k, const std::string& operand, const std::string& on,
                            std::string* local_name) {
  auto fail = [&](const std::string& why) {
    return UserError(fmt::format("error: schedule: pretranspose {} on {}: {}", operand, on, why));
  };
  const TensorDecl* t = k.find_tensor(operand);
  if (!t) throw fail("no such tensor");
  const size_t at = only_writer(k, on, fail);
  const Comprehension& c = k.body[at];
  if (c.is_indirect_store() || c.indices.empty()) throw fail("the statement is a scatter or writes a scalar");
  const std::string& j = c.indices.back(); // the output's unit-stride axis
  // Every read of the operand: the same bare, distinct index variables, j among them
  // but not last.
  std::vector<std::string> vars;
  bool found = false;
  visit(c.value, [&](const Expr& e) {
    if (e->kind != ExprKind::Access || e->name != operand) return;
    std::vector<std::string> v;
    for (const Expr& i : e->operands) {
      if (i->kind != ExprKind::Var) throw fail("a read of it has an index that is not a plain variable");
      v.push_back(i->name);
    }
    if (e->guard) throw fail("a read of it is guarded");
    if (found && v != vars) throw fail("it is read at different indices");
    vars = v;
    found = true;
  });
  if (!found) throw fail("the statement does not read it");
  for (size_t a = 0; a < vars.size(); ++a)
    for (size_t b = a + 1; b < vars.size(); ++b)
      if (vars[a] == vars[b]) throw fail("a read of it repeats an index variable");
  auto jpos = std::find(vars.begin(), vars.end(), j);
  if (jpos == vars.end()) throw fail(fmt::format("its reads do not move with '{}', the output's last index", j));
  if (jpos + 1 == vars.end()) throw fail(fmt::format("'{}' is already its last index", j));

  // The new layout: the same dimensions with j's moved last.
  const size_t jd = static_cast<size_t>(jpos - vars.begin());
  std::vector<size_t> perm;
  for (size_t d = 0; d < vars.size(); ++d)
    if (d != jd) perm.push_back(d);
  perm.push_back(jd);
  const std::string local = unused_name(k, operand + "_t");

  Kernel out = k;
  TensorDecl decl = *t;
  decl.name = local;
  decl.role = TensorRole::Local;
  decl.shape.clear();
  for (size_t d : perm) decl.shape.push_back(t->shape[d]);
  out.tensors.push_back(decl);

  // local[v_perm...] = operand[v...], over the operand's own index variables.
  Comprehension copy;
  copy.output = local;
  copy.reduce = ReduceKind::Assign;
  copy.loc = c.loc;
  std::vector<Expr> src_idx, dst_idx;
  for (const std::string& v : vars) src_idx.push_back(var(v));
  for (size_t d : perm) {
    copy.indices.push_back(vars[d]);
    copy.index_locs.push_back(c.loc);
    dst_idx.push_back(var(vars[d]));
    copy.ranges[vars[d]] = c.ranges.at(vars[d]);
  }
  copy.value = access(operand, src_idx, t->dtype);
  out.body[at].value = rewrite(c.value, [&](const Expr& e) -> Expr {
    if (e->kind != ExprKind::Access || e->name != operand) return e;
    return access(local, dst_idx, t->dtype, nullptr, e->loc);
  });
  out.body.insert(out.body.begin() + static_cast<std::ptrdiff_t>(at), std::move(copy));
  if (local_name) *local_name = local;
  return out;
}

} // namespace unitile
