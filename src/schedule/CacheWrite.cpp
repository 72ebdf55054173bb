// cache_write: accumulate an output tile in a faster scope (registers, a local buffer)
// for the duration of a loop, loading it before and storing it once after.
//
// Why: an in-place reduction `C[i, j] += ...` re-reads and re-writes C at every step of
// the reduction. Holding the tile in registers turns that memory traffic into register
// arithmetic; it is the heart of every fast matrix multiply.
#include "schedule/LoopRewrite.h"
#include "schedule/Primitives.h"

#include <fmt/core.h>

#include <set>

namespace unitile {

Stmt cache_write(const LoopProgram& p, const Stmt& body, const std::string& buffer, MemScope scope,
                 const std::string& at) {
  const std::string what = fmt::format("cache_write {} {} at {}", buffer, mem_scope_name(scope), at);
  const LoopBuffer* dst = p.find_buffer(buffer);
  if (!dst) throw UserError(fmt::format("error: schedule: {}: no tensor '{}'", what, buffer));
  if (find_loops(body, at).empty())
    throw UserError(fmt::format("error: schedule: {}: no loop '{}' here", what, at));
  const std::string cached = fresh_name(p, fmt::format("{}_{}", buffer, mem_scope_name(scope)));
  int applied = 0;
  Stmt r = mutate(body, [&](const Stmt& s) -> Stmt {
    if (s->kind != StmtKind::For || s->var != at) return s;
    // Every access of the buffer inside must use the same indices.
    std::vector<Expr> idx;
    bool any = false;
    auto same = [&](const std::vector<Expr>& x) {
      if (!any) {
        idx = x;
        any = true;
        return;
      }
      bool eq = x.size() == idx.size();
      for (size_t n = 0; eq && n < x.size(); ++n) eq = equal(x[n], idx[n]);
      if (!eq)
        throw UserError(fmt::format("error: schedule: {}: {} is accessed at different indices inside '{}'",
                                    what, buffer, at));
    };
    std::vector<const StmtNode*> loops;
    std::function<void(const Stmt&)> scan = [&](const Stmt& x) {
      if (x->kind == StmtKind::For) loops.push_back(x.get());
      if (x->kind == StmtKind::Store && x->buffer == buffer) same(x->indices);
      for (const Expr& e : {x->min, x->extent, x->cond, x->value})
        if (e)
          visit(e, [&](const Expr& a) {
            if (a->kind == ExprKind::Access && a->name == buffer) {
              if (a->guard)
                throw UserError(fmt::format("error: schedule: {}: a guarded read of {} cannot be cached", what, buffer));
              same(a->operands);
            }
          });
      for (const Stmt& b : x->body) scan(b);
    };
    scan(s->body[0]);
    if (!any) return s;
    std::vector<const StmtNode*> tile_loops;
    std::set<std::string> seen;
    for (const StmtNode* l : loops) {
      bool used = false;
      for (const Expr& i : idx) used |= depends_on(i, l->var);
      if (used && seen.insert(l->var).second) tile_loops.push_back(l);
    }
    std::vector<int64_t> shape;
    std::vector<Expr> cidx;
    for (const StmtNode* l : tile_loops) {
      auto ext = max_extent(l->extent);
      auto mn = const_int_value(l->min);
      if (!ext || !mn || *mn != 0)
        throw UserError(fmt::format("error: schedule: {}: loop '{}' has no constant extent", what, l->var));
      for (const StmtNode* other : loops)
        if (!seen.count(other->var) && depends_on(l->extent, other->var))
          throw UserError(fmt::format("error: schedule: {}: the extent of '{}' depends on loop '{}'", what,
                                      l->var, other->var));
      shape.push_back(*ext);
      cidx.push_back(var(l->var));
    }
    ++applied;
    auto nest = [&](Stmt inner) {
      for (size_t n = tile_loops.size(); n-- > 0;)
        inner = for_loop(tile_loops[n]->var, tile_loops[n]->min, tile_loops[n]->extent,
                         n + 1 == tile_loops.size() ? ForKind::Vectorized : ForKind::Serial, inner);
      return inner;
    };
    Stmt load = nest(store(cached, cidx, access(buffer, idx, dst->dtype)));
    Stmt save = nest(store(buffer, idx, access(cached, cidx, dst->dtype)));
    Stmt inside = mutate(s->body[0], [&](const Stmt& x) -> Stmt {
      if (x->kind != StmtKind::Store || x->buffer != buffer) return x;
      auto n = std::make_shared<StmtNode>(*x);
      n->buffer = cached;
      n->indices = cidx;
      return n;
    });
    inside = map_exprs(inside, [&](const Expr& e) -> Expr {
      if (e->kind != ExprKind::Access || e->name != buffer) return e;
      return access(cached, cidx, dst->dtype, nullptr, e->loc);
    });
    return with_body(s, {allocate(cached, dst->dtype, shape, scope, block({load, inside, save}))});
  });
  if (!applied)
    throw UserError(fmt::format("error: schedule: {}: loop '{}' does not access {}", what, at, buffer));
  return r;
}

} // namespace unitile
