// Parser and verifier tests: round trips over many inputs, and what the verifier fills in
// (types, reduction variables, ranges).
#include "ir/Parser.h"
#include "ir/Printer.h"

#include <gtest/gtest.h>

using namespace unitile;

namespace {

Module parse(const std::string& text) { return parse_module(SourceFile{"test.ut", text}); }

/// parse(print(parse(x))) == parse(x), and printing is a fixed point.
void expect_round_trip(const std::string& text) {
  SCOPED_TRACE(text);
  Module a = parse(text);
  std::string printed = to_string(a);
  Module b;
  ASSERT_NO_THROW(b = parse(printed)) << printed;
  EXPECT_TRUE(equal(a, b)) << printed;
  EXPECT_EQ(to_string(b), printed);
}

std::string kernel1(const std::string& decls, const std::string& stmts) {
  return "kernel K {\n" + decls + "\n  operation:\n" + stmts + "\n}\n";
}

const char* kDesign = R"(
kernel MatrixMul {
  input:  float[M,K] A, float[K,N] B
  output: float[M,N] C
  operation: C[i,j] += A[i,k] * B[k,j]
}

kernel Softmax {
  input:  float[N,D] X
  output: float[N,D] Y
  local:  float[N] m, float[N] s
  operation:
    m[i]   max= X[i,j]
    s[i]   += exp(X[i,j] - m[i])
    Y[i,j]  = exp(X[i,j] - m[i]) / s[i]
}
)";

TEST(Parser, DesignExamplesParseVerbatim) {
  Module m = parse(kDesign);
  ASSERT_EQ(m.kernels.size(), 2u);
  const Kernel& mm = m.kernels[0];
  EXPECT_EQ(mm.name, "MatrixMul");
  ASSERT_EQ(mm.tensors.size(), 3u);
  EXPECT_EQ(mm.tensors[0].name, "A");
  EXPECT_EQ(mm.tensors[0].dtype, DType::F32);
  EXPECT_EQ(mm.tensors[2].role, TensorRole::Output);
  ASSERT_EQ(mm.body.size(), 1u);
  const Comprehension& c = mm.body[0];
  EXPECT_EQ(c.output, "C");
  EXPECT_EQ(c.indices, (std::vector<std::string>{"i", "j"}));
  EXPECT_EQ(c.reduce, ReduceKind::Add);
  EXPECT_EQ(c.reduction_vars, (std::vector<std::string>{"k"}));
  ASSERT_EQ(c.ranges.size(), 3u);
  EXPECT_EQ(to_string(c.ranges.at("i")), "M");
  EXPECT_EQ(to_string(c.ranges.at("j")), "N");
  EXPECT_EQ(to_string(c.ranges.at("k")), "K");
  EXPECT_EQ(to_string(c.value), "A[i, k] * B[k, j]");
  EXPECT_EQ(c.value->type, DType::F32);
  EXPECT_EQ(c.loc.line, 5);
  EXPECT_EQ(c.loc.col, 14);

  const Kernel& sm = m.kernels[1];
  ASSERT_EQ(sm.body.size(), 3u);
  EXPECT_EQ(sm.body[0].reduce, ReduceKind::Max);
  EXPECT_EQ(sm.body[0].reduction_vars, (std::vector<std::string>{"j"}));
  EXPECT_EQ(to_string(sm.body[0].ranges.at("j")), "D");
  EXPECT_EQ(sm.body[2].reduce, ReduceKind::Assign);
  EXPECT_TRUE(sm.body[2].reduction_vars.empty());
  EXPECT_EQ(sm.shape_symbols(), (std::vector<std::string>{"N", "D"}));
  expect_round_trip(kDesign);
}

TEST(Parser, CanonicalPrintOfMatmul) {
  Module m = parse(kDesign);
  EXPECT_EQ(to_string(m.kernels[0]), "kernel MatrixMul {\n"
                                     "  input: f32[M, K] A, f32[K, N] B\n"
                                     "  output: f32[M, N] C\n"
                                     "  operation:\n"
                                     "    C[i, j] += A[i, k] * B[k, j]\n"
                                     "}\n");
}

TEST(Parser, EveryDtypeAndAlias) {
  const char* names[] = {"f16", "bf16", "f32", "f64", "i8", "i16", "i32", "i64", "u8", "bool",
                         "float", "double", "half", "int", "long"};
  for (const char* n : names) {
    std::string t = n;
    std::string text = kernel1("  input: " + t + "[N] A\n  output: " + t + "[N] B", "    B[i] = A[i]");
    Module m = parse(text);
    EXPECT_EQ(m.kernels[0].tensors[0].dtype, *parse_dtype(t));
    EXPECT_EQ(m.kernels[0].body[0].value->type, *parse_dtype(t));
    expect_round_trip(text);
  }
}

