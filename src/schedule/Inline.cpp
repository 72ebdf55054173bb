// inline: a local written once by an assignment is substituted into the statements that
// read it, and disappears.
//
// Why: an elementwise intermediate (bias added before an activation, a scaled score)
// costs a full write and read of memory when it is materialised; as an expression inside
// its reader it costs nothing. This works on Kernel IR, before lowering, where a
// statement is still one expression.
#include "schedule/KernelEdit.h"
#include "schedule/Primitives.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>

namespace unitile {

Kernel inline_local(const Kernel& k, const std::string& buffer) {
  auto fail = [&](const std::string& why) {
    return UserError(fmt::format("error: schedule: inline {}: {}", buffer, why));
  };
  const TensorDecl* t = k.find_tensor(buffer);
  if (!t) throw fail("no such tensor");
  if (t->role != TensorRole::Local) throw fail("only locals can be inlined (it is an input or output)");
  const size_t at = only_writer(k, buffer, fail);
  const Comprehension& def = k.body[at];
  if (def.reduce != ReduceKind::Assign || def.is_indirect_store())
    throw fail("its statement is a reduction or a scatter; only an assignment can be inlined");
  Kernel out = k;
  for (size_t n = 0; n < k.body.size(); ++n) {
    bool reads = false;
    visit(k.body[n].value, [&](const Expr& e) { reads |= e->kind == ExprKind::Access && e->name == buffer; });
    if (reads && n < at) throw fail("a statement before its definition reads it");
    if (!reads || n == at) continue;
    out.body[n].value = rewrite(k.body[n].value, [&](const Expr& e) -> Expr {
      if (e->kind != ExprKind::Access || e->name != buffer) return e;
      if (e->guard) throw fail("a guarded read of it cannot be inlined");
      std::map<std::string, Expr> by;
      for (size_t d = 0; d < def.indices.size(); ++d) by[def.indices[d]] = e->operands[d];
      return rewrite(def.value, [&](const Expr& x) -> Expr {
        if (x->kind == ExprKind::Var && by.count(x->name)) {
          const Expr& r = by.at(x->name);
          return r->type == x->type ? r : cast(x->type, r);
        }
        return x;
      });
    });
  }
  out.body.erase(out.body.begin() + static_cast<std::ptrdiff_t>(at));
  out.tensors.erase(std::find_if(out.tensors.begin(), out.tensors.end(),
                                 [&](const TensorDecl& d) { return d.name == buffer; }));
  return out;
}

} // namespace unitile
