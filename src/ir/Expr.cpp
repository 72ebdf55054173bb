// Expression factories, operator tables and structural equality.
#include "ir/Expr.h"

#include <cstring>

namespace unitile {

namespace {

std::shared_ptr<ExprNode> node(ExprKind k, DType t, SourceLoc loc) {
  auto n = std::make_shared<ExprNode>();
  n->kind = k;
  n->type = t;
  n->loc = loc;
  return n;
}

struct MathFnInfo {
  MathFn fn;
  const char* name;
  int arity;
};

// The complete list of math functions, in one place.
constexpr MathFnInfo kMathFns[] = {
    {MathFn::Exp, "exp", 1},     {MathFn::Log, "log", 1},       {MathFn::Sqrt, "sqrt", 1},
    {MathFn::Rsqrt, "rsqrt", 1}, {MathFn::Tanh, "tanh", 1},     {MathFn::Erf, "erf", 1},
    {MathFn::Sigmoid, "sigmoid", 1}, {MathFn::Pow, "pow", 2},   {MathFn::Abs, "abs", 1},
    {MathFn::Min, "min", 2},     {MathFn::Max, "max", 2},       {MathFn::Sin, "sin", 1},
    {MathFn::Cos, "cos", 1},     {MathFn::Floor, "floor", 1},   {MathFn::Ceil, "ceil", 1},
    {MathFn::Round, "round", 1}, {MathFn::Exp2, "exp2", 1},     {MathFn::Log2, "log2", 1},
    {MathFn::Log1p, "log1p", 1}, {MathFn::Expm1, "expm1", 1},   {MathFn::Tan, "tan", 1},
    {MathFn::Asin, "asin", 1},   {MathFn::Acos, "acos", 1},     {MathFn::Atan, "atan", 1},
    {MathFn::Sinh, "sinh", 1},   {MathFn::Cosh, "cosh", 1},     {MathFn::Asinh, "asinh", 1},
    {MathFn::Acosh, "acosh", 1}, {MathFn::Atanh, "atanh", 1},   {MathFn::Sign, "sign", 1},
    {MathFn::Trunc, "trunc", 1}, {MathFn::IsNan, "isnan", 1},   {MathFn::IsInf, "isinf", 1},
    {MathFn::Fma, "fma", 3},     {MathFn::Atan2, "atan2", 2},
};

const MathFnInfo& info(MathFn fn) {
  for (const auto& i : kMathFns)
    if (i.fn == fn) return i;
  internal_fail(__FILE__, __LINE__, "unknown MathFn");
}

} // namespace

Expr int_imm(int64_t v, DType t, SourceLoc loc) {
  auto n = node(ExprKind::IntImm, t, loc);
  n->int_value = v;
  return n;
}

Expr float_imm(double v, DType t, SourceLoc loc) {
  auto n = node(ExprKind::FloatImm, t, loc);
  n->float_value = v;
  return n;
}

Expr bool_imm(bool v, SourceLoc loc) {
  auto n = node(ExprKind::BoolImm, DType::Bool, loc);
  n->int_value = v ? 1 : 0;
  return n;
}

Expr var(std::string name, DType t, SourceLoc loc) {
  auto n = node(ExprKind::Var, t, loc);
  n->name = std::move(name);
  return n;
}

Expr access(std::string tensor, std::vector<Expr> indices, DType t, Expr guard, SourceLoc loc) {
  auto n = node(ExprKind::Access, t, loc);
  n->name = std::move(tensor);
  n->operands = std::move(indices);
  n->guard = std::move(guard);
  return n;
}

Expr unary(UnaryOp op, Expr x, SourceLoc loc) {
  auto n = node(ExprKind::Unary, op == UnaryOp::Not ? DType::Bool : x->type, loc);
  n->unary_op = op;
  n->operands = {std::move(x)};
  return n;
}

bool is_comparison(BinaryOp op) {
  switch (op) {
  case BinaryOp::Lt:
  case BinaryOp::Le:
  case BinaryOp::Gt:
  case BinaryOp::Ge:
  case BinaryOp::Eq:
  case BinaryOp::Ne: return true;
  default: return false;
  }
}

bool is_bitwise(BinaryOp op) {
  return op == BinaryOp::BitAnd || op == BinaryOp::BitOr || op == BinaryOp::BitXor ||
         op == BinaryOp::Shl || op == BinaryOp::Shr;
}

Expr binary(BinaryOp op, Expr a, Expr b, SourceLoc loc) {
  DType t = (is_comparison(op) || op == BinaryOp::And || op == BinaryOp::Or)
                ? DType::Bool
                : promote(a->type, b->type);
  auto n = node(ExprKind::Binary, t, loc);
  n->binary_op = op;
  n->operands = {std::move(a), std::move(b)};
  return n;
}

Expr select(Expr c, Expr a, Expr b, SourceLoc loc) {
  auto n = node(ExprKind::Select, promote(a->type, b->type), loc);
  n->operands = {std::move(c), std::move(a), std::move(b)};
  return n;
}

Expr cast(DType t, Expr x, SourceLoc loc) {
  auto n = node(ExprKind::Cast, t, loc);
  n->operands = {std::move(x)};
  return n;
}

Expr call(MathFn fn, std::vector<Expr> args, SourceLoc loc) {
  DType t = DType::F32;
  if (fn == MathFn::IsNan || fn == MathFn::IsInf) {
    t = DType::Bool;
  } else if (!args.empty()) {
    t = args[0]->type;
    for (size_t i = 1; i < args.size(); ++i) t = promote(t, args[i]->type);
  }
  auto n = node(ExprKind::Call, t, loc);
  n->math_fn = fn;
  n->operands = std::move(args);
  return n;
}

Expr with_operands(const Expr& e, std::vector<Expr> operands, Expr guard) {
  auto n = std::make_shared<ExprNode>(*e);
  n->operands = std::move(operands);
  n->guard = std::move(guard);
  return n;
}

const char* binary_op_token(BinaryOp op) {
  switch (op) {
  case BinaryOp::Add: return "+";
  case BinaryOp::Sub: return "-";
  case BinaryOp::Mul: return "*";
  case BinaryOp::Div: return "/";
  case BinaryOp::FloorDiv: return "//";
  case BinaryOp::Mod: return "%";
  case BinaryOp::Lt: return "<";
  case BinaryOp::Le: return "<=";
  case BinaryOp::Gt: return ">";
  case BinaryOp::Ge: return ">=";
  case BinaryOp::Eq: return "==";
  case BinaryOp::Ne: return "!=";
  case BinaryOp::And: return "&&";
  case BinaryOp::Or: return "||";
  case BinaryOp::BitAnd: return "&";
  case BinaryOp::BitOr: return "|";
  case BinaryOp::BitXor: return "^";
  case BinaryOp::Shl: return "<<";
  case BinaryOp::Shr: return ">>";
  }
  return "?";
}

const char* math_fn_name(MathFn fn) { return info(fn).name; }
int math_fn_arity(MathFn fn) { return info(fn).arity; }

std::optional<MathFn> parse_math_fn(std::string_view name) {
  for (const auto& i : kMathFns)
    if (name == i.name) return i.fn;
  return std::nullopt;
}

bool equal(const Expr& a, const Expr& b) {
  if (a == b) return true;
  if (!a || !b) return false;
  if (a->kind != b->kind || a->type != b->type || a->operands.size() != b->operands.size())
    return false;
  switch (a->kind) {
  case ExprKind::IntImm:
  case ExprKind::BoolImm:
    if (a->int_value != b->int_value) return false;
    break;
  case ExprKind::FloatImm:
    // Bitwise, so that NaN equals NaN and -0 differs from 0 (printing must round-trip both).
    if (std::memcmp(&a->float_value, &b->float_value, sizeof(double)) != 0) return false;
    break;
  case ExprKind::Var:
    if (a->name != b->name) return false;
    break;
  case ExprKind::Access:
    if (a->name != b->name || !equal(a->guard, b->guard)) return false;
    break;
  case ExprKind::Unary:
    if (a->unary_op != b->unary_op) return false;
    break;
  case ExprKind::Binary:
    if (a->binary_op != b->binary_op) return false;
    break;
  case ExprKind::Call:
    if (a->math_fn != b->math_fn) return false;
    break;
  case ExprKind::Select:
  case ExprKind::Cast: break;
  }
  for (size_t i = 0; i < a->operands.size(); ++i)
    if (!equal(a->operands[i], b->operands[i])) return false;
  return true;
}

bool reads_tensor(const Expr& e) {
  bool found = false;
  visit(e, [&](const Expr& n) { found |= n->kind == ExprKind::Access; });
  return found;
}

} // namespace unitile