TEST(Parser, EveryOperatorRoundTrips) {
  const char* values[] = {
      "A[i] + B[i]", "A[i] - B[i]", "A[i] * B[i]", "A[i] / B[i]", "-A[i]", "A[i] - -B[i]",
      "A[i] - (B[i] - A[i])", "(A[i] + B[i]) * A[i]", "A[i] > B[i] ? A[i] : B[i]",
      "A[i] < B[i] && A[i] <= B[i] || A[i] >= B[i] ? 1 : 0",
      "A[i] == B[i] ? 1.5 : -2.5", "A[i] != B[i] ? A[i] : 0", "!(A[i] > 0) ? A[i] : 0",
      "A[i] > 0 ? (B[i] > 0 ? 1 : 2) : 3", "(A[i] > 0 ? 1 : 2) * 3",
      "A[i] > 0 ? 1 : B[i] > 0 ? 2 : 3", "f32(I[i] // 2) + f32(I[i] % 3)",
      "f32(I[i]//2)", "A[i] * 2", "A[i] * 1e-5", "A[i] * .5", "A[i] + 1e+20",
      "A[i] * -0.0", "A[i] + inf", "A[i] + -inf", "A[i] + nan", "f32(i)",
      "f64(A[i]) * 0.1", "float(I[i])", "i32(A[i] * 100) > 0 ? A[i] : 0",
      "A[i - 1] ?? 0", "(A[i - 1] ?? 0) * B[i]", "A[i + 1] ?? -1 + B[i]",
      "A[i - 1] ?? (B[i] * 2)", "A[i - 1] ?? B[i + 1] ?? 0",
      "exp(A[i]) + log(B[i]) + sqrt(A[i]) + rsqrt(A[i]) + tanh(A[i]) + erf(A[i])",
      "sigmoid(A[i]) + pow(A[i], 2) + abs(A[i]) + min(A[i], B[i]) + max(A[i], 0)",
      "fma(A[i], B[i], 1) + atan2(A[i], B[i])", "isnan(A[i]) || isinf(B[i]) ? 0 : A[i]",
      "-(5) * A[i]", "-(2.5) + A[i]", "--A[i]", "A[2 * i // 2]",
      "A[(i + 1) % 4]", "A[N - 1 - i]", "A[-i + N - 1]",
  };
  std::string decls = "  input: f32[N] A, f32[N] B, i32[N] I\n  output: f32[N] Y";
  for (const char* v : values) expect_round_trip(kernel1(decls, std::string("    Y[i] = ") + v));
}

TEST(Parser, PrecedenceAndAssociativity) {
  std::string decls = "  input: f32[N] a, f32[N] b, f32[N] c\n  output: f32[N] y";
  auto value = [&](const std::string& v) {
    return to_string(parse(kernel1(decls, "    y[i] = " + v)).kernels[0].body[0].value);
  };
  EXPECT_EQ(value("a[i] + b[i] * c[i]"), "a[i] + b[i] * c[i]");
  EXPECT_EQ(value("(a[i] + b[i]) * c[i]"), "(a[i] + b[i]) * c[i]");
  EXPECT_EQ(value("a[i] - b[i] - c[i]"), "a[i] - b[i] - c[i]");
  EXPECT_EQ(value("a[i] - (b[i] - c[i])"), "a[i] - (b[i] - c[i])");
  EXPECT_EQ(value("((a[i]))"), "a[i]");
  // ?? binds tightest: the default here is just 0.
  Module m = parse(kernel1(decls, "    y[i] = a[i - 1] ?? 0 * b[i]"));
  const Expr& v = m.kernels[0].body[0].value;
  ASSERT_EQ(v->kind, ExprKind::Binary);
  EXPECT_EQ(v->binary_op, BinaryOp::Mul);
  ASSERT_EQ(v->operands[0]->kind, ExprKind::Access);
  EXPECT_EQ(to_string(v->operands[0]->guard), "0");
  EXPECT_EQ(to_string(v), "(a[i - 1] ?? 0) * b[i]");
  // Selects are right-associative.
  Module s = parse(kernel1(decls, "    y[i] = a[i] > 0 ? 1 : b[i] > 0 ? 2 : 3"));
  EXPECT_EQ(s.kernels[0].body[0].value->operands[2]->kind, ExprKind::Select);
  // A negative number is a literal, a negated parenthesis is not.
  Module n = parse(kernel1(decls, "    y[i] = -5 + -(5) + a[i]"));
  const Expr& sum = n.kernels[0].body[0].value->operands[0];
  EXPECT_EQ(sum->operands[0]->kind, ExprKind::IntImm);
  EXPECT_EQ(sum->operands[0]->int_value, -5);
  EXPECT_EQ(sum->operands[1]->kind, ExprKind::Unary);
}

