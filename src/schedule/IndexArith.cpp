// Linearisation and interval bounds of integer index expressions.
#include "schedule/IndexArith.h"

#include "schedule/ShapeEval.h"

#include <algorithm>

namespace unitile {

int64_t AffineForm::coefficient(const std::string& v) const {
  auto it = coef.find(v);
  return it == coef.end() ? 0 : it->second;
}

namespace {

AffineForm scaled(AffineForm f, int64_t s) {
  AffineForm r;
  r.constant = f.constant * s;
  if (s == 0) return r;
  for (auto& [v, c] : f.coef) r.coef[v] = c * s;
  return r;
}

AffineForm sum(const AffineForm& a, const AffineForm& b, int64_t sign) {
  AffineForm r = a;
  r.constant += sign * b.constant;
  for (const auto& [v, c] : b.coef) {
    int64_t n = r.coefficient(v) + sign * c;
    if (n == 0)
      r.coef.erase(v);
    else
      r.coef[v] = n;
  }
  return r;
}

bool is_const(const AffineForm& f) { return f.coef.empty(); }

Interval of_affine(const AffineForm& f, const LoopExtents& loops, bool* ok) {
  Interval r{f.constant, f.constant};
  for (const auto& [v, c] : f.coef) {
    auto it = loops.find(v);
    if (it == loops.end() || it->second < 1) {
      *ok = false;
      return r;
    }
    int64_t hi = c * (it->second - 1); // the term ranges between 0 and c*(extent-1)
    r.min += std::min<int64_t>(0, hi);
    r.max += std::max<int64_t>(0, hi);
  }
  return r;
}

} // namespace

std::optional<AffineForm> linearize(const Expr& e) {
  if (!e) return std::nullopt;
  switch (e->kind) {
  case ExprKind::IntImm: {
    AffineForm f;
    f.constant = e->int_value;
    return f;
  }
  case ExprKind::Var: {
    AffineForm f;
    f.coef[e->name] = 1;
    return f;
  }
  case ExprKind::Cast:
    if (is_float(e->type)) return std::nullopt;
    return linearize(e->operands[0]);
  case ExprKind::Unary: {
    if (e->unary_op != UnaryOp::Neg) return std::nullopt;
    auto x = linearize(e->operands[0]);
    if (!x) return std::nullopt;
    return scaled(*x, -1);
  }
  case ExprKind::Binary: {
    if (e->binary_op != BinaryOp::Add && e->binary_op != BinaryOp::Sub &&
        e->binary_op != BinaryOp::Mul)
      return std::nullopt;
    auto a = linearize(e->operands[0]);
    auto b = linearize(e->operands[1]);
    if (!a || !b) return std::nullopt;
    if (e->binary_op == BinaryOp::Add) return sum(*a, *b, 1);
    if (e->binary_op == BinaryOp::Sub) return sum(*a, *b, -1);
    if (is_const(*a)) return scaled(*b, a->constant);
    if (is_const(*b)) return scaled(*a, b->constant);
    return std::nullopt;
  }
  default: return std::nullopt;
  }
}

std::optional<Interval> bounds_of(const Expr& e, const LoopExtents& loops) {
  if (!e) return std::nullopt;
  if (auto f = linearize(e)) {
    bool ok = true;
    Interval r = of_affine(*f, loops, &ok);
    if (ok) return r;
    return std::nullopt;
  }
  if (e->kind == ExprKind::Cast && !is_float(e->type)) return bounds_of(e->operands[0], loops);
  if (e->kind == ExprKind::Select) {
    auto a = bounds_of(e->operands[1], loops), b = bounds_of(e->operands[2], loops);
    if (!a || !b) return std::nullopt;
    return Interval{std::min(a->min, b->min), std::max(a->max, b->max)};
  }
  if (e->kind == ExprKind::Call && (e->math_fn == MathFn::Min || e->math_fn == MathFn::Max)) {
    auto a = bounds_of(e->operands[0], loops), b = bounds_of(e->operands[1], loops);
    if (!a || !b) return std::nullopt;
    if (e->math_fn == MathFn::Min) return Interval{std::min(a->min, b->min), std::min(a->max, b->max)};
    return Interval{std::max(a->min, b->min), std::max(a->max, b->max)};
  }
  if (e->kind != ExprKind::Binary) return std::nullopt;
  auto a = bounds_of(e->operands[0], loops), b = bounds_of(e->operands[1], loops);
  if (!a || !b) return std::nullopt;
  switch (e->binary_op) {
  case BinaryOp::Add: return Interval{a->min + b->min, a->max + b->max};
  case BinaryOp::Sub: return Interval{a->min - b->max, a->max - b->min};
  case BinaryOp::Mul: {
    int64_t p[] = {a->min * b->min, a->min * b->max, a->max * b->min, a->max * b->max};
    return Interval{*std::min_element(p, p + 4), *std::max_element(p, p + 4)};
  }
  case BinaryOp::FloorDiv:
    // Floor division by a positive constant is monotonic.
    if (b->min != b->max || b->min <= 0) return std::nullopt;
    return Interval{floor_div(a->min, b->min), floor_div(a->max, b->min)};
  case BinaryOp::Div:
    // Truncating division by a positive constant is monotonic too.
    if (b->min != b->max || b->min <= 0) return std::nullopt;
    return Interval{a->min / b->min, a->max / b->min};
  case BinaryOp::Mod: {
    if (b->min != b->max || b->min <= 0) return std::nullopt;
    int64_t m = b->min;
    // Within one period the value is the operand shifted; otherwise any residue.
    if (floor_div(a->min, m) == floor_div(a->max, m))
      return Interval{floor_mod(a->min, m), floor_mod(a->max, m)};
    return Interval{0, m - 1};
  }
  default: return std::nullopt;
  }
}

bool depends_on(const Expr& e, const std::string& v) {
  bool found = false;
  visit(e, [&](const Expr& n) {
    if (n->kind == ExprKind::Var && n->name == v) found = true;
  });
  return found;
}

bool unit_stride_in(const Expr& access, const std::string& v) {
  const auto& idx = access->operands;
  if (idx.empty()) return false;
  for (size_t d = 0; d + 1 < idx.size(); ++d)
    if (depends_on(idx[d], v)) return false;
  auto f = linearize(idx.back());
  return f && f->coefficient(v) == 1;
}

} // namespace unitile
