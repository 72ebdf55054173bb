// The Kernel IR expression printer on hand-built trees: parentheses, literal forms and
// floats that read back exactly.
#include "ir/Parser.h"
#include "ir/Printer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

using namespace unitile;

namespace {

Expr a() { return access("A", {var("i")}, DType::F32); }

/// Parses `Y[i] = <printed e>` and returns the verified value.
Expr reparse(const Expr& e) {
  std::string text = "kernel K {\n  input: f32[N] A\n  output: f32[N] Y\n  operation: Y[i] = " + to_string(e) + "\n}\n";
  return parse_module(SourceFile{"p.ut", text}).kernels.at(0).body.at(0).value;
}

TEST(Printer, Parentheses) {
  EXPECT_EQ(to_string(binary(BinaryOp::Mul, binary(BinaryOp::Add, a(), a()), a())), "(A[i] + A[i]) * A[i]");
  EXPECT_EQ(to_string(binary(BinaryOp::Sub, a(), binary(BinaryOp::Sub, a(), a()))), "A[i] - (A[i] - A[i])");
  EXPECT_EQ(to_string(binary(BinaryOp::Sub, binary(BinaryOp::Sub, a(), a()), a())), "A[i] - A[i] - A[i]");
  EXPECT_EQ(to_string(unary(UnaryOp::Neg, binary(BinaryOp::Add, a(), a()))), "-(A[i] + A[i])");
  Expr c = binary(BinaryOp::Gt, a(), int_imm(0));
  EXPECT_EQ(to_string(select(select(c, c, c), a(), a())), "(A[i] > 0 ? A[i] > 0 : A[i] > 0) ? A[i] : A[i]");
  EXPECT_EQ(to_string(binary(BinaryOp::Add, select(c, a(), a()), a())), "(A[i] > 0 ? A[i] : A[i]) + A[i]");
  EXPECT_EQ(to_string(access("A", {var("i")}, DType::F32, int_imm(0))), "A[i] ?? 0");
  EXPECT_EQ(to_string(binary(BinaryOp::Mul, access("A", {var("i")}, DType::F32, int_imm(0)), a())),
            "(A[i] ?? 0) * A[i]");
  // Outside brackets `//` would start a comment, so it gets parentheses there only.
  Expr fd = binary(BinaryOp::FloorDiv, var("i"), int_imm(2));
  EXPECT_EQ(to_string(fd), "(i // 2)");
  EXPECT_EQ(to_string(access("A", {fd}, DType::F32)), "A[i // 2]");
}

TEST(Printer, LiteralForms) {
  EXPECT_EQ(to_string(int_imm(-5)), "-5");
  EXPECT_EQ(to_string(unary(UnaryOp::Neg, int_imm(5))), "-(5)");
  EXPECT_EQ(to_string(unary(UnaryOp::Neg, int_imm(-5))), "--5");
  EXPECT_EQ(to_string(float_imm(1.0)), "1.0");
  EXPECT_EQ(to_string(float_imm(1e-5)), "1e-05");
  EXPECT_EQ(to_string(float_imm(-0.0)), "-0.0");
  EXPECT_EQ(to_string(float_imm(std::numeric_limits<double>::infinity())), "inf");
  EXPECT_EQ(to_string(float_imm(-std::numeric_limits<double>::infinity())), "-inf");
  EXPECT_EQ(to_string(float_imm(std::numeric_limits<double>::quiet_NaN())), "nan");
  EXPECT_EQ(to_string(bool_imm(true)), "true");
  EXPECT_EQ(to_string(cast(DType::BF16, a())), "bf16(A[i])");
  EXPECT_EQ(to_string(call(MathFn::Fma, {a(), a(), float_imm(0.5)})), "fma(A[i], A[i], 0.5)");
}

TEST(Printer, LiteralsReadBackBitExactly) {
  const double values[] = {0.1, -0.0, 1e300, -2.5e-308, 4.9e-324, 3.0, -7.25,
                           std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()};
  for (double v : values) {
    Expr back = reparse(binary(BinaryOp::Add, a(), float_imm(v)));
    double got = back->operands[1]->float_value;
    EXPECT_EQ(std::memcmp(&got, &v, sizeof v), 0) << to_string(float_imm(v));
  }
  const int64_t ints[] = {0, -1, 42, std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()};
  for (int64_t v : ints) {
    Expr back = reparse(binary(BinaryOp::Add, a(), int_imm(v)));
    EXPECT_EQ(back->operands[1]->kind, ExprKind::IntImm);
    EXPECT_EQ(back->operands[1]->int_value, v);
  }
  Expr neg = reparse(binary(BinaryOp::Add, a(), unary(UnaryOp::Neg, float_imm(2.0))));
  EXPECT_EQ(neg->operands[1]->kind, ExprKind::Unary);
}

} // namespace