TEST(Parser, CommentsNewlinesAndSemicolons) {
  std::string text = R"(// leading comment
kernel K { // trailing
  input: f32[N] A,   // comment after a comma
         f32[N] B
  output: f32[N] Y, f32[N] Z
  operation:
    Y[i] = (A[i] +
    B[i])                   // ends here: a newline outside brackets ends the statement
    Z[i] = exp(A[i]
               - B[i]); Z2[i] = 0
  output: f32[N] Z2
}
)";
  // Z2 is declared after it is written: declarations may come in any section order.
  Module m = parse(text);
  const Kernel& k = m.kernels[0];
  ASSERT_EQ(k.body.size(), 3u);
  EXPECT_EQ(to_string(k.body[0].value), "A[i] + B[i]");
  EXPECT_EQ(to_string(k.body[1].value), "exp(A[i] - B[i])");
  EXPECT_EQ(k.tensors.back().name, "Z2");
  expect_round_trip(text);
}

TEST(Parser, FloorDivisionVersusComment) {
  std::string decls = "  input: i32[N] A\n  output: i32[N] Y";
  Module m = parse(kernel1(decls, "    Y[i] = A[i]//2 + (A[i] // 3) // comment"));
  EXPECT_EQ(to_string(m.kernels[0].body[0].value), "(A[i] // 2) + (A[i] // 3)");
  expect_round_trip(kernel1(decls, "    Y[i] = A[i]//2 + (A[i] // 3)"));
}

TEST(Parser, ShapeExpressionsAndRankZero) {
  std::string text = R"(
kernel Conv {
  input:  f32[N, C, H, W] I, f32[F, C, R, S] Wt
  param:  i64 T, i64 P
  output: f32[N, F, (H + 2*P - R)//T + 1, (W + 2*P - S)//T + 1] O
  operation:
    O[n, f, y, x] += (I[n, c, y*T + r - P, x*T + s - P] ?? 0) * Wt[f, c, r, s]
}
kernel Total {
  input:  f32[4, 2+2] X
  output: f32[] t
  operation: t[] += X[i, j]
}
)";
  Module m = parse(text);
  const Comprehension& c = m.kernels[0].body[0];
  EXPECT_EQ(c.reduction_vars, (std::vector<std::string>{"c", "r", "s"}));
  EXPECT_EQ(to_string(c.ranges.at("y")), "((H + 2 * P - R) // T) + 1");
  EXPECT_EQ(to_string(c.ranges.at("r")), "R");
  const Expr& guarded = c.value->operands[0];
  EXPECT_EQ(guarded->type, DType::F32);
  EXPECT_EQ(guarded->guard->type, DType::F32); // the weak literal takes the tensor's dtype
  const Kernel& total = m.kernels[1];
  EXPECT_TRUE(total.tensors[1].shape.empty());
  EXPECT_TRUE(total.body[0].indices.empty());
  EXPECT_EQ(to_string(total.body[0].ranges.at("j")), "4"); // 2+2 folded
  expect_round_trip(text);
}

TEST(Parser, ParamsAndScheduleBlocks) {
  std::string text = R"(
kernel Scale {
  input:  f32[N] X
  output: f32[N] Y
  param:  f32 alpha, i64 S
  operation: Y[i] = X[i] * alpha + f32(S)
}
schedule { tile i 64; vectorize i 16; stage X shared { nested } }

kernel Copy {
  input:  f32[N] X
  output: f32[N] Y
  operation: Y[i] = X[i]
} schedule {
  parallel i;
}
)";
  Module m = parse(text);
  ASSERT_EQ(m.kernels.size(), 2u);
  const Kernel& k = m.kernels[0];
  ASSERT_EQ(k.params.size(), 2u);
  EXPECT_EQ(k.params[0].dtype, DType::F32);
  EXPECT_EQ(k.params[1].dtype, DType::I64);
  ASSERT_TRUE(k.schedule_text.has_value());
  EXPECT_EQ(*k.schedule_text, " tile i 64; vectorize i 16; stage X shared { nested } ");
  EXPECT_EQ(*m.kernels[1].schedule_text, "\n  parallel i;\n");
  EXPECT_EQ(k.body[0].value->type, DType::F32);
  expect_round_trip(text);
}

