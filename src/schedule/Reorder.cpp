// reorder: permute loops of a perfect nest, so the innermost loop walks memory with unit
// stride and the loops of a tile sit inside the loops over tiles.
#include "schedule/LoopRewrite.h"
#include "schedule/Primitives.h"

#include <fmt/core.h>

#include <algorithm>
#include <set>

namespace unitile {

namespace {

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (size_t n = 0; n < v.size(); ++n) s += (n ? ", " : "") + v[n];
  return s;
}

} // namespace

Stmt reorder_loops(const Stmt& body, const std::vector<std::string>& order) {
  const std::set<std::string> wanted(order.begin(), order.end());
  if (wanted.size() != order.size())
    throw UserError(fmt::format("error: schedule: reorder {}: a loop is named twice", joined(order)));
  int applied = 0;
  std::function<Stmt(const Stmt&)> walk = [&](const Stmt& s) -> Stmt {
    if (s->kind == StmtKind::For && wanted.count(s->var)) {
      // The perfect chain from here down, as far as it takes to meet every named loop.
      std::vector<Stmt> chain{s};
      size_t found = 1;
      while (found < wanted.size()) {
        const Stmt& last = chain.back();
        if (last->body.size() != 1 || last->body[0]->kind != StmtKind::For) break;
        chain.push_back(last->body[0]);
        found += wanted.count(chain.back()->var);
      }
      if (found == wanted.size()) {
        std::vector<size_t> slots;
        for (size_t n = 0; n < chain.size(); ++n)
          if (wanted.count(chain[n]->var)) slots.push_back(n);
        std::vector<Stmt> loops = chain;
        for (size_t n = 0; n < order.size(); ++n)
          for (const Stmt& c : chain)
            if (c->var == order[n]) loops[slots[n]] = c;
        // Bounds may only use loops outside.
        std::set<std::string> outside;
        for (const Stmt& l : loops) {
          for (const Stmt& inner : chain)
            if (!outside.count(inner->var) && inner->var != l->var &&
                (depends_on(l->extent, inner->var) || depends_on(l->min, inner->var)))
              throw UserError(fmt::format(
                  "error: schedule: reorder {}: the bounds of loop '{}' depend on loop '{}', which "
                  "would be inside it",
                  joined(order), l->var, inner->var));
          outside.insert(l->var);
        }
        // Grid axes belong to the outer slots: a loop that moves into a grid slot takes
        // its kind (if its iterations are independent), a grid loop moved inward runs serially.
        for (size_t n = 0; n < loops.size(); ++n) {
          bool grid_slot = chain[n]->for_kind >= ForKind::GridX && chain[n]->for_kind <= ForKind::GridZ;
          if (loops[n] == chain[n]) continue;
          if (grid_slot) {
            std::string why = parallel_conflict(loops[n]->body[0], loops[n]->var);
            if (!why.empty())
              throw UserError(fmt::format("error: schedule: reorder {}: '{}' would take the place of grid loop "
                                          "'{}', but {}",
                                          joined(order), loops[n]->var, chain[n]->var, why));
            loops[n] = with_kind(loops[n], chain[n]->for_kind);
          } else if (loops[n]->for_kind >= ForKind::GridX && loops[n]->for_kind <= ForKind::GridZ) {
            loops[n] = with_kind(loops[n], ForKind::Serial);
          }
        }
        ++applied;
        Stmt inner = walk(chain.back()->body[0]);
        for (size_t n = loops.size(); n-- > 0;) inner = with_body(loops[n], {inner});
        return inner;
      }
    }
    std::vector<Stmt> b;
    for (const Stmt& c : s->body) b.push_back(walk(c));
    return s->body.empty() ? s : with_body(s, std::move(b));
  };
  Stmt r = walk(body);
  if (applied == 0)
    throw UserError(fmt::format(
        "error: schedule: reorder {}: no perfect loop nest holds all of these loops", joined(order)));
  return r;
}

} // namespace unitile
