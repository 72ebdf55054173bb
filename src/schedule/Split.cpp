// split: one loop becomes an outer loop over tiles and an inner loop within a tile.
// Tiling for caches, register blocks and vector widths all start here.
#include "schedule/LoopRewrite.h"
#include "schedule/Primitives.h"

#include <fmt/core.h>

namespace unitile {

Stmt split_loop(const Stmt& body, const std::string& v, int64_t f, const std::string& outer,
                const std::string& inner) {
  if (find_loops(body, v).empty())
    throw UserError(fmt::format("error: schedule: split {} {}: no loop '{}' here", v, f, v));
  if (!find_loops(body, outer).empty() || !find_loops(body, inner).empty())
    throw UserError(fmt::format("error: schedule: split {} {}: a loop named '{}' or '{}' already exists",
                                v, f, outer, inner));
  return mutate(body, [&](const Stmt& s) -> Stmt {
    if (s->kind != StmtKind::For || s->var != v) return s;
    const Expr o = var(outer), i = var(inner), fe = int_imm(f);
    Expr outer_ext, inner_ext;
    auto ext = const_int_value(s->extent);
    if (ext && *ext % f == 0) {
      outer_ext = int_imm(*ext / f);
      inner_ext = fe;
    } else if (ext && *ext <= f) {
      outer_ext = int_imm(1);
      inner_ext = s->extent;
    } else {
      outer_ext = simplify(binary(BinaryOp::FloorDiv, binary(BinaryOp::Add, s->extent, int_imm(f - 1)), fe));
      inner_ext = call(MathFn::Min, {fe, binary(BinaryOp::Sub, s->extent, binary(BinaryOp::Mul, o, fe))});
    }
    Expr at = binary(BinaryOp::Add, s->min, binary(BinaryOp::Add, binary(BinaryOp::Mul, o, fe), i));
    Stmt inside = substitute(s->body[0], v, simplify(at));
    bool grid = s->for_kind >= ForKind::GridX;
    ForKind inner_kind = grid ? ForKind::Serial : s->for_kind;
    ForKind outer_kind = grid ? s->for_kind : ForKind::Serial;
    return for_loop(outer, int_imm(0), outer_ext, outer_kind,
                    for_loop(inner, int_imm(0), inner_ext, inner_kind, inside));
  });
}

} // namespace unitile