TEST(Parser, ManyKernelsPerFile) {
  std::string text;
  for (int i = 0; i < 20; ++i)
    text += "kernel K" + std::to_string(i) + " {\n  input: f32[N] A\n  output: f32[N] B\n  operation: B[i] = A[i] * " +
            std::to_string(i) + "\n}\n";
  Module m = parse(text);
  ASSERT_EQ(m.kernels.size(), 20u);
  EXPECT_NE(m.find("K7"), nullptr);
  EXPECT_EQ(m.find("K20"), nullptr);
  expect_round_trip(text);
}

TEST(Parser, FloatsRoundTripExactly) {
  const double values[] = {0.1, 1.0 / 3, 1e-300, 5e-324, 1.7976931348623157e308, 123456789.125, 2.5e-5, 100.5};
  for (double v : values) {
    char buf[64];
    snprintf(buf, sizeof buf, "%.17g", v);
    std::string text = kernel1("  input: f64[N] A\n  output: f64[N] Y", std::string("    Y[i] = A[i] * ") + buf);
    Module m = parse(text);
    EXPECT_EQ(m.kernels[0].body[0].value->operands[1]->float_value, v);
    expect_round_trip(text);
  }
}

TEST(Verifier, WeakLiteralsAndTypes) {
  std::string decls = "  input: f16[N] H, i32[N] I, f32[N] F, bool[N] Bo\n  param: f64 d\n  output: f32[N] Y";
  auto typed = [&](const std::string& v) {
    return parse(kernel1(decls, "    Y[i] = " + v)).kernels[0].body[0].value;
  };
  Expr e = typed("H[i] * 0.5");
  EXPECT_EQ(e->type, DType::F16);
  EXPECT_EQ(e->operands[1]->type, DType::F16);
  EXPECT_EQ(e->operands[1]->kind, ExprKind::FloatImm);
  EXPECT_EQ(typed("I[i] * 2")->type, DType::I32);
  EXPECT_EQ(typed("I[i] * 0.5")->type, DType::F32); // a float literal does not become i32
  EXPECT_EQ(typed("2 * 3")->type, DType::I64);
  EXPECT_EQ(typed("0.5")->type, DType::F32);
  EXPECT_EQ(typed("H[i] + F[i]")->type, DType::F32);
  EXPECT_EQ(typed("F[i] * d")->type, DType::F64);
  EXPECT_EQ(typed("f32(i) + 1")->type, DType::F32);
  EXPECT_EQ(typed("i")->type, DType::I64);
  EXPECT_EQ(typed("Bo[i] ? H[i] : 0")->type, DType::F16);
  EXPECT_EQ(typed("max(H[i], 0)")->type, DType::F16);
  EXPECT_EQ(typed("exp(1)")->type, DType::F32);
  EXPECT_EQ(typed("f64(H[i])")->type, DType::F64);
  Expr cmp = typed("H[i] > 0 ? 1.0 : 0.0");
  EXPECT_EQ(cmp->operands[0]->type, DType::Bool);
  EXPECT_EQ(cmp->operands[0]->operands[1]->type, DType::F16);
  // Index expressions are i64 throughout.
  Module m = parse(kernel1("  input: f32[N] A\n  output: f32[N] Y", "    Y[i] = A[N - 1 - i]"));
  const Expr& idx = m.kernels[0].body[0].value->operands[0];
  visit(idx, [](const Expr& x) { EXPECT_EQ(x->type, DType::I64) << to_string(x); });
}

TEST(Verifier, RangesFromEveryBareUse) {
  std::string text = R"(
kernel K {
  input:  f32[M, K] A, f32[K] b, f32[M] c
  output: f32[M] y, f32[M] z
  operation:
    y[i] += A[i, k] * b[k] + c[i]
    z[i] = y[i] * 2 + (A[i + 1, 0] ?? 0)
}
)";
  Module m = parse(text);
  const Comprehension& y = m.kernels[0].body[0];
  EXPECT_EQ(to_string(y.ranges.at("k")), "K");
  EXPECT_EQ(to_string(y.ranges.at("i")), "M");
  const Comprehension& z = m.kernels[0].body[1];
  EXPECT_EQ(z.ranges.size(), 1u);
  EXPECT_TRUE(z.reduction_vars.empty());
}

TEST(Verifier, ReductionVarsInOrderOfFirstAppearance) {
  std::string text = kernel1("  input: f32[A, B, C] X\n  output: f32[] t", "    t[] += X[c, a, b]");
  Module m = parse(text);
  EXPECT_EQ(m.kernels[0].body[0].reduction_vars, (std::vector<std::string>{"c", "a", "b"}));
}

TEST(Verifier, BroadcastWithAssign) {
  std::string text = kernel1("  input: f32[N] b\n  output: f32[M, N] Y", "    Y[i, j] = b[j]");
  Module m = parse(text);
  EXPECT_EQ(to_string(m.kernels[0].body[0].ranges.at("i")), "M");
}

} // namespace
