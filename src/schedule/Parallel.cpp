// parallel: a loop's iterations run on the device's compute units. The grid is how every
// device runs work in parallel (cpu blocks go to its thread pool), so the loop becomes
// the next free grid axis; it must be outermost, and its iterations must not race.
#include "schedule/IndexArith.h"
#include "schedule/LoopRewrite.h"
#include "schedule/Primitives.h"

#include <fmt/core.h>

#include <set>

namespace unitile {

namespace {

// `e` changes with `v` other than through a tensor read: a read such as `Idx[i]` may give
// the same value for two iterations (a scatter's repeated indices), so it does not count.
bool moves_with(const Expr& e, const std::string& v) {
  if (e->kind == ExprKind::Var) return e->name == v;
  if (e->kind == ExprKind::Access) return false;
  for (const Expr& o : e->operands)
    if (moves_with(o, v)) return true;
  return false;
}

// Every store to a buffer not allocated inside `s` must move with `v`.
void find_conflict(const Stmt& s, const std::string& v, std::set<std::string>& local, std::string& why) {
  if (!why.empty()) return;
  if (s->kind == StmtKind::Allocate) local.insert(s->buffer);
  if (s->kind == StmtKind::Store && !local.count(s->buffer)) {
    bool moves = false;
    bool indirect = false;
    for (const Expr& i : s->indices) {
      moves |= moves_with(i, v);
      indirect |= depends_on(i, v);
    }
    if (!moves && indirect)
      why = fmt::format("iterations of '{}' may write the same element of {}[...]: it moves only through "
                        "data-dependent indices (a scatter's indices may repeat)",
                        v, s->buffer);
    else if (!moves)
      why = fmt::format("iterations of '{}' would all write {}[...] at the same element (a reduction over '{}' "
                        "cannot run in parallel)",
                        v, s->buffer, v);
  }
  for (const Stmt& b : s->body) find_conflict(b, v, local, why);
  if (s->kind == StmtKind::Allocate) local.erase(s->buffer);
}

} // namespace

std::string parallel_conflict(const Stmt& body, const std::string& v) {
  std::set<std::string> local;
  std::string why;
  find_conflict(body, v, local, why);
  return why;
}

Stmt parallelize_loop(const Stmt& body, const std::string& v) {
  // Walk down through the grid loops and Lets at the top of the func.
  int axis = 0;
  std::function<Stmt(const Stmt&)> walk = [&](const Stmt& s) -> Stmt {
    if (s->kind == StmtKind::For && s->var == v) {
      if (axis > 2)
        throw UserError(fmt::format("error: schedule: parallel {}: all three grid axes are taken", v));
      if (!const_int_value(s->extent))
        throw UserError(fmt::format("error: schedule: parallel {}: its extent is not constant", v));
      if (std::string why = parallel_conflict(s->body[0], v); !why.empty())
        throw UserError(fmt::format("error: schedule: parallel {}: {}", v, why));
      return with_kind(s, static_cast<ForKind>(static_cast<int>(ForKind::GridX) + axis));
    }
    if (s->kind == StmtKind::For && s->for_kind >= ForKind::GridX && s->for_kind <= ForKind::GridZ) {
      axis = std::max(axis, static_cast<int>(s->for_kind) - static_cast<int>(ForKind::GridX) + 1);
      return with_body(s, {walk(s->body[0])});
    }
    if (s->kind == StmtKind::Let) return with_body(s, {walk(s->body[0])});
    throw UserError(fmt::format(
        "error: schedule: parallel {}: the loop must be the outermost of its func (only grid "
        "loops may enclose it)",
        v));
  };
  if (find_loops(body, v).empty())
    throw UserError(fmt::format("error: schedule: parallel {}: no loop '{}' here", v, v));
  return walk(body);
}

} // namespace unitile
