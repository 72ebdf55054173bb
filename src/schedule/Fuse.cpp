// fuse: two perfectly nested loops become one, so a 2-D tile grid becomes one parallel
// loop with enough iterations to balance the compute units.
#include "schedule/LoopRewrite.h"
#include "schedule/Primitives.h"

#include <fmt/core.h>

namespace unitile {

Stmt fuse_loops(const Stmt& body, const std::string& a, const std::string& b, const std::string& fused) {
  int applied = 0;
  Stmt r = mutate(body, [&](const Stmt& s) -> Stmt {
    if (s->kind != StmtKind::For || s->var != a) return s;
    if (s->body.size() != 1 || s->body[0]->kind != StmtKind::For || s->body[0]->var != b)
      throw UserError(fmt::format("error: schedule: fuse {}, {}: loop '{}' is not directly inside '{}'",
                                  a, b, b, a));
    const Stmt& in = s->body[0];
    auto ea = const_int_value(s->extent), eb = const_int_value(in->extent);
    auto ma = const_int_value(s->min), mb = const_int_value(in->min);
    if (!ea || !eb || !ma || !mb || *ma != 0 || *mb != 0)
      throw UserError(fmt::format(
          "error: schedule: fuse {}, {}: both loops need constant extents starting at 0", a, b));
    ++applied;
    Expr f = var(fused);
    Stmt inside = substitute(in->body[0], a, binary(BinaryOp::FloorDiv, f, int_imm(*eb)));
    inside = substitute(inside, b, binary(BinaryOp::Mod, f, int_imm(*eb)));
    return for_loop(fused, int_imm(0), int_imm(*ea * *eb), s->for_kind, inside);
  });
  if (applied == 0) throw UserError(fmt::format("error: schedule: fuse {}, {}: no loop '{}' here", a, b, a));
  return r;
}

} // namespace unitile
