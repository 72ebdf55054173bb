// Hand-built, already "verified" kernels for the schedule tests: types, reduction
// variables and ranges are filled in the way the Kernel IR verifier fills them, so the
// tests do not depend on the parser.
#pragma once

#include "ir/Kernel.h"
#include "ir/Loop.h"

#include <string>
#include <vector>

namespace unitile::test {

inline Expr v(const std::string& name) { return var(name); }
inline Expr c(int64_t x) { return int_imm(x); }
inline Expr add(Expr a, Expr b) { return binary(BinaryOp::Add, std::move(a), std::move(b)); }
inline Expr sub(Expr a, Expr b) { return binary(BinaryOp::Sub, std::move(a), std::move(b)); }
inline Expr mul(Expr a, Expr b) { return binary(BinaryOp::Mul, std::move(a), std::move(b)); }

inline TensorDecl tensor(const std::string& name, DType t, std::vector<Expr> shape,
                         TensorRole role) {
  TensorDecl d;
  d.name = name;
  d.dtype = t;
  d.shape = std::move(shape);
  d.role = role;
  return d;
}

inline Comprehension stmt(const std::string& out, std::vector<std::string> indices,
                          ReduceKind r, Expr value, std::vector<std::string> reduction_vars,
                          std::map<std::string, Expr> ranges) {
  Comprehension s;
  s.output = out;
  s.indices = std::move(indices);
  s.reduce = r;
  s.value = std::move(value);
  s.reduction_vars = std::move(reduction_vars);
  s.ranges = std::move(ranges);
  return s;
}

/// C[i,j] += A[i,k] * B[k,j] with A: dt[M,K], B: dt[K,N], C: dt[M,N].
inline Kernel matmul(DType dt = DType::F32) {
  Kernel k;
  k.name = "MatrixMul";
  k.tensors = {tensor("A", dt, {v("M"), v("K")}, TensorRole::Input),
               tensor("B", dt, {v("K"), v("N")}, TensorRole::Input),
               tensor("C", dt, {v("M"), v("N")}, TensorRole::Output)};
  Expr a = access("A", {v("i"), v("k")}, dt);
  Expr b = access("B", {v("k"), v("j")}, dt);
  k.body = {stmt("C", {"i", "j"}, ReduceKind::Add, mul(a, b), {"k"},
                 {{"i", v("M")}, {"j", v("N")}, {"k", v("K")}})};
  return k;
}

/// The DESIGN.md softmax: m[i] max= X[i,j]; s[i] += exp(X[i,j] - m[i]);
/// Y[i,j] = exp(X[i,j] - m[i]) / s[i].
inline Kernel softmax(DType dt = DType::F32) {
  Kernel k;
  k.name = "Softmax";
  k.tensors = {tensor("X", dt, {v("N"), v("D")}, TensorRole::Input),
               tensor("Y", dt, {v("N"), v("D")}, TensorRole::Output),
               tensor("m", DType::F32, {v("N")}, TensorRole::Local),
               tensor("s", DType::F32, {v("N")}, TensorRole::Local)};
  std::map<std::string, Expr> ranges{{"i", v("N")}, {"j", v("D")}};
  auto x = [&] { return access("X", {v("i"), v("j")}, dt); };
  auto e = [&] {
    return call(MathFn::Exp, {sub(x(), access("m", {v("i")}, DType::F32))});
  };
  k.body = {stmt("m", {"i"}, ReduceKind::Max, x(), {"j"}, ranges),
            stmt("s", {"i"}, ReduceKind::Add, e(), {"j"}, ranges),
            stmt("Y", {"i", "j"}, ReduceKind::Assign,
                 binary(BinaryOp::Div, e(), access("s", {v("i")}, DType::F32)), {}, ranges)};
  return k;
}

} // namespace unitile::test
