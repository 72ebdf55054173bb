// Interval arithmetic for index expressions (see IndexBounds.h).
#include "codegen/IndexBounds.h"

#include <algorithm>

namespace unitile::codegen {

namespace {

std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r))
    return std::nullopt;
  return r;
}

std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    return std::nullopt;
  return r;
}

std::optional<Interval> add(Interval a, Interval b) {
  auto lo = checked_add(a.lo, b.lo), hi = checked_add(a.hi, b.hi);
  if (!lo || !hi)
    return std::nullopt;
  return Interval{*lo, *hi};
}

std::optional<Interval> negate(Interval a) {
  if (a.lo == INT64_MIN)
    return std::nullopt;
  return Interval{-a.hi, -a.lo};
}

std::optional<Interval> mul(Interval a, Interval b) {
  int64_t c[4];
  const int64_t xs[2] = {a.lo, a.hi}, ys[2] = {b.lo, b.hi};
  int n = 0;
  for (int64_t x : xs)
    for (int64_t y : ys) {
      auto p = checked_mul(x, y);
      if (!p)
        return std::nullopt;
      c[n++] = *p;
    }
  return Interval{*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
}

// Floor division of a non-negative range by a positive constant.
std::optional<Interval> floordiv_by_positive(Interval a, int64_t d) {
  if (a.lo < 0)
    return std::nullopt;
  return Interval{a.lo / d, a.hi / d};
}

// The range every value of `t` lies in, whatever the expression.
std::optional<Interval> type_range(DType t) {
  switch (t) {
  case DType::Bool:
    return Interval{0, 1};
  case DType::U8:
    return Interval{0, 255};
  case DType::I8:
    return Interval{-128, 127};
  case DType::I16:
    return Interval{-32768, 32767};
  default:
    return std::nullopt;
  }
}

std::optional<Interval> bounds_impl(const Expr& e, const IntervalEnv& env) {
  if (!e || !(is_integer(e->type) || e->type == DType::Bool))
    return std::nullopt;
  switch (e->kind) {
  case ExprKind::IntImm:
  case ExprKind::BoolImm:
    return Interval{e->int_value, e->int_value};
  case ExprKind::Var: {
    auto it = env.find(e->name);
    if (it != env.end())
      return it->second;
    return type_range(e->type);
  }
  case ExprKind::Unary: {
    if (e->unary_op == UnaryOp::Not)
      return Interval{0, 1};
    if (e->unary_op == UnaryOp::BitNot)
      return type_range(e->type);
    auto x = bounds_impl(e->operands[0], env);
    return x ? negate(*x) : std::nullopt;
  }
  case ExprKind::Binary: {
    BinaryOp op = e->binary_op;
    if (is_comparison(op) || op == BinaryOp::And || op == BinaryOp::Or)
      return Interval{0, 1};
    auto a = bounds_impl(e->operands[0], env), b = bounds_impl(e->operands[1], env);
    if (!a || !b)
      return type_range(e->type);
    switch (op) {
    case BinaryOp::Add:
      return add(*a, *b);
    case BinaryOp::Sub: {
      auto nb = negate(*b);
      return nb ? add(*a, *nb) : std::nullopt;
    }
    case BinaryOp::Mul:
      return mul(*a, *b);
    case BinaryOp::FloorDiv:
      if (b->lo == b->hi && b->lo > 0)
        return floordiv_by_positive(*a, b->lo);
      return std::nullopt;
    case BinaryOp::Div: // truncation equals floor for non-negative operands
      if (b->lo == b->hi && b->lo > 0 && a->lo >= 0)
        return floordiv_by_positive(*a, b->lo);
      return std::nullopt;
    case BinaryOp::Mod:
      // Python semantics: the result lies in [0, d-1] for a positive divisor d.
      if (b->lo > 0) {
        if (a->lo >= 0 && a->hi < b->lo)
          return *a;
        return Interval{0, b->hi - 1};
      }
      return std::nullopt;
    default:
      return std::nullopt;
    }
  }
  case ExprKind::Select: {
    auto a = bounds_impl(e->operands[1], env), b = bounds_impl(e->operands[2], env);
    if (!a || !b)
      return type_range(e->type);
    return Interval{std::min(a->lo, b->lo), std::max(a->hi, b->hi)};
  }
  case ExprKind::Cast: {
    auto x = bounds_impl(e->operands[0], env);
    auto limit = type_range(e->type);
    if (x && (!limit || (x->lo >= limit->lo && x->hi <= limit->hi))) {
      if (e->type == DType::I32 && (x->lo < INT32_MIN || x->hi > INT32_MAX))
        return std::nullopt;
      return x;
    }
    return limit;
  }
  case ExprKind::Call: {
    if (e->math_fn != MathFn::Min && e->math_fn != MathFn::Max)
      return type_range(e->type);
    auto a = bounds_impl(e->operands[0], env), b = bounds_impl(e->operands[1], env);
    if (!a || !b)
      return type_range(e->type);
    if (e->math_fn == MathFn::Min)
      return Interval{std::min(a->lo, b->lo), std::min(a->hi, b->hi)};
    return Interval{std::max(a->lo, b->lo), std::max(a->hi, b->hi)};
  }
  default:
    return type_range(e->type);
  }
}

} // namespace

std::optional<Interval> bounds_of(const Expr& e, const IntervalEnv& env) {
  return bounds_impl(e, env);
}

bool provably_non_negative(const Expr& e, const IntervalEnv& env) {
  auto b = bounds_of(e, env);
  return b && b->lo >= 0;
}

} // namespace unitile::codegen
