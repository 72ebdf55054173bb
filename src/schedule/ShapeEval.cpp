// Integer evaluation of shape and index expressions under concrete bindings.
#include "schedule/ShapeEval.h"

#include <fmt/core.h>

namespace unitile {

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t floor_mod(int64_t a, int64_t b) { return a - floor_div(a, b) * b; }

namespace {

struct Unbound {
  std::string name;
};

int64_t eval(const Expr& e, const ShapeBindings& b, const std::string& what) {
  switch (e->kind) {
  case ExprKind::IntImm:
  case ExprKind::BoolImm: return e->int_value;
  case ExprKind::Var: {
    auto it = b.find(e->name);
    if (it == b.end()) throw Unbound{e->name};
    return it->second;
  }
  case ExprKind::Unary: {
    int64_t x = eval(e->operands[0], b, what);
    if (e->unary_op == UnaryOp::BitNot) return ~x;
    return e->unary_op == UnaryOp::Neg ? -x : (x == 0 ? 1 : 0);
  }
  case ExprKind::Cast: {
    UT_INTERNAL_ASSERT(!is_float(e->type), "shape expression casts to a float type");
    return eval(e->operands[0], b, what);
  }
  case ExprKind::Select:
    return eval(e->operands[0], b, what) != 0 ? eval(e->operands[1], b, what)
                                              : eval(e->operands[2], b, what);
  case ExprKind::Call: {
    if (e->math_fn == MathFn::Min || e->math_fn == MathFn::Max) {
      int64_t x = eval(e->operands[0], b, what), y = eval(e->operands[1], b, what);
      return e->math_fn == MathFn::Min ? std::min(x, y) : std::max(x, y);
    }
    if (e->math_fn == MathFn::Abs) {
      int64_t x = eval(e->operands[0], b, what);
      return x < 0 ? -x : x;
    }
    break;
  }
  case ExprKind::Binary: {
    int64_t x = eval(e->operands[0], b, what), y = eval(e->operands[1], b, what);
    switch (e->binary_op) {
    case BinaryOp::Add: return x + y;
    case BinaryOp::Sub: return x - y;
    case BinaryOp::Mul: return x * y;
    case BinaryOp::Div:
    case BinaryOp::FloorDiv:
    case BinaryOp::Mod:
      if (y == 0)
        throw UserError(fmt::format("error: {}: division by zero in '{}'", what, to_string(e)));
      if (e->binary_op == BinaryOp::Div) return x / y;
      return e->binary_op == BinaryOp::FloorDiv ? floor_div(x, y) : floor_mod(x, y);
    case BinaryOp::Lt: return x < y;
    case BinaryOp::Le: return x <= y;
    case BinaryOp::Gt: return x > y;
    case BinaryOp::Ge: return x >= y;
    case BinaryOp::Eq: return x == y;
    case BinaryOp::Ne: return x != y;
    case BinaryOp::And: return x != 0 && y != 0;
    case BinaryOp::Or: return x != 0 || y != 0;
    case BinaryOp::BitAnd: return x & y;
    case BinaryOp::BitOr: return x | y;
    case BinaryOp::BitXor: return x ^ y;
    case BinaryOp::Shl: return y >= 0 && y < 64 ? static_cast<int64_t>(static_cast<uint64_t>(x) << y) : 0;
    case BinaryOp::Shr: return y >= 0 && y < 64 ? x >> y : (x < 0 ? -1 : 0);
    }
    break;
  }
  case ExprKind::FloatImm:
  case ExprKind::Access: break;
  }
  internal_fail(__FILE__, __LINE__,
                fmt::format("{}: '{}' is not an integer shape expression", what, to_string(e)));
}

} // namespace

std::optional<int64_t> try_eval_int(const Expr& e, const ShapeBindings& b,
                                    const std::string& what) {
  try {
    return eval(e, b, what);
  } catch (const Unbound&) {
    return std::nullopt;
  }
}

int64_t eval_int(const Expr& e, const ShapeBindings& b, const std::string& what) {
  try {
    return eval(e, b, what);
  } catch (const Unbound& u) {
    throw UserError(Diagnostic{
        {}, {}, fmt::format("shape symbol '{}' is not bound (needed by {})", u.name, what),
        fmt::format("pass --shape {}=<value> or an input that has it", u.name), {}, 1});
  }
}

} // namespace unitile
