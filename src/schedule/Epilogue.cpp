// epilogue: apply an elementwise consumer of a reduction's local result to each
// finished output tile of the reduction, in the same launch, and never store the local.
//
// Why: `Y[i, j] += X[i, k] * W[k, j]; Z[i, j] = gelu(Y[i, j] + b[j])` is a matmul and
// a map. As two launches Y (M x N) is written to memory and read back; fused, the map
// runs on the register tile's values right after the last reduction block stores them,
// while the tile is still in L1, and Y never exists. The consumer's output takes Y's
// place as the accumulator (same shape and dtype), so partial sums of earlier reduction
// blocks live in Z until the last block applies the map.
//
// Legality: Y is a local written by one launch (its init already folded, see
// FoldInit.cpp) and read by exactly one later launch, a perfect nest storing
// `Z[v1, .., vn] = g(..)` with each loop variable one index of Z, that reads Y only at
// [v1, .., vn] and does not read Z; Z has Y's shape and dtype and the reduction does not
// touch Z. A store of Y's value is final when each loop around it that does not move
// its index is at its last iteration.
#include "schedule/LoopRewrite.h"
#include "schedule/Primitives.h"

#include <fmt/core.h>

#include <map>

namespace unitile {

namespace {

Expr rename_access(const Expr& e, const std::string& from, const std::string& to) {
  return rewrite(e, [&](const Expr& a) -> Expr {
    if (a->kind != ExprKind::Access || a->name != from) return a;
    auto n = std::make_shared<ExprNode>(*a);
    n->name = to;
    return n;
  });
}

struct Fuser {
  const std::string& local;  // Y
  const std::string& output; // Z
  const std::string& what;
  DType dtype;
  std::vector<std::string> consumer_vars; // v1..vn of the consumer's store
  Expr map;                               // g, over consumer_vars and `local`
  std::vector<const StmtNode*> loops;

  UserError fail(const std::string& why) const {
    return UserError(fmt::format("error: schedule: {}: {}", what, why));
  }

  // g with the consumer's variables at `idx` and Y's element replaced by `value`.
  Expr map_at(const std::vector<Expr>& idx, const Expr& value) const {
    std::map<std::string, Expr> at;
    for (size_t n = 0; n < consumer_vars.size(); ++n) at[consumer_vars[n]] = idx[n];
    return rewrite(map, [&](const Expr& e) -> Expr {
      if (e->kind == ExprKind::Access && e->name == local) return value;
      if (e->kind == ExprKind::Var)
        if (auto it = at.find(e->name); it != at.end()) return it->second;
      return e;
    });
  }

  // Each enclosing loop that does not move idx at its last iteration; nullptr: always.
  Expr last_visit(const std::vector<Expr>& idx, const std::vector<const StmtNode*>& around) const {
    Expr cond;
    for (const StmtNode* l : around) {
      bool moves = false;
      for (const Expr& i : idx) moves |= depends_on(i, l->var);
      if (moves) continue;
      Expr last = binary(BinaryOp::Eq, var(l->var),
                         simplify(binary(BinaryOp::Sub, binary(BinaryOp::Add, l->min, l->extent), int_imm(1))));
      cond = cond ? binary(BinaryOp::And, cond, last) : last;
    }
    return cond;
  }

  // The store's index inside `s` (a nest around one store of the output), or empty.
  static const StmtNode* only_store(const Stmt& s) {
    const StmtNode* x = s.get();
    while (x->kind == StmtKind::For && x->body.size() == 1) x = x->body[0].get();
    return x->kind == StmtKind::Store ? x : nullptr;
  }

