// unroll: a short loop is unrolled completely, so a register tile's indices become
// constants the host compiler can keep in registers.
#include "schedule/LoopRewrite.h"
#include "schedule/Primitives.h"

#include <fmt/core.h>

namespace unitile {

Stmt unroll_loop(const Stmt& body, const std::string& v) {
  int applied = 0;
  Stmt r = mutate(body, [&](const Stmt& s) -> Stmt {
    if (s->kind != StmtKind::For || s->var != v) return s;
    auto ext = max_extent(s->extent);
    if (!ext || *ext > 64)
      throw UserError(fmt::format(
          "error: schedule: unroll {}: the extent must be a constant of at most 64", v));
    ++applied;
    return with_kind(s, ForKind::Unrolled);
  });
  if (!applied) throw UserError(fmt::format("error: schedule: unroll {}: no loop '{}' here", v, v));
  return r;
}

} // namespace unitile
