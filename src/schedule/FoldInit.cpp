// fold_init: drop a reduction's init launch; the update reads the identity instead of
// the output the first time it visits each element.
//
// Why: an in-place reduction `C[i, j] += ...` lowers to two launches, one that fills C
// with the identity and one that accumulates. For a register-blocked GEMM that is a
// whole extra pass over C in memory, and the first reduction block then loads the zeros
// back into the register tile. Folded, the tile starts as zeros in registers on the
// first reduction block and C is written once when the reduction fits one block.
//
// Legality: every read of the output in the update reads one element `C[idx]`; the
// loops around it that do not move `idx` are the ones that revisit the element, so the
// first visit is the iteration where each of them is at its first value. That holds
// when no `if` between those loops and the read depends on them (a branch taken only on
// later visits would see the identity), and no `let` hides a loop variable in `idx`.
#include "schedule/LoopRewrite.h"
#include "schedule/Primitives.h"

#include <fmt/core.h>

#include <set>

namespace unitile {

namespace {

// The store value of an init launch: loops (and blocks) around one store of a constant.
Expr init_value(const Stmt& s, const std::string& b) {
  if (s->kind == StmtKind::For || (s->kind == StmtKind::Block && s->body.size() == 1))
    return init_value(s->body[0], b);
  if (s->kind != StmtKind::Store || s->buffer != b) return nullptr;
  if (s->value->kind != ExprKind::FloatImm && s->value->kind != ExprKind::IntImm) return nullptr;
  return s->value;
}

struct Folder {
  const std::string& buffer;
  const std::string& what;
  Expr identity;
  std::vector<const StmtNode*> loops; // enclosing For nodes, outermost first
  std::vector<Expr> conds;            // enclosing If conditions
  std::set<std::string> lets;

  UserError fail(const std::string& why) const {
    return UserError(fmt::format("error: schedule: {}: {}", what, why));
  }

  // The condition "first visit of element idx" at the current point: each enclosing
  // loop that does not move idx is at its first iteration. nullptr: always (no such loop).
  Expr first_visit(const std::vector<Expr>& idx) const {
    for (const std::string& l : lets)
      for (const Expr& i : idx)
        if (depends_on(i, l))
          throw fail(fmt::format("the index of {} uses '{}', bound by a let", buffer, l));
    Expr cond;
    std::vector<std::string> revisiting;
    for (const StmtNode* l : loops) {
      bool moves = false;
      for (const Expr& i : idx) moves |= depends_on(i, l->var);
      if (moves) continue;
      revisiting.push_back(l->var);
      Expr at_first = binary(BinaryOp::Eq, var(l->var), l->min);
      cond = cond ? binary(BinaryOp::And, cond, at_first) : at_first;
    }
    for (const Expr& c : conds)
      for (const std::string& v : revisiting)
        if (depends_on(c, v))
          throw fail(fmt::format("a branch around a read of {} depends on loop '{}', which revisits the element",
                                 buffer, v));
    return cond;
  }

  // The single index a statement's value reads the buffer at (none: empty).
  std::vector<Expr> read_index(const Expr& e) const {
    std::vector<Expr> idx;
    bool any = false;
    visit(e, [&](const Expr& a) {
      if (a->kind != ExprKind::Access || a->name != buffer) return;
      if (a->guard) throw fail(fmt::format("a guarded read of {} cannot be folded", buffer));
      if (any) {
        bool same = a->operands.size() == idx.size();
        for (size_t n = 0; same && n < idx.size(); ++n) same = equal(a->operands[n], idx[n]);
        if (!same) throw fail(fmt::format("one statement reads {} at two different elements", buffer));
      }
      idx = a->operands;
      any = true;
    });
    return idx;
  }

  Expr replace_reads(const Expr& e, const Expr& by) const {
    return rewrite(e, [&](const Expr& a) -> Expr {
      return a->kind == ExprKind::Access && a->name == buffer ? by : a;
    });
  }

