// Shared Loop IR rebuilding tools of the schedule primitives (see LoopRewrite.h).
#include "schedule/LoopRewrite.h"

#include <fmt/core.h>

#include <set>

namespace unitile {

Stmt with_body(const Stmt& s, std::vector<Stmt> body) {
  auto n = std::make_shared<StmtNode>(*s);
  n->body = std::move(body);
  return n;
}

Stmt with_kind(const Stmt& s, ForKind kind) {
  auto n = std::make_shared<StmtNode>(*s);
  n->for_kind = kind;
  return n;
}

Stmt mutate(const Stmt& s, const std::function<Stmt(const Stmt&)>& f) {
  if (!s) return s;
  std::vector<Stmt> body;
  bool changed = false;
  for (const Stmt& b : s->body) {
    body.push_back(mutate(b, f));
    changed |= body.back() != b;
  }
  return f(changed ? with_body(s, std::move(body)) : s);
}

Stmt map_exprs(const Stmt& s, const std::function<Expr(const Expr&)>& f) {
  return mutate(s, [&](const Stmt& x) -> Stmt {
    auto n = std::make_shared<StmtNode>(*x);
    auto fix = [&](Expr& e) {
      if (e) e = rewrite(e, f);
    };
    fix(n->min);
    fix(n->extent);
    fix(n->cond);
    fix(n->value);
    for (Expr& i : n->indices) fix(i);
    return n;
  });
}

std::optional<int64_t> const_int_value(const Expr& e) {
  if (e && e->kind == ExprKind::IntImm) return e->int_value;
  return std::nullopt;
}

namespace {

Expr fold(const Expr& e, const LoopExtents& loops) {
  if (e->kind == ExprKind::Call && e->math_fn == MathFn::Min && e->operands.size() == 2 &&
      e->type == DType::I64) {
    auto a = const_int_value(e->operands[0]), b = const_int_value(e->operands[1]);
    if (a && b) return int_imm(std::min(*a, *b));
    if (a) {
      auto r = bounds_of(e->operands[1], loops);
      if (r && r->min >= *a) return e->operands[0];
    }
    return e;
  }
  if (e->kind != ExprKind::Binary || e->type != DType::I64) return e;
  const Expr& x = e->operands[0];
  const Expr& y = e->operands[1];
  auto a = const_int_value(x), b = const_int_value(y);
  switch (e->binary_op) {
  case BinaryOp::Add:
    if (a && b) return int_imm(*a + *b);
    if (a && *a == 0) return y;
    if (b && *b == 0) return x;
    break;
  case BinaryOp::Sub:
    if (a && b) return int_imm(*a - *b);
    if (b && *b == 0) return x;
    break;
  case BinaryOp::Mul:
    if (a && b) return int_imm(*a * *b);
    if ((a && *a == 0) || (b && *b == 0)) return int_imm(0);
    if (a && *a == 1) return y;
    if (b && *b == 1) return x;
    break;
  case BinaryOp::FloorDiv:
    if (a && b && *b > 0) return int_imm(*a >= 0 ? *a / *b : -((-*a + *b - 1) / *b));
    if (b && *b == 1) return x;
    break;
  case BinaryOp::Mod:
    if (a && b && *b > 0) return int_imm(((*a % *b) + *b) % *b);
    if (b && *b == 1) return int_imm(0);
    break;
  default:
    break;
  }
  return e;
}

// Constant loop extents visible at each point, for folding split tails.
Stmt simplify_in(const Stmt& s, LoopExtents& loops) {
  auto n = std::make_shared<StmtNode>(*s);
  auto fix = [&](Expr& e) {
    if (e) e = simplify(e, loops);
  };
  fix(n->min);
  fix(n->extent);
  fix(n->cond);
  fix(n->value);
  for (Expr& i : n->indices) fix(i);
  std::optional<int64_t> saved;
  bool bound = false;
  if (n->kind == StmtKind::For) {
    auto it = loops.find(n->var);
    if (it != loops.end()) saved = it->second;
    auto lo = const_int_value(n->min);
    auto ext = max_extent(n->extent);
    if (lo && *lo == 0 && ext) {
      loops[n->var] = *ext;
      bound = true;
    } else {
      loops.erase(n->var);
    }
  }
  for (Stmt& b : n->body) b = simplify_in(b, loops);
  if (n->kind == StmtKind::For) {
    if (saved) loops[n->var] = *saved;
    else if (bound) loops.erase(n->var);
  }
  return n;
}

} // namespace

Expr simplify(const Expr& e, const LoopExtents& loops) {
  return rewrite(e, [&](const Expr& x) { return fold(x, loops); });
}

Stmt simplify(const Stmt& s) {
  LoopExtents loops;
  return simplify_in(s, loops);
}

Stmt substitute(const Stmt& s, const std::string& v, const Expr& by) {
  Stmt r = map_exprs(s, [&](const Expr& e) -> Expr {
    if (e->kind == ExprKind::Var && e->name == v) return simplify(by);
    return fold(e, {});
  });
  return r;
}

std::vector<const StmtNode*> find_loops(const Stmt& s, const std::string& v) {
  std::vector<const StmtNode*> out;
  std::function<void(const Stmt&)> walk = [&](const Stmt& x) {
    if (x->kind == StmtKind::For && x->var == v) out.push_back(x.get());
    for (const Stmt& b : x->body) walk(b);
  };
  walk(s);
  return out;
}

std::optional<int64_t> max_extent(const Expr& e) {
  // Splits build extents from `+`, `*` and `//` by positive constants around `min(c, x)`,
  // all monotone, so bounding each such min by c bounds the extent.
  if (auto c = const_int_value(e)) return c;
  if (e->kind == ExprKind::Call && e->math_fn == MathFn::Min) {
    auto a = max_extent(e->operands[0]), b = max_extent(e->operands[1]);
    if (a && b) return std::min(*a, *b);
    return a ? a : b;
  }
  if (e->kind != ExprKind::Binary) return std::nullopt;
  auto a = max_extent(e->operands[0]);
  auto c = const_int_value(e->operands[1]);
  if (!a) return std::nullopt;
  switch (e->binary_op) {
  case BinaryOp::Add:
    if (auto b = max_extent(e->operands[1])) return *a + *b;
    return std::nullopt;
  case BinaryOp::Mul:
    if (c && *c > 0) return *a * *c;
    return std::nullopt;
  case BinaryOp::FloorDiv:
    if (c && *c > 0 && *a >= 0) return *a / *c;
    return std::nullopt;
  default: return std::nullopt;
  }
}

std::string fresh_name(const LoopProgram& p, const std::string& base) {
  std::set<std::string> taken;
  for (const LoopBuffer& b : p.buffers) taken.insert(b.name);
  for (const ParamDecl& prm : p.params) taken.insert(prm.name);
  std::function<void(const Stmt&)> walk = [&](const Stmt& x) {
    if (x->kind == StmtKind::For || x->kind == StmtKind::Let) taken.insert(x->var);
    if (x->kind == StmtKind::Allocate) taken.insert(x->buffer);
    for (const Stmt& b : x->body) walk(b);
  };
  for (const LoopFunc& f : p.funcs) walk(f.body);
  if (!taken.count(base)) return base;
  for (int n = 0;; ++n) {
    std::string c = fmt::format("{}_{}", base, n);
    if (!taken.count(c)) return c;
  }
}

NameSet::NameSet(const LoopProgram& p) {
  for (const LoopBuffer& b : p.buffers) taken_.insert(b.name);
  for (const ParamDecl& prm : p.params) taken_.insert(prm.name);
}

std::string NameSet::fresh(const std::string& base) {
  if (taken_.insert(base).second) return base;
  for (int n = 0;; ++n) {
    std::string c = fmt::format("{}_{}", base, n);
    if (taken_.insert(c).second) return c;
  }
}

bool expr_reads(const Expr& e, const std::string& b) {
  bool found = false;
  if (e) visit(e, [&](const Expr& a) { found |= a->kind == ExprKind::Access && a->name == b; });
  return found;
}

bool stmt_reads(const Stmt& s, const std::string& b) {
  if (!s) return false;
  for (const Expr& e : {s->min, s->extent, s->cond, s->value})
    if (expr_reads(e, b)) return true;
  for (const Expr& i : s->indices)
    if (expr_reads(i, b)) return true;
  for (const Stmt& c : s->body)
    if (stmt_reads(c, b)) return true;
  return false;
}

bool stmt_writes(const Stmt& s, const std::string& b) {
  if (!s) return false;
  if (s->kind == StmtKind::Store && s->buffer == b) return true;
  for (const Stmt& c : s->body)
    if (stmt_writes(c, b)) return true;
  return false;
}

} // namespace unitile
