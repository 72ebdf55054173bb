// prefetch: a multi-pass loop body (a per-slice chain: a row's max, then its sum, then
// its normalised values) reads memory only in its first pass; the later passes find
// the slice in L1, and memory idles meanwhile. A hint for the next slice in the last
// pass that reads the slice keeps memory busy while the core computes, so one core
// streams at close to the bandwidth of a plain loop (the last pass itself may read only
// a row buffer, as after keep_terms). Results never change (the hint is a no-op on sim).
#include "schedule/IndexArith.h"
#include "schedule/LoopRewrite.h"
#include "schedule/Primitives.h"

#include <fmt/core.h>

#include <functional>
#include <set>

namespace unitile {

namespace {

// The loop nests among the statements of `s` (looking through blocks, lets and
// allocations), in order.
void loop_nests(const Stmt& s, std::vector<const StmtNode*>* out) {
  if (s->kind == StmtKind::For) {
    out->push_back(s.get());
    return;
  }
  if (s->kind == StmtKind::Block || s->kind == StmtKind::Let || s->kind == StmtKind::Allocate)
    for (const Stmt& c : s->body)
      loop_nests(c, out);
}

// The innermost loop of the perfect nest starting at `l`.
const StmtNode* innermost(const StmtNode* l) {
  while (l->body[0]->kind == StmtKind::For)
    l = l->body[0].get();
  return l;
}

// Iterations of the nest at `l` (constant extents; 0 when one is not).
int64_t trips(const StmtNode* l) {
  int64_t n = 1;
  for (;; l = l->body[0].get()) {
    auto e = const_int_value(l->extent);
    n *= e ? *e : 0;
    if (l->body[0]->kind != StmtKind::For)
      return n;
  }
}

// Whether the body of loop `inner` reads `buffer` at an element that moves with `at`.
bool reads_moving(const StmtNode* inner, const std::string& buffer, const std::string& at) {
  bool found = false;
  std::function<void(const Stmt&)> walk = [&](const Stmt& x) {
    for (const Expr& e : {x->value, x->cond})
      visit(e, [&](const Expr& a) {
        if (a->kind != ExprKind::Access || a->name != buffer || a->guard)
          return;
        for (const Expr& i : a->operands)
          found |= depends_on(i, at);
      });
    for (const Stmt& b : x->body)
      walk(b);
  };
  walk(inner->body[0]);
  return found;
}

// The nest whose innermost loop gets the hints: the last one that reads `buffer` (the
// longest of them, when a short tail loop comes after a vector loop), else the last.
const StmtNode* hinted_nest(const Stmt& s, const std::string& buffer, const std::string& at) {
  std::vector<const StmtNode*> nests;
  loop_nests(s, &nests);
  const StmtNode* best = nullptr;
  for (const StmtNode* l : nests)
    if (reads_moving(innermost(l), buffer, at) && (!best || trips(l) >= trips(best)))
      best = l;
  return best ? best : nests.empty() ? nullptr : nests.back();
}

} // namespace

Stmt prefetch_next(const Stmt& body, const std::string& buffer, const std::string& at, int cache_level) {
  auto fail = [&](const std::string& why) {
    return UserError(fmt::format("error: schedule: prefetch {} at {}: {}", buffer, at, why));
  };
  if (cache_level != 1 && cache_level != 2)
    throw fail(fmt::format("cache level {}: a prefetch fills level 1 or 2", cache_level));
  std::vector<const StmtNode*> loops = find_loops(body, at);
  if (loops.empty())
    throw fail(fmt::format("no loop '{}' here", at));
  int applied = 0;
  Stmt r = mutate(body, [&](const Stmt& s) -> Stmt {
    if (s->kind != StmtKind::For || s->var != at)
      return s;
    auto extent = const_int_value(s->extent);
    if (!extent)
      throw fail(fmt::format("loop '{}' has no constant extent", at));
    const StmtNode* last = hinted_nest(s->body[0], buffer, at);
    if (!last)
      throw fail(fmt::format("loop '{}' holds no loop nest", at));
    const StmtNode* inner = innermost(last);
    // Loops inside that body (a reduction's vector loops under an allocation): a read
    // indexed by their variables has no address where the hint goes.
    std::set<std::string> nested;
    std::function<void(const Stmt&)> bound = [&](const Stmt& x) {
      if (x->kind == StmtKind::For)
        nested.insert(x->var);
      for (const Stmt& b : x->body)
        bound(b);
    };
    bound(inner->body[0]);
    // The reads of `buffer` in the innermost body whose indices move with `at` (and use
    // no variable of a loop nested there).
    std::vector<std::vector<Expr>> reads;
    std::function<void(const Stmt&)> collect = [&](const Stmt& x) {
      auto look = [&](const Expr& e) {
        if (!e)
          return;
        visit(e, [&](const Expr& a) {
          if (a->kind != ExprKind::Access || a->name != buffer || a->guard)
            return;
          bool moves = false, inner_var = false;
          for (const Expr& i : a->operands) {
            moves |= depends_on(i, at);
            for (const std::string& v : nested)
              inner_var |= depends_on(i, v);
          }
          if (!moves || inner_var)
            return;
          for (const std::vector<Expr>& seen : reads) {
            bool same = seen.size() == a->operands.size();
            for (size_t k = 0; same && k < seen.size(); ++k)
              same = equal(seen[k], a->operands[k]);
            if (same)
              return;
          }
          reads.push_back(a->operands);
        });
      };
      look(x->value);
      look(x->cond);
      for (const Expr& i : x->indices)
        look(i);
      for (const Stmt& b : x->body)
        collect(b);
    };
    collect(inner->body[0]);
    if (reads.empty())
      throw fail(fmt::format(
          "the innermost loop '{}' of the last nest in '{}' reads no element of {} that "
          "moves with '{}' (outside the loops nested in its body)",
          inner->var, at, buffer, at));
    // The next iteration, clamped to the last so the address stays inside the buffer.
    const Expr next = call(MathFn::Min, {binary(BinaryOp::Add, var(at), int_imm(1)),
                                         binary(BinaryOp::Add, s->min, int_imm(*extent - 1))});
    std::vector<Stmt> hints;
    for (const std::vector<Expr>& idx : reads) {
      std::vector<Expr> moved;
      for (const Expr& i : idx)
        moved.push_back(simplify(rewrite(i, [&](const Expr& e) -> Expr {
          return e->kind == ExprKind::Var && e->name == at ? next : e;
        })));
      hints.push_back(prefetch(buffer, std::move(moved), 1, cache_level));
    }
    Stmt inner_body = inner->body[0];
    hints.push_back(inner_body);
    Stmt hinted = block(std::move(hints));
    ++applied;
    return mutate(s, [&](const Stmt& x) -> Stmt {
      if (x->kind == StmtKind::For && x->var == inner->var && x->body[0] == inner_body)
        return with_body(x, {hinted});
      return x;
    });
  });
  if (!applied)
    throw fail(fmt::format("no loop '{}' here", at));
  return r;
}

} // namespace unitile
