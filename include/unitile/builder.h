// The C++ builder for Kernel IR: declare a kernel's tensors and write its comprehensions
// as C++ expressions, e.g. `C(i, j) += A(i, k) * B(k, j)`; build() verifies the result.
//
// It produces exactly the Kernel IR the text parser would for the same kernel (the tests
// compare the printed forms), so every later pass sees one IR whichever front end wrote
// it. Errors are the verifier's UserErrors; without source text they name the kernel and
// the statement.
#pragma once

#include "ir/Kernel.h"

#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace unitile::builder {

struct KernelState;

/// An element or index expression under construction. Numbers convert implicitly, so
/// `x * 2` and `i + 1` read as they do in the text syntax.
class Value {
public:
  Value(int v);
  Value(long v);
  Value(long long v);
  Value(double v);
  /// Only a real bool converts (not pointers or other things that decay to bool).
  template <typename B, std::enable_if_t<std::is_same_v<B, bool>, int> = 0>
  Value(B v) : Value(from_bool(v)) {}
  explicit Value(Expr e) : e_(std::move(e)) {}

  const Expr& expr() const { return e_; }

private:
  static Value from_bool(bool v);
  Expr e_;
};

/// An index variable, such as `i` in `C(i, j)`. Its range is inferred by the verifier.
class Index : public Value {
public:
  explicit Index(std::string name);
};

/// A symbolic shape dimension (`M`), bound at call time.
class Size : public Value {
  friend class Kernel;
  explicit Size(Expr e) : Value(std::move(e)) {}
};

/// A scalar param passed at call time.
class Param : public Value {
  friend class Kernel;
  explicit Param(Expr e) : Value(std::move(e)) {}
};

/// `T(i, j)`: a read when used as a value, a statement when assigned or reduced into.
class Access : public Value {
public:
  Access(const Access&) = default;

  /// A guarded read: `fallback` where any index is out of range (the text's `??`).
  Value or_else(const Value& fallback) const;

  void operator=(const Value& v) const;
  void operator=(const Access& v) const;
  void operator+=(const Value& v) const;
  void operator*=(const Value& v) const;
  void max_assign(const Value& v) const; // the text's `max=`
  void min_assign(const Value& v) const; // the text's `min=`

private:
  friend class Tensor;
  Access(std::shared_ptr<KernelState> state, Expr e) : Value(std::move(e)), state_(std::move(state)) {}
  void record(ReduceKind kind, const Value& v) const;
  std::shared_ptr<KernelState> state_;
};

/// A declared tensor; call it with indices to read or write it.
class Tensor {
public:
  template <typename... I> Access operator()(const I&... idx) const {
    return at(std::vector<Value>{Value(idx)...});
  }
  Access at(std::vector<Value> indices) const;
  const std::string& name() const { return name_; }

private:
  friend class Kernel;
  Tensor(std::shared_ptr<KernelState> state, std::string name, DType dtype)
      : state_(std::move(state)), name_(std::move(name)), dtype_(dtype) {}
  std::shared_ptr<KernelState> state_;
  std::string name_;
  DType dtype_;
};

/// A kernel under construction. Declarations keep their call order (the calling
/// convention); statements keep the order they are written in.
class Kernel {
public:
  explicit Kernel(std::string name);

  Size size(std::string name) const;
  Tensor input(std::string name, DType dtype, std::vector<Value> shape);
  Tensor output(std::string name, DType dtype, std::vector<Value> shape);
  Tensor local(std::string name, DType dtype, std::vector<Value> shape);
  Param param(std::string name, DType dtype);
  /// The text of a `schedule { ... }` block, kept with the kernel.
  void schedule(std::string text);

  /// The finished kernel, verified (types, reduction variables and ranges filled in).
  unitile::Kernel build() const;

private:
  Tensor declare(std::string name, DType dtype, std::vector<Value> shape, TensorRole role);
  std::shared_ptr<KernelState> state_;
};

// Arithmetic, comparisons and logic, as in the text syntax. C++ has no `//`: floor
// division is floordiv(a, b); `%` is the text's `%` (the result takes the divisor's sign).
Value operator+(const Value& a, const Value& b);
Value operator-(const Value& a, const Value& b);
Value operator*(const Value& a, const Value& b);
Value operator/(const Value& a, const Value& b);
Value operator%(const Value& a, const Value& b);
Value floordiv(const Value& a, const Value& b);
Value operator<(const Value& a, const Value& b);
Value operator<=(const Value& a, const Value& b);
Value operator>(const Value& a, const Value& b);
Value operator>=(const Value& a, const Value& b);
Value operator==(const Value& a, const Value& b);
Value operator!=(const Value& a, const Value& b);
Value operator&&(const Value& a, const Value& b);
Value operator||(const Value& a, const Value& b);
Value operator-(const Value& a);
Value operator!(const Value& a);

/// `c ? a : b`.
Value select(const Value& c, const Value& a, const Value& b);
/// `f32(x)`, `i32(x)`, ...
Value cast(DType t, const Value& x);
/// Any math function of Expr.h's table, by enum.
Value call(MathFn fn, std::vector<Value> args);

// One free function per math function, named as in the text syntax.
Value exp(const Value& x);
Value log(const Value& x);
Value sqrt(const Value& x);
Value rsqrt(const Value& x);
Value tanh(const Value& x);
Value erf(const Value& x);
Value sigmoid(const Value& x);
Value abs(const Value& x);
Value sin(const Value& x);
Value cos(const Value& x);
Value tan(const Value& x);
Value floor(const Value& x);
Value ceil(const Value& x);
Value round(const Value& x);
Value trunc(const Value& x);
Value exp2(const Value& x);
Value log2(const Value& x);
Value log1p(const Value& x);
Value expm1(const Value& x);
Value asin(const Value& x);
Value acos(const Value& x);
Value atan(const Value& x);
Value sinh(const Value& x);
Value cosh(const Value& x);
Value asinh(const Value& x);
Value acosh(const Value& x);
Value atanh(const Value& x);
Value sign(const Value& x);
Value isnan(const Value& x);
Value isinf(const Value& x);
Value pow(const Value& x, const Value& y);
Value min(const Value& x, const Value& y);
Value max(const Value& x, const Value& y);
Value atan2(const Value& y, const Value& x);
Value fma(const Value& a, const Value& b, const Value& c);

} // namespace unitile::builder
