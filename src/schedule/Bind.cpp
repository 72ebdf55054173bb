// bind: a loop becomes a grid or thread axis of the launch, for devices that run blocks
// of threads (the grid loops must stay outermost, thread loops directly inside them).
//
// A thread loop needs a constant extent (it is the block's size along its axis). The
// inner loop of a split whose factor does not divide the extent has the extent
// `min(f, E - outer*f)`: bound to threads it keeps f iterations (the block's size) and
// its body runs only where the variable is below that extent, so the last block's extra
// threads do nothing. Threads of a block run at the same time, so, as for `parallel`,
// every store to memory outside the loop must move with its variable.
#include "schedule/LoopRewrite.h"
#include "schedule/Primitives.h"

#include <fmt/core.h>

namespace unitile {

Stmt bind_loop(const Stmt& body, const std::string& v, ForKind kind) {
  if (kind >= ForKind::GridX && kind <= ForKind::GridZ) {
    Stmt r = parallelize_loop(body, v);
    return mutate(r, [&](const Stmt& s) { return s->kind == StmtKind::For && s->var == v ? with_kind(s, kind) : s; });
  }
  int applied = 0;
  Stmt r = mutate(body, [&](const Stmt& s) -> Stmt {
    if (s->kind != StmtKind::For || s->var != v) return s;
    if (std::string why = parallel_conflict(s->body[0], v); !why.empty())
      throw UserError(fmt::format("error: schedule: bind {} {}: {}", v, for_kind_name(kind), why));
    ++applied;
    if (const_int_value(s->extent)) return with_kind(s, kind);
    // A split's tail: `min(f, e)` iterations on f threads, the body guarded by `v < e`.
    const Expr& e = s->extent;
    auto f = e->kind == ExprKind::Call && e->math_fn == MathFn::Min && e->operands.size() == 2
                 ? const_int_value(e->operands[0])
                 : std::nullopt;
    if (!f)
      throw UserError(fmt::format("error: schedule: bind {} {}: its extent is not constant", v,
                                  for_kind_name(kind)));
    Expr end = const_int_value(s->min) == 0 ? e->operands[1] : binary(BinaryOp::Add, s->min, e->operands[1]);
    Stmt guarded = if_then(binary(BinaryOp::Lt, var(v), end), s->body[0]);
    return for_loop(v, s->min, int_imm(*f), kind, guarded);
  });
  if (!applied)
    throw UserError(fmt::format("error: schedule: bind {} {}: no loop '{}' here", v, for_kind_name(kind), v));
  return r;
}

} // namespace unitile
