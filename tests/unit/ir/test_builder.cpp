// The C++ builder produces the same Kernel IR as the text parser.
#include "unitile/builder.h"

#include "ir/Parser.h"
#include "ir/Printer.h"

#include <gtest/gtest.h>

namespace b = unitile::builder;
using unitile::DType;

namespace {

unitile::Kernel parse_one(const std::string& text) {
  unitile::Module m = unitile::parse_module(unitile::SourceFile{"test.ut", text});
  EXPECT_EQ(m.kernels.size(), 1u);
  return m.kernels.at(0);
}

void expect_same(const unitile::Kernel& built, const std::string& text) {
  unitile::Kernel parsed = parse_one(text);
  EXPECT_EQ(unitile::to_string(built), unitile::to_string(parsed));
  EXPECT_TRUE(unitile::equal(built, parsed));
}

TEST(Builder, MatrixMul) {
  b::Kernel k("MatrixMul");
  b::Size M = k.size("M"), K = k.size("K"), N = k.size("N");
  b::Tensor A = k.input("A", DType::F32, {M, K}), B = k.input("B", DType::F32, {K, N});
  b::Tensor C = k.output("C", DType::F32, {M, N});
  b::Index i("i"), j("j"), kk("k");
  C(i, j) += A(i, kk) * B(kk, j);
  unitile::Kernel ir = k.build();
  EXPECT_EQ(ir.body.at(0).reduction_vars, (std::vector<std::string>{"k"}));
  expect_same(ir, R"(
kernel MatrixMul {
  input:  float[M,K] A, float[K,N] B
  output: float[M,N] C
  operation: C[i,j] += A[i,k] * B[k,j]
})");
}

TEST(Builder, Softmax) {
  b::Kernel k("Softmax");
  b::Size N = k.size("N"), D = k.size("D");
  b::Tensor X = k.input("X", DType::F32, {N, D});
  b::Tensor Y = k.output("Y", DType::F32, {N, D});
  b::Tensor m = k.local("m", DType::F32, {N}), s = k.local("s", DType::F32, {N});
  b::Index i("i"), j("j");
  m(i).max_assign(X(i, j));
  s(i) += exp(X(i, j) - m(i));
  Y(i, j) = exp(X(i, j) - m(i)) / s(i);
  expect_same(k.build(), R"(
kernel Softmax {
  input:  float[N,D] X
  output: float[N,D] Y
  local:  float[N] m, float[N] s
  operation:
    m[i]   max= X[i,j]
    s[i]   += exp(X[i,j] - m[i])
    Y[i,j]  = exp(X[i,j] - m[i]) / s[i]
})");
}

TEST(Builder, LayerNormWithParams) {
  b::Kernel k("LayerNorm");
  b::Size N = k.size("N"), D = k.size("D");
  b::Tensor X = k.input("X", DType::F16, {N, D}), g = k.input("gamma", DType::F16, {D});
  b::Tensor Y = k.output("Y", DType::F16, {N, D});
  b::Tensor mean = k.local("mean", DType::F32, {N}), var = k.local("var", DType::F32, {N});
  b::Param eps = k.param("eps", DType::F32);
  b::Index i("i"), j("j");
  mean(i) += cast(DType::F32, X(i, j)) / cast(DType::F32, D);
  var(i) += (X(i, j) - mean(i)) * (X(i, j) - mean(i)) / cast(DType::F32, D);
  Y(i, j) = (X(i, j) - mean(i)) * rsqrt(var(i) + eps) * g(j);
  expect_same(k.build(), R"(
kernel LayerNorm {
  input:  f16[N,D] X, f16[D] gamma
  output: f16[N,D] Y
  local:  f32[N] mean, f32[N] var
  param:  f32 eps
  operation:
    mean[i] += f32(X[i,j]) / f32(D)
    var[i]  += (X[i,j] - mean[i]) * (X[i,j] - mean[i]) / f32(D)
    Y[i,j]   = (X[i,j] - mean[i]) * rsqrt(var[i] + eps) * gamma[j]
})");
}

TEST(Builder, ConvWithGuardsShapesSelectsAndSchedule) {
  b::Kernel k("Conv1d");
  b::Size N = k.size("N"), R = k.size("R"), T = k.size("T");
  b::Tensor I = k.input("I", DType::F32, {N}), W = k.input("W", DType::F32, {R});
  b::Tensor O = k.output("O", DType::F32, {floordiv(N - R, T) + 1});
  b::Tensor Z = k.output("Z", DType::I32, {N, 4});
  b::Index x("x"), r("r"), c("c");
  O(x) += I(x * T + r - 1).or_else(0) * W(r);
  Z(x, c).min_assign(select(I(x) > 0 && !(I(x) > 1), 1, -1) * c + cast(DType::I32, round(I(x))));
  k.schedule(" tile x 8; ");
  expect_same(k.build(), R"(
kernel Conv1d {
  input:  f32[N] I, f32[R] W
  output: f32[(N - R) // T + 1] O, i32[N, 4] Z
  operation:
    O[x] += (I[x*T + r - 1] ?? 0) * W[r]
    Z[x, c] min= (I[x] > 0 && !(I[x] > 1) ? 1 : -1) * c + i32(round(I[x]))
}
schedule { tile x 8; })");
}

TEST(Builder, MathFunctionsAndRankZero) {
  b::Kernel k("Math");
  b::Size N = k.size("N");
  b::Tensor A = k.input("A", DType::F64, {N});
  b::Tensor t = k.output("t", DType::F64, {});
  b::Index i("i");
  t() += pow(A(i), 2) + max(A(i), 0.5) - min(A(i), -A(i)) + fma(A(i), A(i), 1) + atan2(A(i), 2.0) +
         log1p(abs(A(i))) + select(isnan(A(i)) || isinf(A(i)), 0, 1) * 0;
  (void)t;
  EXPECT_NO_THROW(k.build());
}

TEST(Builder, ErrorsNameKernelAndStatement) {
  b::Kernel k("Bad");
  b::Size N = k.size("N");
  b::Tensor A = k.input("A", DType::F32, {N});
  b::Tensor Y = k.output("Y", DType::F32, {N});
  b::Index i("i");
  Y(i) = A(i) + b::Value(true);
  try {
    k.build();
    FAIL() << "expected a UserError";
  } catch (const unitile::UserError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("kernel 'Bad', statement 1 (Y[i] = A[i] + true)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("bool value in arithmetic"), std::string::npos) << msg;
  }
  b::Kernel k2("Bad2");
  b::Tensor A2 = k2.input("A", DType::F32, {k2.size("N")});
  b::Tensor Y2 = k2.output("Y", DType::F32, {k2.size("N")});
  EXPECT_THROW(Y2(i + 1) = A2(i), unitile::UserError);
}

} // namespace
