// Loop IR text form: print/parse round trips (types included) and parse errors.
#include "ir/Loop.h"
#include "ir/Parser.h"
#include "ir/Verifier.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace unitile;

namespace {

LoopProgram parse(const std::string& text) { return parse_loop_program(SourceFile{"t.loop", text}); }

void expect_same_program(const LoopProgram& a, const LoopProgram& b) {
  EXPECT_EQ(a.kernel, b.kernel);
  ASSERT_EQ(a.buffers.size(), b.buffers.size());
  for (size_t i = 0; i < a.buffers.size(); ++i) {
    EXPECT_EQ(a.buffers[i].name, b.buffers[i].name);
    EXPECT_EQ(a.buffers[i].dtype, b.buffers[i].dtype);
    EXPECT_EQ(a.buffers[i].shape, b.buffers[i].shape);
    EXPECT_EQ(a.buffers[i].role, b.buffers[i].role);
  }
  ASSERT_EQ(a.params.size(), b.params.size());
  for (size_t i = 0; i < a.params.size(); ++i) {
    EXPECT_EQ(a.params[i].name, b.params[i].name);
    EXPECT_EQ(a.params[i].dtype, b.params[i].dtype);
  }
  ASSERT_EQ(a.funcs.size(), b.funcs.size());
  for (size_t i = 0; i < a.funcs.size(); ++i) {
    EXPECT_EQ(a.funcs[i].name, b.funcs[i].name);
    EXPECT_TRUE(equal(a.funcs[i].body, b.funcs[i].body))
        << "func " << a.funcs[i].name << "\nprinted:\n" << to_string(a.funcs[i].body)
        << "\nreparsed:\n" << to_string(b.funcs[i].body);
  }
}

// Print, parse, compare structurally; print again and compare text.
void expect_round_trip(const LoopProgram& p) {
  verify(p);
  std::string text = to_string(p);
  LoopProgram q = parse(text);
  expect_same_program(p, q);
  EXPECT_EQ(to_string(q), text);
}

Expr I(const char* n) { return var(n); }
Expr A(const char* buf, std::vector<Expr> idx, DType t = DType::F32, Expr guard = nullptr) {
  return access(buf, std::move(idx), t, std::move(guard));
}

LoopProgram matmul() {
  LoopProgram p;
  p.kernel = "MatrixMul";
  p.buffers = {{"A", DType::F32, {4, 3}, TensorRole::Input},
               {"B", DType::F32, {3, 2}, TensorRole::Input},
               {"C", DType::F32, {4, 2}, TensorRole::Output}};
  Stmt init = for_loop("j", int_imm(0), int_imm(2), ForKind::Vectorized,
                       store("C", {I("i"), I("j")}, float_imm(0)));
  Stmt upd = for_loop(
      "k", int_imm(0), int_imm(3), ForKind::Serial,
      for_loop("j", int_imm(0), int_imm(2), ForKind::Vectorized,
               store("C", {I("i"), I("j")},
                     binary(BinaryOp::Add, A("C", {I("i"), I("j")}),
                            binary(BinaryOp::Mul, A("A", {I("i"), I("k")}),
                                   A("B", {I("k"), I("j")}))))));
  p.funcs = {{"MatrixMul_0", for_loop("i", int_imm(0), int_imm(4), ForKind::GridX, block({init, upd}))}};
  return p;
}

} // namespace

TEST(LoopText, PrintsTheDocumentedForm) {
  EXPECT_EQ(to_string(matmul()), R"(program MatrixMul {
  buffer A: f32[4, 3] input
  buffer B: f32[3, 2] input
  buffer C: f32[4, 2] output
  func MatrixMul_0 {
    for i in 0..4 grid.x {
      for j in 0..2 vectorized {
        C[i, j] = 0.0
      }
      for k in 0..3 {
        for j in 0..2 vectorized {
          C[i, j] = C[i, j] + A[i, k] * B[k, j]
        }
      }
    }
  }
}
)");
  expect_round_trip(matmul());
}

