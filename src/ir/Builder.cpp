// The C++ builder (include/unitile/builder.h): turns builder calls into Kernel IR nodes.
#include "unitile/builder.h"

#include "ir/Printer.h"
#include "ir/Verifier.h"

#include <fmt/core.h>

#include <climits>

namespace unitile::builder {

struct KernelState {
  unitile::Kernel kernel;
};

Value::Value(int v) : e_(int_imm(v)) {}
Value::Value(long v) : e_(int_imm(v)) {}
Value::Value(long long v) : e_(int_imm(v)) {}
Value::Value(double v) : e_(float_imm(v)) {}
Value Value::from_bool(bool v) { return Value(bool_imm(v)); }

Index::Index(std::string name) : Value(var(std::move(name))) {}

Value Access::or_else(const Value& fallback) const {
  return Value(access(expr()->name, expr()->operands, expr()->type, fallback.expr()));
}

void Access::record(ReduceKind kind, const Value& v) const {
  Comprehension c;
  c.output = expr()->name;
  bool indirect = false; // an index that reads a tensor makes this a scatter
  for (const Expr& i : expr()->operands) indirect |= i->kind != ExprKind::Var && reads_tensor(i);
  if (indirect) c.store_indices = expr()->operands;
  for (const Expr& i : expr()->operands) {
    if (indirect) break;
    if (i->kind != ExprKind::Var)
      throw UserError(fmt::format("error: kernel '{}': left-hand index '{}' of '{}' must be a bare index variable",
                                  state_->kernel.name, to_string(i), c.output));
    c.indices.push_back(i->name);
  }
  c.reduce = kind;
  c.value = v.expr();
  state_->kernel.body.push_back(std::move(c));
}

void Access::operator=(const Value& v) const { record(ReduceKind::Assign, v); }
void Access::operator=(const Access& v) const { record(ReduceKind::Assign, v); }
void Access::operator+=(const Value& v) const { record(ReduceKind::Add, v); }
void Access::operator*=(const Value& v) const { record(ReduceKind::Mul, v); }
void Access::max_assign(const Value& v) const { record(ReduceKind::Max, v); }
void Access::min_assign(const Value& v) const { record(ReduceKind::Min, v); }

Access Tensor::at(std::vector<Value> indices) const {
  std::vector<Expr> idx;
  for (const Value& v : indices) idx.push_back(v.expr());
  return Access(state_, access(name_, std::move(idx), dtype_));
}

Kernel::Kernel(std::string name) : state_(std::make_shared<KernelState>()) {
  state_->kernel.name = std::move(name);
}

Size Kernel::size(std::string name) const { return Size(var(std::move(name))); }

Tensor Kernel::declare(std::string name, DType dtype, std::vector<Value> shape, TensorRole role) {
  TensorDecl d;
  d.name = name;
  d.dtype = dtype;
  d.role = role;
  for (const Value& v : shape) d.shape.push_back(v.expr());
  state_->kernel.tensors.push_back(std::move(d));
  return Tensor(state_, std::move(name), dtype);
}

Tensor Kernel::input(std::string name, DType dtype, std::vector<Value> shape) {
  return declare(std::move(name), dtype, std::move(shape), TensorRole::Input);
}
Tensor Kernel::output(std::string name, DType dtype, std::vector<Value> shape) {
  return declare(std::move(name), dtype, std::move(shape), TensorRole::Output);
}
Tensor Kernel::local(std::string name, DType dtype, std::vector<Value> shape) {
  return declare(std::move(name), dtype, std::move(shape), TensorRole::Local);
}

Param Kernel::param(std::string name, DType dtype) {
  state_->kernel.params.push_back(ParamDecl{name, dtype, {}});
  return Param(var(std::move(name), dtype));
}

void Kernel::schedule(std::string text) { state_->kernel.schedule_text = std::move(text); }

unitile::Kernel Kernel::build() const {
  unitile::Kernel k = state_->kernel;
  verify(k, SourceFile{});
  return k;
}

namespace {
Value bin(BinaryOp op, const Value& a, const Value& b) { return Value(binary(op, a.expr(), b.expr())); }
} // namespace

Value operator+(const Value& a, const Value& b) { return bin(BinaryOp::Add, a, b); }
Value operator-(const Value& a, const Value& b) { return bin(BinaryOp::Sub, a, b); }
Value operator*(const Value& a, const Value& b) { return bin(BinaryOp::Mul, a, b); }
Value operator/(const Value& a, const Value& b) { return bin(BinaryOp::Div, a, b); }
Value operator%(const Value& a, const Value& b) { return bin(BinaryOp::Mod, a, b); }
Value floordiv(const Value& a, const Value& b) { return bin(BinaryOp::FloorDiv, a, b); }
Value operator<(const Value& a, const Value& b) { return bin(BinaryOp::Lt, a, b); }
Value operator<=(const Value& a, const Value& b) { return bin(BinaryOp::Le, a, b); }
Value operator>(const Value& a, const Value& b) { return bin(BinaryOp::Gt, a, b); }
Value operator>=(const Value& a, const Value& b) { return bin(BinaryOp::Ge, a, b); }
Value operator==(const Value& a, const Value& b) { return bin(BinaryOp::Eq, a, b); }
Value operator!=(const Value& a, const Value& b) { return bin(BinaryOp::Ne, a, b); }
Value operator&&(const Value& a, const Value& b) { return bin(BinaryOp::And, a, b); }
Value operator||(const Value& a, const Value& b) { return bin(BinaryOp::Or, a, b); }

Value operator-(const Value& a) {
  // The parser reads `-5` as the literal -5; fold here too so both front ends agree.
  const Expr& e = a.expr();
  if (e->kind == ExprKind::IntImm && e->int_value != LLONG_MIN) return Value(int_imm(-e->int_value, e->type));
  if (e->kind == ExprKind::FloatImm) return Value(float_imm(-e->float_value, e->type));
  return Value(unary(UnaryOp::Neg, e));
}
Value operator!(const Value& a) { return Value(unary(UnaryOp::Not, a.expr())); }

Value select(const Value& c, const Value& a, const Value& b) {
  return Value(unitile::select(c.expr(), a.expr(), b.expr()));
}
Value cast(DType t, const Value& x) { return Value(unitile::cast(t, x.expr())); }
Value call(MathFn fn, std::vector<Value> args) {
  std::vector<Expr> a;
  for (const Value& v : args) a.push_back(v.expr());
  return Value(unitile::call(fn, std::move(a)));
}

#define UT_UNARY_FN(name, fn) \
  Value name(const Value& x) { return call(MathFn::fn, {x}); }
UT_UNARY_FN(exp, Exp)
UT_UNARY_FN(log, Log)
UT_UNARY_FN(sqrt, Sqrt)
UT_UNARY_FN(rsqrt, Rsqrt)
UT_UNARY_FN(tanh, Tanh)
UT_UNARY_FN(erf, Erf)
UT_UNARY_FN(sigmoid, Sigmoid)
UT_UNARY_FN(abs, Abs)
UT_UNARY_FN(sin, Sin)
UT_UNARY_FN(cos, Cos)
UT_UNARY_FN(tan, Tan)
UT_UNARY_FN(floor, Floor)
UT_UNARY_FN(ceil, Ceil)
UT_UNARY_FN(round, Round)
UT_UNARY_FN(trunc, Trunc)
UT_UNARY_FN(exp2, Exp2)
UT_UNARY_FN(log2, Log2)
UT_UNARY_FN(log1p, Log1p)
UT_UNARY_FN(expm1, Expm1)
UT_UNARY_FN(asin, Asin)
UT_UNARY_FN(acos, Acos)
UT_UNARY_FN(atan, Atan)
UT_UNARY_FN(sinh, Sinh)
UT_UNARY_FN(cosh, Cosh)
UT_UNARY_FN(asinh, Asinh)
UT_UNARY_FN(acosh, Acosh)
UT_UNARY_FN(atanh, Atanh)
UT_UNARY_FN(sign, Sign)
UT_UNARY_FN(isnan, IsNan)
UT_UNARY_FN(isinf, IsInf)
#undef UT_UNARY_FN

Value pow(const Value& x, const Value& y) { return call(MathFn::Pow, {x, y}); }
Value min(const Value& x, const Value& y) { return call(MathFn::Min, {x, y}); }
Value max(const Value& x, const Value& y) { return call(MathFn::Max, {x, y}); }
Value atan2(const Value& y, const Value& x) { return call(MathFn::Atan2, {y, x}); }
Value fma(const Value& a, const Value& b, const Value& c) { return call(MathFn::Fma, {a, b, c}); }

} // namespace unitile::builder
