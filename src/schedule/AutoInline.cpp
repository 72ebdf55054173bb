// Choosing locals to inline (see AutoInline.h).
//
// Why: a graph kernel composes one statement per op, so every reshape, transpose, bias
// add and activation becomes a local that is written to memory and read back, often in a
// launch of its own. Substituting the elementwise ones into their elementwise readers
// leaves one statement per chain and one pass over memory.
#include "schedule/AutoInline.h"

#include "schedule/ShapeEval.h"

#include <set>

namespace unitile {

namespace {

bool elementwise(const Comprehension& c) {
  return c.reduce == ReduceKind::Assign && c.reduction_vars.empty() && !c.is_indirect_store();
}

size_t node_count(const Expr& e) {
  size_t n = 0;
  visit(e, [&](const Expr&) { ++n; });
  return n;
}

bool cheap(const Expr& e) {
  bool calls = false;
  visit(e, [&](const Expr& x) { calls |= x->kind == ExprKind::Call; });
  return !calls && node_count(e) <= 16;
}

// Reads of `t` in `e`; a guarded read (`t[i-1] ?? 0`) counts as many, since it cannot
// be inlined.
size_t reads_of(const Expr& e, const std::string& t) {
  size_t n = 0;
  visit(e, [&](const Expr& x) {
    if (x->kind == ExprKind::Access && x->name == t) n += x->guard ? 1000 : 1;
  });
  return n;
}

std::optional<int64_t> domain_size(const Comprehension& c, const ShapeBindings& b) {
  int64_t n = 1;
  for (const std::string& v : c.indices) {
    auto it = c.ranges.find(v);
    if (it == c.ranges.end()) return std::nullopt;
    auto e = try_eval_int(it->second, b, "the range of '" + v + "'");
    if (!e) return std::nullopt;
    n *= *e;
  }
  return n;
}

bool qualifies(const Kernel& k, size_t at, const ShapeBindings& b) {
  const Comprehension& def = k.body[at];
  const TensorDecl* t = k.find_tensor(def.output);
  if (!t || t->role != TensorRole::Local || !elementwise(def)) return false;
  std::set<std::string> inputs;
  visit(def.value, [&](const Expr& x) {
    if (x->kind == ExprKind::Access) inputs.insert(x->name);
  });
  size_t sites = 0, last = at;
  const Comprehension* reader = nullptr;
  for (size_t n = 0; n < k.body.size(); ++n) {
    const Comprehension& c = k.body[n];
    if (n != at && c.output == def.output) return false; // written twice
    for (const Expr& i : c.store_indices)
      if (reads_of(i, def.output)) return false; // a scatter's target index: inline does not rewrite those
    const size_t r = reads_of(c.value, def.output);
    if (r == 0) continue;
    if (n <= at || !elementwise(c)) return false;
    sites += r;
    last = n;
    reader = &c;
  }
  if (sites == 0 || sites >= 1000) return false; // dead, or read only where it cannot be inlined
  for (size_t n = at + 1; n < last; ++n)
    if (inputs.count(k.body[n].output)) return false; // what it reads changes before its reader
  if (cheap(def.value)) return true;
  if (sites != 1) return false;
  auto defined = domain_size(def, b), read = domain_size(*reader, b);
  return defined && read && *read <= *defined;
}

} // namespace

std::optional<std::string> next_inline_candidate(const Kernel& k, const ShapeBindings& b,
                                                 const std::set<std::string>& refused) {
  for (size_t n = 0; n < k.body.size(); ++n)
    if (!refused.count(k.body[n].output) && qualifies(k, n, b)) return k.body[n].output;
  return std::nullopt;
}

} // namespace unitile