  Stmt walk(const Stmt& s) {
    for (const Expr& e : {s->min, s->extent, s->cond})
      if (e && !read_index(e).empty()) throw fail(fmt::format("a loop bound or branch reads {}", buffer));
    switch (s->kind) {
    case StmtKind::For: {
      loops.push_back(s.get());
      Stmt r = walk_children(s);
      loops.pop_back();
      return r;
    }
    case StmtKind::If: {
      conds.push_back(s->cond);
      Stmt r = walk_children(s);
      conds.pop_back();
      return r;
    }
    case StmtKind::Let: {
      if (!read_index(s->value).empty()) throw fail(fmt::format("a let reads {}", buffer));
      lets.insert(s->var);
      Stmt r = walk_children(s);
      lets.erase(s->var);
      return r;
    }
    case StmtKind::Store: {
      std::vector<Expr> idx = read_index(s->value);
      for (const Expr& i : s->indices)
        if (!read_index(i).empty()) throw fail(fmt::format("an index reads {}", buffer));
      if (idx.empty()) return s;
      Expr first = first_visit(idx);
      auto n = std::make_shared<StmtNode>(*s);
      if (!first) {
        n->value = replace_reads(s->value, identity);
        return n;
      }
      // A store that only reads the buffer (a register tile's load) is unswitched by the
      // caller; here the read becomes a select, which vector code evaluates as a blend.
      Expr original = nullptr;
      visit(s->value, [&](const Expr& a) {
        if (!original && a->kind == ExprKind::Access && a->name == buffer) original = a;
      });
      n->value = replace_reads(s->value, select(first, identity, original));
      return n;
    }
    default: return walk_children(s);
    }
  }

  Stmt walk_children(const Stmt& s) {
    if (s->body.empty()) return s;
    std::vector<Stmt> body;
    for (const Stmt& c : s->body) body.push_back(unswitch_or_walk(c));
    return with_body(s, std::move(body));
  }

  // A loop nest that reads the buffer but never writes it (the load of a cached tile)
  // and whose first-visit condition does not depend on its own loops is duplicated
  // under `if (first) {identity} else {load}` rather than blending in every element.
  Stmt unswitch_or_walk(const Stmt& s) {
    if (s->kind != StmtKind::For || stmt_writes(s, buffer) || !stmt_reads(s, buffer)) return walk(s);
    // The condition as seen from inside this nest: find the read and its index.
    std::vector<Expr> idx;
    std::function<void(const Stmt&)> find = [&](const Stmt& x) {
      if (x->kind == StmtKind::Store && idx.empty()) idx = read_index(x->value);
      for (const Stmt& c : x->body) find(c);
    };
    find(s);
    if (idx.empty()) return walk(s);
    Expr first = first_visit(idx);
    // Loops of this nest that do not move idx would enter the condition: then no.
    std::function<bool(const Stmt&)> own_revisits = [&](const Stmt& x) {
      if (x->kind == StmtKind::For) {
        bool moves = false;
        for (const Expr& i : idx) moves |= depends_on(i, x->var);
        if (!moves) return true;
      }
      for (const Stmt& c : x->body)
        if (own_revisits(c)) return true;
      return false;
    };
    if (!first || own_revisits(s)) return walk(s);
    Stmt from_identity = map_exprs(s, [&](const Expr& a) -> Expr {
      return a->kind == ExprKind::Access && a->name == buffer ? identity : a;
    });
    return if_then(first, from_identity, s);
  }
};

} // namespace

LoopProgram fold_init(const LoopProgram& p, const std::string& buffer) {
  const std::string what = fmt::format("fold_init {}", buffer);
  auto fail = [&](const std::string& why) { return UserError(fmt::format("error: schedule: {}: {}", what, why)); };
  std::vector<size_t> writers;
  for (size_t n = 0; n < p.funcs.size(); ++n)
    if (stmt_writes(p.funcs[n].body, buffer)) writers.push_back(n);
  if (writers.size() != 2 || !p.funcs[writers[0]].name.ends_with("_init") ||
      p.funcs[writers[0]].name != p.funcs[writers[1]].name + "_init")
    throw fail(fmt::format("'{}' is not written by an init launch followed by its reduction", buffer));
  const LoopFunc& init = p.funcs[writers[0]];
  Expr identity = init_value(init.body, buffer);
  if (!identity) throw fail(fmt::format("the init launch of '{}' does not store one constant", buffer));
  for (size_t n = writers[0] + 1; n < writers[1]; ++n)
    if (stmt_reads(p.funcs[n].body, buffer))
      throw fail(fmt::format("launch '{}' reads '{}' between its init and its update", p.funcs[n].name, buffer));
  Folder f{buffer, what, identity, {}, {}, {}};
  LoopProgram out = p;
  out.funcs[writers[1]].body = f.unswitch_or_walk(p.funcs[writers[1]].body);
  out.funcs.erase(out.funcs.begin() + static_cast<std::ptrdiff_t>(writers[0]));
  return out;
}

} // namespace unitile
