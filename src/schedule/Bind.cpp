// bind: a loop becomes a grid or thread axis of the launch, for devices that run blocks
// of threads (the grid loops must stay outermost, thread loops directly inside them).
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
    if (!const_int_value(s->extent))
      throw UserError(fmt::format("error: schedule: bind {} {}: its extent is not constant", v,
                                  for_kind_name(kind)));
    ++applied;
    return with_kind(s, kind);
  });
  if (!applied)
    throw UserError(fmt::format("error: schedule: bind {} {}: no loop '{}' here", v, for_kind_name(kind), v));
  return r;
}

} // namespace unitile
