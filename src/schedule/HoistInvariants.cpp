// hoist: a loop's costly scalar parts that do not change in it are computed once, before
// it (a let).
//
// Why: layernorm's output loop `Y[i, j] = (X[i, j] - mean[i]) * rsqrt(var[i] + eps) *
// gamma[j] + beta[j]` is the same `rsqrt(var[i] + eps)` for the whole row, but the C
// compiler computes it for every vector of 8: it does not use the `restrict` of the
// entry's local pointers to prove that the stores into Y leave `var` alone, so the load,
// the square root and the division stay in the loop (measured: 0.73-0.93 of the triad
// against 0.96-1.04 with it hoisted by hand; docs/PERFORMANCE.md). Only division and
// math calls are hoisted (what costs more than a load): a part qualifies when it uses no
// variable bound in the loop and reads no buffer the loop stores into, so its value is
// the same in every iteration and computing it before the loop changes nothing (the loop
// runs at least once where it is used; a part of a loop that may run zero times is still
// only a value, never a store, so computing it anyway has no effect on any buffer).
#include "schedule/IndexArith.h"
#include "schedule/LoopRewrite.h"
#include "schedule/Primitives.h"

#include <fmt/core.h>

#include <functional>
#include <set>

namespace unitile {

namespace {

void stored_and_bound(const Stmt& s, std::set<std::string>& stored, std::set<std::string>& bound) {
  if (s->kind == StmtKind::Store) stored.insert(s->buffer);
  if (s->kind == StmtKind::Allocate) stored.insert(s->buffer);
  if (s->kind == StmtKind::For || s->kind == StmtKind::Let) bound.insert(s->var);
  for (const Stmt& c : s->body) stored_and_bound(c, stored, bound);
}

bool stores_into(const Stmt& s, const std::string& b) {
  if (s->kind == StmtKind::Store && s->buffer == b) return true;
  for (const Stmt& c : s->body)
    if (stores_into(c, b)) return true;
  return false;
}

bool costly(const Expr& e) {
  if (e->kind == ExprKind::Call) return true;
  return e->kind == ExprKind::Binary && e->binary_op == BinaryOp::Div && is_float(e->type);
}

} // namespace

Stmt hoist_invariants(const LoopProgram& p, const Stmt& body, const std::string& buffer, const std::string& at) {
  auto fail = [&](const std::string& why) {
    return UserError(fmt::format("error: schedule: hoist {} at {}: {}", buffer, at, why));
  };
  if (find_loops(body, at).empty()) throw fail(fmt::format("no loop '{}' here", at));
  int hoisted = 0;
  // The innermost loops inside `at` that store into `buffer` get the lets.
  std::function<Stmt(const Stmt&)> in_slice = [&](const Stmt& s) -> Stmt {
    return mutate(s, [&](const Stmt& x) -> Stmt {
      if (x->kind != StmtKind::For || x->var == at || !stores_into(x, buffer)) return x;
      // Only the innermost such loop: no loop inside it stores into `buffer`.
      for (const Stmt& c : x->body) {
        bool inner = false;
        std::function<void(const Stmt&)> look = [&](const Stmt& y) {
          if (y->kind == StmtKind::For && stores_into(y, buffer)) inner = true;
          for (const Stmt& z : y->body) look(z);
        };
        look(c);
        if (inner) return x;
      }
      std::set<std::string> stored, bound;
      stored_and_bound(x, stored, bound);
      auto invariant = [&](const Expr& e) {
        bool ok = true;
        visit(e, [&](const Expr& a) {
          if (a->kind == ExprKind::Var && bound.count(a->name)) ok = false;
          if (a->kind == ExprKind::Access && (stored.count(a->name) || a->guard)) ok = false;
        });
        return ok;
      };
      std::vector<std::pair<std::string, Expr>> lets;
      std::function<Expr(const Expr&)> top_down = [&](const Expr& e) -> Expr {
        if (costly(e) && invariant(e)) {
          for (const auto& [n, v] : lets)
            if (equal(v, e)) return var(n, e->type);
          const std::string n = fresh_name(p, fmt::format("{}_h{}", buffer, hoisted++));
          lets.emplace_back(n, e);
          return var(n, e->type);
        }
        std::vector<Expr> ops;
        bool changed = false;
        for (const Expr& o : e->operands) {
          ops.push_back(top_down(o));
          changed |= ops.back() != o;
        }
        return changed ? with_operands(e, std::move(ops), e->guard) : e;
      };
      Stmt r = mutate(x, [&](const Stmt& y) -> Stmt {
        if (y->kind != StmtKind::Store || y->buffer != buffer) return y;
        Expr v = top_down(y->value);
        if (v == y->value) return y;
        auto node = std::make_shared<StmtNode>(*y);
        node->value = v;
        return node;
      });
      for (auto it = lets.rbegin(); it != lets.rend(); ++it) r = let_stmt(it->first, it->second, r);
      return r;
    });
  };
  Stmt r = mutate(body, [&](const Stmt& s) -> Stmt {
    if (s->kind != StmtKind::For || s->var != at) return s;
    return with_body(s, {in_slice(s->body[0])});
  });
  if (!hoisted)
    throw fail(fmt::format("no loop inside '{}' that stores into {} computes a division or math call that is the "
                           "same in all its iterations",
                           at, buffer));
  return r;
}

} // namespace unitile