TEST(LoopText, RoundTripsEveryStatementKind) {
  LoopProgram p;
  p.kernel = "Everything";
  p.buffers = {{"X", DType::F16, {8, 8}, TensorRole::Input},
               {"S", DType::F64, {}, TensorRole::Input},
               {"Y", DType::BF16, {8, 8}, TensorRole::Output},
               {"W", DType::I32, {16}, TensorRole::Local}};
  p.params = {{"eps", DType::F32, {}}, {"n", DType::I64, {}}, {"flag", DType::Bool, {}}};
  Expr guarded = A("X", {binary(BinaryOp::Sub, I("t"), int_imm(1)), I("t")}, DType::F16,
                   float_imm(0.0, DType::F16));
  Stmt inner = block({
      store("W", {binary(BinaryOp::FloorDiv, I("t"), int_imm(2))},
            binary(BinaryOp::Mod, cast(DType::I32, var("eps", DType::F32)), int_imm(-3, DType::I32))),
      barrier(),
      let_stmt("x", binary(BinaryOp::Mul, guarded, A("S", {}, DType::F64)),
               if_then(binary(BinaryOp::And, binary(BinaryOp::Gt, var("x", DType::F64), float_imm(0.5, DType::F64)),
                              var("flag", DType::Bool)),
                       store("Y", {I("b"), I("t")},
                             call(MathFn::Max, {var("x", DType::F64), unary(UnaryOp::Neg, float_imm(2.5))})),
                       store("Y", {I("b"), I("t")},
                             select(unary(UnaryOp::Not, var("flag", DType::Bool)),
                                    cast(DType::BF16, A("acc", {int_imm(0)})),
                                    call(MathFn::Fma, {float_imm(-std::numeric_limits<double>::infinity()),
                                                       float_imm(std::nan(""), DType::F64),
                                                       unary(UnaryOp::Neg, int_imm(7, DType::I32))}))))),
  });
  Stmt body = for_loop(
      "b", int_imm(0), int_imm(8), ForKind::GridX,
      allocate("acc", DType::F32, {1}, MemScope::Register,
               block({store("acc", {int_imm(0)}, float_imm(-0.0)),
                      for_loop("t", int_imm(0), int_imm(8), ForKind::ThreadX, inner),
                      for_loop("u", binary(BinaryOp::Mul, I("b"), int_imm(2)), var("n"),
                               ForKind::Unrolled, block({})),
                      block({barrier(), barrier()})})));
  p.funcs = {{"f0", body}, {"f1", store("S", {}, int_imm(std::numeric_limits<int64_t>::min(), DType::F64))}};
  expect_round_trip(p);
}

TEST(LoopText, LiteralTypesAreExact) {
  LoopProgram p;
  p.kernel = "Lits";
  p.buffers = {{"O", DType::F64, {16}, TensorRole::Output}};
  std::vector<Expr> lits = {
      int_imm(5),        int_imm(5, DType::I32), int_imm(-5, DType::U8), int_imm(1, DType::Bool),
      int_imm(0, DType::F32), float_imm(1.0),    float_imm(1.0, DType::F64), float_imm(1e-300, DType::F64),
      float_imm(-0.0, DType::F16), float_imm(std::numeric_limits<double>::infinity(), DType::BF16),
      float_imm(3.25, DType::I8), bool_imm(true), unary(UnaryOp::Neg, int_imm(3, DType::I16)),
      unary(UnaryOp::Neg, int_imm(-3)), unary(UnaryOp::Neg, float_imm(-0.5, DType::F64)),
      binary(BinaryOp::Sub, int_imm(1, DType::I8), int_imm(-1, DType::I8))};
  std::vector<Stmt> stores;
  for (size_t i = 0; i < lits.size(); ++i)
    stores.push_back(store("O", {int_imm(static_cast<int64_t>(i))}, lits[i]));
  p.funcs = {{"f", block(stores)}};
  expect_round_trip(p);
  std::string text = to_string(p);
  EXPECT_NE(text.find("O[1] = 5i32"), std::string::npos) << text;
  EXPECT_NE(text.find("O[6] = 1.0f64"), std::string::npos) << text;
  EXPECT_NE(text.find("O[12] = -(3i16)"), std::string::npos) << text;
}

TEST(LoopText, SingleStatementBlocksAndNestedBlocksSurvive) {
  LoopProgram p;
  p.kernel = "Blocks";
  p.buffers = {{"O", DType::F32, {2}, TensorRole::Output}};
  auto raw_block = [](std::vector<Stmt> body) {
    auto n = std::make_shared<StmtNode>();
    n->kind = StmtKind::Block;
    n->body = std::move(body);
    return Stmt(n);
  };
  Stmt s = store("O", {int_imm(0)}, float_imm(1));
  p.funcs = {{"f", for_loop("i", int_imm(0), int_imm(2), ForKind::Serial,
                            raw_block({raw_block({s})}))}};
  expect_round_trip(p);
}

