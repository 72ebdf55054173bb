// unroll: a short loop is unrolled completely, so a register tile's indices become
// constants the host compiler can keep in registers; with a factor, a serial loop gets
// the hint that the host compiler unroll it that many times (Primitives.h).
#include "schedule/LoopRewrite.h"
#include "schedule/Primitives.h"

#include <fmt/core.h>

namespace unitile {

Stmt unroll_loop(const Stmt& body, const std::string& v, int64_t factor) {
  int applied = 0;
  Stmt r = mutate(body, [&](const Stmt& s) -> Stmt {
    if (s->kind != StmtKind::For || s->var != v) return s;
    if (factor > 0) {
      if (factor < 2 || factor > 64)
        throw UserError(fmt::format("error: schedule: unroll {} {}: the factor must be 2 to 64", v, factor));
      if (s->for_kind != ForKind::Serial)
        throw UserError(fmt::format("error: schedule: unroll {} {}: '{}' is a {} loop; only a serial loop "
                                    "takes an unroll factor", v, factor, v, for_kind_name(s->for_kind)));
      ++applied;
      auto n = std::make_shared<StmtNode>(*s);
      n->unroll_by = factor;
      return n;
    }
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
