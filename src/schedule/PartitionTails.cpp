// partition_tails: give every full tile of a split loop a constant extent.
//
// Why: a split whose factor does not divide the extent leaves loops of extent
// `min(f, E - o*f)`. Code with such an extent cannot keep a register tile in registers
// or vectorize without a remainder loop; and all but the last tile are full. Testing
// once per tile and running a copy with the constant extent keeps the fast path fast
// and the tail correct.
#include "schedule/LoopRewrite.h"
#include "schedule/Primitives.h"

#include <set>

namespace unitile {

namespace {

void free_vars(const Expr& e, std::set<std::string>& out) {
  visit(e, [&](const Expr& x) {
    if (x->kind == ExprKind::Var) out.insert(x->name);
  });
}

bool is_tail_extent(const Expr& e) {
  return e->kind == ExprKind::Call && e->math_fn == MathFn::Min && const_int_value(e->operands[0]);
}

// The first split tail inside `s` whose test only uses variables in `bound`.
Expr find_tail(const Stmt& s, const std::set<std::string>& bound, const std::vector<Expr>& handled) {
  if (s->kind == StmtKind::For && is_tail_extent(s->extent)) {
    bool done = false;
    for (const Expr& h : handled) done |= equal(h, s->extent);
    std::set<std::string> vars;
    free_vars(s->extent, vars);
    bool ready = true;
    for (const std::string& v : vars) ready &= bound.count(v) > 0;
    if (!done && ready) return s->extent;
  }
  for (const Stmt& b : s->body)
    if (Expr e = find_tail(b, bound, handled)) return e;
  return nullptr;
}

Stmt partition(const Stmt& s, std::set<std::string> bound, std::vector<Expr> handled);

// `body` runs where the variables in `bound` are known: test each tail that depends on
// them here, once, around two copies of the body (the full tile and the tail).
Stmt split_here(const Stmt& body, const std::set<std::string>& bound, std::vector<Expr> handled) {
  Expr tail = find_tail(body, bound, handled);
  if (!tail) {
    if (body->body.empty() || body->kind == StmtKind::For) return body->kind == StmtKind::For ? partition(body, bound, handled) : body;
    std::vector<Stmt> b;
    for (const Stmt& c : body->body) b.push_back(partition(c, bound, handled));
    return with_body(body, std::move(b));
  }
  const int64_t c = *const_int_value(tail->operands[0]);
  Stmt full = simplify(map_exprs(body, [&](const Expr& e) { return equal(e, tail) ? int_imm(c) : e; }));
  handled.push_back(tail);
  return if_then(binary(BinaryOp::Le, tail->operands[0], tail->operands[1]), split_here(full, bound, handled),
                 split_here(body, bound, handled));
}

Stmt partition(const Stmt& s, std::set<std::string> bound, std::vector<Expr> handled) {
  if (s->kind == StmtKind::For) {
    bound.insert(s->var);
    return with_body(s, {split_here(s->body[0], bound, handled)});
  }
  if (s->kind == StmtKind::Let) bound.insert(s->var);
  if (s->body.empty()) return s;
  std::vector<Stmt> b;
  for (const Stmt& c : s->body) b.push_back(partition(c, bound, handled));
  return with_body(s, std::move(b));
}

} // namespace

Stmt partition_tails(const Stmt& body) { return simplify(split_here(body, {}, {})); }

} // namespace unitile
