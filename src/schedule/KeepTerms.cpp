// keep_terms: a slice's reduction keeps its per-element terms for the map that follows.
//
// Why: a row chain written as mathematics computes the same term twice. Softmax's
// `s[i] += exp(X[i, j] - m[i])` is followed by `Y[i, j] = exp(X[i, j] - m[i]) / s[i]`:
// after compute_at both loops run per row, and the lane-wise exp, not memory, sets the
// speed (it costs more than the row's memory time on one core). Storing each term into
// a row buffer (L1-sized, one per slice) as the reduction computes it, and reading it
// back in the map, computes it once; a C compiler cannot do this itself (the two loops
// are separate and the buffer is a new array). The map's division by the reduction's
// result, the same for the whole slice, becomes a multiply by its reciprocal computed
// once per slice (a vector division costs several multiplies; the result may differ
// from the division by one rounding, within every check's tolerance).
#include "schedule/LoopRewrite.h"
#include "schedule/Primitives.h"

#include <fmt/core.h>

namespace unitile {

namespace {

// A reduction `acc[0] = OP(acc[0], e)`: e, or null.
Expr reduction_term(const Stmt& s, const std::string& acc) {
  if (s->kind != StmtKind::Store || s->buffer != acc || s->indices.size() != 1 ||
      const_int_value(s->indices[0]) != 0)
    return nullptr;
  const Expr& v = s->value;
  const bool binary_op = v->kind == ExprKind::Binary && (v->binary_op == BinaryOp::Add || v->binary_op == BinaryOp::Mul);
  const bool minmax = v->kind == ExprKind::Call && (v->math_fn == MathFn::Max || v->math_fn == MathFn::Min);
  if (!(binary_op || minmax) || v->operands.size() != 2) return nullptr;
  const Expr& a = v->operands[0];
  if (a->kind != ExprKind::Access || a->name != acc || const_int_value(a->operands[0]) != 0) return nullptr;
  if (expr_reads(v->operands[1], acc)) return nullptr;
  return v->operands[1];
}

// The parts of one slice's reduction: `allocate acc { acc[0] = init; for j { acc[0] =
// OP(acc[0], term) }; out[..] = acc[0] }`.
struct Reduction {
  std::string acc;
  size_t loop_at = 0; // the loop's place in the allocation's block
  const StmtNode* loop = nullptr;
  Expr term;
  std::vector<Expr> out_indices; // where the result is stored
};

std::optional<Reduction> match_reduction(const Stmt& s, const std::string& out) {
  if (s->kind != StmtKind::Allocate || s->scope != MemScope::Register || s->shape != std::vector<int64_t>{1})
    return std::nullopt;
  const std::vector<Stmt>& stmts = s->body[0]->kind == StmtKind::Block ? s->body[0]->body : s->body;
  Reduction r;
  r.acc = s->buffer;
  bool stored = false;
  for (size_t n = 0; n < stmts.size(); ++n) {
    const Stmt& x = stmts[n];
    if (x->kind == StmtKind::For && !r.loop && x->body.size() == 1 && x->for_kind == ForKind::Serial &&
        const_int_value(x->min) == 0 && const_int_value(x->extent)) {
      if (Expr t = reduction_term(x->body[0], r.acc)) {
        r.loop = x.get();
        r.loop_at = n;
        r.term = t;
      }
    } else if (x->kind == StmtKind::Store && x->buffer == out && r.loop && x->value->kind == ExprKind::Access &&
               x->value->name == r.acc) {
      r.out_indices = x->indices;
      stored = true;
    }
  }
  if (!r.loop || !stored || !depends_on(r.term, r.loop->var)) return std::nullopt;
  return r;
}

} // namespace

Stmt keep_terms(const LoopProgram& p, const Stmt& body, const std::string& buffer, const std::string& at) {
  auto fail = [&](const std::string& why) {
    return UserError(fmt::format("error: schedule: keep_terms {} at {}: {}", buffer, at, why));
  };
  if (find_loops(body, at).empty()) throw fail(fmt::format("no loop '{}' here", at));
  int applied = 0;
  std::string why = fmt::format("no reduction into {} inside '{}' is followed by a loop reading its terms", buffer, at);
  Stmt r = mutate(body, [&](const Stmt& s) -> Stmt {
    if (s->kind != StmtKind::For || s->var != at || s->body[0]->kind != StmtKind::Block) return s;
    std::vector<Stmt> stmts = s->body[0]->body;
    for (size_t n = 0; n + 1 < stmts.size(); ++n) {
      auto red = match_reduction(stmts[n], buffer);
      if (!red) continue;
      const Stmt& map = stmts[n + 1];
      if (map->kind != StmtKind::For || const_int_value(map->min) != 0 ||
          const_int_value(map->extent) != const_int_value(red->loop->extent)) {
        why = fmt::format("the statement after the reduction into {} is no loop over the same range", buffer);
        continue;
      }
      // The map's stores (a prefetch hint may come first); the term, written in the
      // map's variable, must appear in one of their values.
      const Expr term = rewrite(red->term, [&](const Expr& e) -> Expr {
        return e->kind == ExprKind::Var && e->name == red->loop->var ? var(map->var, e->type) : e;
      });
      std::vector<Stmt> inner = map->body[0]->kind == StmtKind::Block ? map->body[0]->body : map->body;
      bool found = false, plain = true;
      for (const Stmt& x : inner) {
        if (x->kind == StmtKind::Prefetch) continue;
        if (x->kind != StmtKind::Store) {
          plain = false;
          continue;
        }
        visit(x->value, [&](const Expr& e) { found |= equal(e, term); });
      }
      // The term must mean the same in both loops: the map writes nothing it reads.
      bool clobbers = false;
      visit(term, [&](const Expr& e) {
        if (e->kind == ExprKind::Access) clobbers |= stmt_writes(map, e->name);
      });
      if (!plain || !found || clobbers) {
        why = !plain ? fmt::format("the loop after the reduction into {} is not one loop of stores", buffer)
              : clobbers ? fmt::format("the loop after the reduction into {} writes what its term reads", buffer)
                         : fmt::format("the loop after the reduction into {} does not compute its term {}", buffer,
                                       to_string(red->term));
        continue;
      }
      const int64_t extent = *const_int_value(red->loop->extent);
      const DType t = red->term->type;
      const std::string terms = fresh_name(p, buffer + "_terms");
      const Expr kept_j = access(terms, {var(red->loop->var)}, t);
      const Expr kept_map = access(terms, {var(map->var)}, t);
      // The reduction stores each term, then reduces the stored value.
      std::vector<Stmt> alloc_stmts =
          stmts[n]->body[0]->kind == StmtKind::Block ? stmts[n]->body[0]->body : stmts[n]->body;
      const Stmt& loop = alloc_stmts[red->loop_at];
      auto step = std::make_shared<StmtNode>(*loop->body[0]);
      step->value = with_operands(step->value, {step->value->operands[0], kept_j});
      alloc_stmts[red->loop_at] = with_body(loop, {block({store(terms, {var(loop->var)}, red->term), step})});
      const Stmt new_red = with_body(stmts[n], {block(alloc_stmts)});
      // The map reads the kept terms; a division by the reduction's result becomes a
      // multiply by its reciprocal, computed once.
      const LoopBuffer* out = p.find_buffer(buffer);
      const DType rt = out ? out->dtype : t;
      const Expr result = access(buffer, red->out_indices, rt);
      const std::string inv = buffer + "_inv";
      bool divides = false;
      std::vector<Stmt> new_inner;
      for (const Stmt& x : inner) {
        if (x->kind != StmtKind::Store) {
          new_inner.push_back(x);
          continue;
        }
        Expr v = rewrite(x->value, [&](const Expr& e) -> Expr {
          if (equal(e, term)) return kept_map;
          if (e->kind == ExprKind::Binary && e->binary_op == BinaryOp::Div && equal(e->operands[1], result) &&
              is_float(e->type) && e->type == rt) {
            divides = true;
            return binary(BinaryOp::Mul, e->operands[0], var(inv, rt));
          }
          return e;
        });
        auto node = std::make_shared<StmtNode>(*x);
        node->value = v;
        new_inner.push_back(node);
      }
      Stmt new_map = with_body(map, {block(new_inner)});
      if (divides) new_map = let_stmt(inv, binary(BinaryOp::Div, float_imm(1.0, rt), result), new_map);
      stmts[n] = new_red;
      stmts[n + 1] = new_map;
      ++applied;
      std::vector<Stmt> before(stmts.begin(), stmts.begin() + static_cast<long>(n));
      std::vector<Stmt> kept(stmts.begin() + static_cast<long>(n), stmts.begin() + static_cast<long>(n) + 2);
      before.push_back(allocate(terms, t, {extent}, MemScope::Local, block(kept)));
      before.insert(before.end(), stmts.begin() + static_cast<long>(n) + 2, stmts.end());
      return with_body(s, {block(before)});
    }
    return s;
  });
  if (!applied) throw fail(why);
  return r;
}

} // namespace unitile
