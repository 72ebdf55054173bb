// vectorize: an innermost loop runs as SIMD lanes. Which lanes and whether the body can
// be vector code is the printer's business (it reads the HCD and falls back to scalar
// code); the schedule only says which loop.
#include "schedule/LoopRewrite.h"
#include "schedule/Primitives.h"

#include <fmt/core.h>

namespace unitile {

Stmt vectorize_loop(const Stmt& body, const std::string& v) {
  int applied = 0;
  Stmt r = mutate(body, [&](const Stmt& s) -> Stmt {
    if (s->kind != StmtKind::For || s->var != v) return s;
    bool inner = true;
    std::function<void(const Stmt&)> walk = [&](const Stmt& x) {
      inner &= x->kind != StmtKind::For;
      for (const Stmt& b : x->body) walk(b);
    };
    walk(s->body[0]);
    if (!inner)
      throw UserError(fmt::format("error: schedule: vectorize {}: the loop is not innermost", v));
    ++applied;
    return with_kind(s, ForKind::Vectorized);
  });
  if (!applied) throw UserError(fmt::format("error: schedule: vectorize {}: no loop '{}' here", v, v));
  return r;
}

} // namespace unitile