TEST(LoopText, ParsesCommentsAndNonConstantBounds) {
  LoopProgram p = parse(R"(# a comment
program K {   # trailing comment
  buffer O: i32[4] output
  func f {
    for i in 0..2 {
      for j in i * 2 extent 2 parallel {
        O[j] = i32(j // 2) % 3i32
      }
    }
  }
}
)");
  ASSERT_EQ(p.funcs.size(), 1u);
  const Stmt& inner = p.funcs[0].body->body[0];
  EXPECT_EQ(inner->kind, StmtKind::For);
  EXPECT_EQ(inner->for_kind, ForKind::Parallel);
  EXPECT_EQ(inner->min->kind, ExprKind::Binary);
  EXPECT_EQ(inner->body[0]->value->type, DType::I32);
  verify(p);
}

// ---- errors ----

namespace {
std::string parse_error(const std::string& text) {
  try {
    parse(text);
  } catch (const UserError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error for:\n" << text;
  return {};
}
} // namespace

TEST(LoopTextErrors, UnknownBufferHasLocationAndCaret) {
  std::string msg = parse_error("program K {\n  buffer O: f32[4] output\n  func f {\n    O[0] = Q[1]\n  }\n}\n");
  EXPECT_NE(msg.find("t.loop:4:12: error: unknown buffer 'Q'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("    O[0] = Q[1]\n"), std::string::npos) << msg;
  EXPECT_NE(msg.find("\n             ^\n"), std::string::npos) << msg;
}

TEST(LoopTextErrors, EachMistakeGetsItsMessage) {
  const std::string head = "program K {\n buffer O: f32[4] output\n param p: f32\n func f {\n";
  auto err = [&](const std::string& body) { return parse_error(head + body + "\n }\n}\n"); };
  EXPECT_NE(err("O[0, 1] = 0.0").find("'O' has rank 1 but is indexed with 2 indices"), std::string::npos);
  EXPECT_NE(err("O[0] = x").find("unknown variable 'x'"), std::string::npos);
  EXPECT_NE(err("O[0] = 1q7").find("unknown literal suffix 'q7'"), std::string::npos);
  EXPECT_NE(err("O[0] = exp(1.0, 2.0)").find("exp takes 1 argument, got 2"), std::string::npos);
  EXPECT_NE(err("O[0] = frob(1.0)").find("unknown function 'frob'"), std::string::npos);
  EXPECT_NE(err("for i in 0..4 spiral { }").find("unknown loop kind 'spiral'"), std::string::npos);
  EXPECT_NE(err("for i in 0..4 { for i in 0..2 { } }").find("'i' is already bound"), std::string::npos);
  EXPECT_NE(err("let p = 1 { }").find("'p' is already declared"), std::string::npos);
  EXPECT_NE(err("for i in 4..2 { }").find("below its lower bound"), std::string::npos);
  EXPECT_NE(err("allocate a: f32[2] cloud { }").find("unknown memory scope 'cloud'"), std::string::npos);
  EXPECT_NE(err("O[0] = 99999999999999999999").find("does not fit in 64 bits"), std::string::npos);
  EXPECT_NE(err("O[0] = 1 $").find("unexpected character '$'"), std::string::npos);
  EXPECT_NE(parse_error("program K {\n func f {\n").find("expected '}' before the end of the file"),
            std::string::npos);
  EXPECT_NE(parse_error("program K { buffer B: f33[2] input }").find("expected a dtype"), std::string::npos);
}

TEST(LoopTextErrors, DeepNestingIsAnErrorNotACrash) {
  std::string deep = "program K {\n buffer O: f32[1] output\n func f {\n O[0] = " +
                     std::string(100000, '(') + "1.0" + std::string(100000, ')') + "\n }\n}\n";
  EXPECT_NE(parse_error(deep).find("nesting is too deep"), std::string::npos);
}

TEST(LoopTextErrors, TruncatedInputsNeverCrash) {
  std::string text = to_string(matmul());
  // Every prefix is either a UserError or (for the full text) a program.
  for (size_t n = 0; n < text.size(); n += 3) {
    try {
      parse(text.substr(0, n));
    } catch (const UserError&) {
      continue;
    }
    ADD_FAILURE() << "prefix of length " << n << " parsed";
  }
}