  Stmt walk(const Stmt& s) {
    if (s->kind == StmtKind::Store && s->buffer == output) {
      // A store inside loops that revisit its element (no register tile): select.
      Expr last = last_visit(s->indices, loops);
      auto n = std::make_shared<StmtNode>(*s);
      Expr mapped = map_at(s->indices, s->value);
      n->value = last ? select(last, mapped, s->value) : mapped;
      return n;
    }
    if (s->kind == StmtKind::For && stmt_writes(s, output) && !stmt_reads(s, output)) {
      // A nest that only stores the output (a register tile's write-back): if every
      // loop of it moves the index, store the map of the tile on the last visit (the
      // same nest, so the registers are read as whole vectors) and the tile otherwise.
      const StmtNode* st = only_store(s);
      bool own_revisit = !st;
      if (st)
        for (const StmtNode* x = s.get(); x->kind == StmtKind::For; x = x->body[0].get()) {
          bool moves = false;
          for (const Expr& i : st->indices) moves |= depends_on(i, x->var);
          own_revisit |= !moves;
        }
      if (!own_revisit) {
        // On the last visit the tile's values are final: store g of them directly.
        Stmt mapped = mutate(s, [&](const Stmt& x) -> Stmt {
          if (x->kind != StmtKind::Store || x->buffer != output) return x;
          auto n = std::make_shared<StmtNode>(*x);
          n->value = map_at(x->indices, x->value);
          return n;
        });
        Expr last = last_visit(st->indices, loops);
        return last ? if_then(last, mapped, s) : mapped;
      }
    }
    if (s->kind == StmtKind::For) loops.push_back(s.get());
    Stmt r = s;
    if (!s->body.empty()) {
      std::vector<Stmt> body;
      for (const Stmt& c : s->body) body.push_back(walk(c));
      r = with_body(s, std::move(body));
    }
    if (s->kind == StmtKind::For) loops.pop_back();
    return r;
  }
};

} // namespace

LoopProgram epilogue(const LoopProgram& p, const std::string& local) {
  const std::string what = fmt::format("epilogue {}", local);
  auto fail = [&](const std::string& why) { return UserError(fmt::format("error: schedule: {}: {}", what, why)); };
  const LoopBuffer* y = p.find_buffer(local);
  if (!y || y->role != TensorRole::Local) throw fail(fmt::format("'{}' is not a local of the kernel", local));
  std::vector<size_t> writers, readers;
  for (size_t n = 0; n < p.funcs.size(); ++n) {
    if (stmt_writes(p.funcs[n].body, local)) writers.push_back(n);
    else if (stmt_reads(p.funcs[n].body, local)) readers.push_back(n);
  }
  if (writers.size() != 1)
    throw fail(fmt::format("'{}' is written by {} launches; one is needed (fold_init {} first)", local,
                           writers.size(), local));
  if (readers.size() != 1 || readers[0] < writers[0])
    throw fail(fmt::format("'{}' must be read by exactly one later launch", local));
  const LoopFunc& prod = p.funcs[writers[0]];
  const LoopFunc& cons = p.funcs[readers[0]];
  // The consumer: a perfect nest around one store Z[v1, .., vn] = g.
  std::vector<const StmtNode*> nest;
  const StmtNode* s = cons.body.get();
  while (s->kind == StmtKind::For && s->body.size() == 1) {
    nest.push_back(s);
    s = s->body[0].get();
  }
  if (s->kind != StmtKind::Store) throw fail("the launch reading it is not a loop nest around one store");
  const LoopBuffer* z = p.find_buffer(s->buffer);
  if (!z || z->shape != y->shape || z->dtype != y->dtype)
    throw fail(fmt::format("'{}' and '{}' differ in shape or dtype", s->buffer, local));
  if (s->indices.size() != nest.size()) throw fail(fmt::format("'{}' is not stored once per iteration", z->name));
  std::vector<std::string> vars;
  for (size_t n = 0; n < nest.size(); ++n) {
    const Expr& i = s->indices[n];
    bool plain = i->kind == ExprKind::Var;
    bool looped = false;
    for (const StmtNode* l : nest)
      looped |= plain && l->var == i->name && const_int_value(l->min) == 0 && const_int_value(l->extent) == z->shape[n];
    for (const std::string& v : vars) plain &= !(plain && v == i->name);
    if (!plain || !looped) throw fail(fmt::format("'{}' is not stored at its loops' variables, one per index", z->name));
    vars.push_back(i->name);
  }
  bool pointwise = true;
  visit(s->value, [&](const Expr& a) {
    if (a->kind != ExprKind::Access) return;
    if (a->name == z->name) pointwise = false;
    if (a->name != local) return;
    if (a->guard || a->operands.size() != vars.size()) pointwise = false;
    for (size_t n = 0; pointwise && n < vars.size(); ++n)
      pointwise = a->operands[n]->kind == ExprKind::Var && a->operands[n]->name == vars[n];
  });
  if (!pointwise)
    throw fail(fmt::format("the statement writing '{}' reads '{}' at other elements than its own, or reads itself",
                           z->name, local));
  if (stmt_reads(prod.body, z->name) || stmt_writes(prod.body, z->name))
    throw fail(fmt::format("the reduction writing '{}' touches '{}'", local, z->name));
  for (size_t n = writers[0] + 1; n < readers[0]; ++n)
    if (stmt_reads(p.funcs[n].body, z->name) || stmt_writes(p.funcs[n].body, z->name))
      throw fail(fmt::format("launch '{}' touches '{}' in between", p.funcs[n].name, z->name));

  // Z takes Y's place, and the map runs where the reduction's values are final.
  Stmt body = mutate(prod.body, [&](const Stmt& x) -> Stmt {
    if ((x->kind != StmtKind::Store && x->kind != StmtKind::Prefetch) || x->buffer != local) return x;
    auto n = std::make_shared<StmtNode>(*x); // a store, or the micro-kernel's hint of the next tile
    n->buffer = z->name;
    return n;
  });
  body = map_exprs(body, [&](const Expr& e) { return rename_access(e, local, z->name); });
  Fuser f{local, z->name, what, z->dtype, vars, s->value, {}};
  LoopProgram out = p;
  out.funcs[writers[0]].body = f.walk(body);
  out.funcs.erase(out.funcs.begin() + static_cast<std::ptrdiff_t>(readers[0]));
  std::erase_if(out.buffers, [&](const LoopBuffer& b) { return b.name == local; });
  return out;
}

} // namespace unitile
