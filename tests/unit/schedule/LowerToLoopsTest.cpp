// Tests of lower_to_loops: loop order, accumulators, grid and vector choices of the
// default schedule, specialisation, and the static bounds check.
#include "TestKernels.h"

#include "hcd/Hcd.h"
#include "ir/Verifier.h"
#include "schedule/Lower.h"

#include <fmt/core.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

namespace unitile {
namespace {

using namespace unitile::test;
using ::testing::HasSubstr;

// A compact picture of a loop nest: `for VAR<EXTENT> KIND { ... }`, stores as `BUF=`,
// allocations as `alloc NAME:DTYPE { ... }`, blocks joined by `; `.
std::string outline(const Stmt& s) {
  switch (s->kind) {
  case StmtKind::For: {
    std::string kind = s->for_kind == ForKind::Serial ? "" : std::string(" ") + for_kind_name(s->for_kind);
    return fmt::format("for {}<{}>{} {{ {} }}", s->var, s->extent->int_value, kind,
                       outline(s->body[0]));
  }
  case StmtKind::Block: {
    std::string r;
    for (const Stmt& b : s->body) r += (r.empty() ? "" : "; ") + outline(b);
    return r;
  }
  case StmtKind::Store: return s->buffer + "=";
  case StmtKind::Allocate:
    return fmt::format("alloc {}:{}{} {{ {} }}", s->buffer, dtype_name(s->dtype),
                       s->scope == MemScope::Register ? " register" : "", outline(s->body[0]));
  default: return "?";
  }
}

// Every store in `s`, in order.
void stores(const Stmt& s, std::vector<const StmtNode*>& out) {
  if (s->kind == StmtKind::Store) out.push_back(s.get());
  for (const Stmt& b : s->body) stores(b, out);
}
std::vector<const StmtNode*> stores(const Stmt& s) {
  std::vector<const StmtNode*> r;
  stores(s, r);
  return r;
}

hcd::Hcd cpu() { return hcd::Hcd{}; }

LoopProgram lower(const Kernel& k, const ShapeBindings& b) {
  LoopProgram p = lower_to_loops(k, b, cpu());
  verify(p);
  return p;
}

TEST(LowerToLoops, MatmulIsIkjWithGridAndVectorizedJ) {
  LoopProgram p = lower(matmul(), {{"M", 4}, {"K", 3}, {"N", 5}});
  ASSERT_EQ(p.funcs.size(), 1u);
  EXPECT_EQ(p.funcs[0].name, "MatrixMul_0");
  EXPECT_EQ(outline(p.funcs[0].body),
            "for i<4> grid.x { for j<5> vectorized { C= }; for k<3> { for j<5> vectorized { C= } } }");
  auto st = stores(p.funcs[0].body);
  ASSERT_EQ(st.size(), 2u);
  EXPECT_EQ(st[0]->value->kind, ExprKind::FloatImm);
  EXPECT_EQ(st[0]->value->float_value, 0.0);
  // C[i,j] = C[i,j] + A[i,k] * B[k,j]
  const Expr& upd = st[1]->value;
  ASSERT_EQ(upd->kind, ExprKind::Binary);
  EXPECT_EQ(upd->binary_op, BinaryOp::Add);
  EXPECT_EQ(upd->operands[0]->kind, ExprKind::Access);
  EXPECT_EQ(upd->operands[0]->name, "C");
  EXPECT_EQ(upd->type, DType::F32);
  EXPECT_EQ(launch_dims(p.funcs[0]).grid[0], 4u);

  ASSERT_EQ(p.buffers.size(), 3u);
  EXPECT_EQ(p.buffers[0].name, "A");
  EXPECT_EQ(p.buffers[0].shape, (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(p.buffers[2].role, TensorRole::Output);
  EXPECT_EQ(p.buffers[2].shape, (std::vector<int64_t>{4, 5}));
}

TEST(LowerToLoops, HalfMatmulAccumulatesInF32Register) {
  LoopProgram p = lower(matmul(DType::F16), {{"M", 4}, {"K", 3}, {"N", 5}});
  EXPECT_EQ(outline(p.funcs[0].body),
            "for i<4> grid.x { for j<5> { alloc acc:f32 register { acc=; for k<3> { acc= }; C= } } }");
  auto st = stores(p.funcs[0].body);
  ASSERT_EQ(st.size(), 3u);
  // acc[0] = acc[0] + f32(A[i,k]) * f32(B[k,j]); C[i,j] = f16(acc[0]): the product too
  // is computed in f32.
  EXPECT_EQ(st[1]->value->type, DType::F32);
  const Expr& product = st[1]->value->operands[1];
  ASSERT_EQ(product->kind, ExprKind::Binary);
  EXPECT_EQ(product->type, DType::F32);
  for (const Expr& factor : product->operands) {
    ASSERT_EQ(factor->kind, ExprKind::Cast);
    EXPECT_EQ(factor->type, DType::F32);
    EXPECT_EQ(factor->operands[0]->type, DType::F16);
  }
  ASSERT_EQ(st[2]->value->kind, ExprKind::Cast);
  EXPECT_EQ(st[2]->value->type, DType::F16);
  EXPECT_EQ(st[2]->value->operands[0]->name, "acc");
}

TEST(LowerToLoops, SoftmaxUsesRegisterAccumulatorsForRowReductions) {
  LoopProgram p = lower(softmax(), {{"N", 6}, {"D", 7}});
  ASSERT_EQ(p.funcs.size(), 3u);
  EXPECT_EQ(p.funcs[0].name, "Softmax_0");
  EXPECT_EQ(p.funcs[2].name, "Softmax_2");
  EXPECT_EQ(outline(p.funcs[0].body),
            "for i<6> grid.x { alloc acc:f32 register { acc=; for j<7> { acc= }; m= } }");
  EXPECT_EQ(outline(p.funcs[1].body),
            "for i<6> grid.x { alloc acc:f32 register { acc=; for j<7> { acc= }; s= } }");
  EXPECT_EQ(outline(p.funcs[2].body), "for i<6> grid.x { for j<7> vectorized { Y= } }");
  // max= starts from -inf and combines with max().
  auto st = stores(p.funcs[0].body);
  EXPECT_TRUE(std::isinf(st[0]->value->float_value) && st[0]->value->float_value < 0);
  EXPECT_EQ(st[1]->value->kind, ExprKind::Call);
  EXPECT_EQ(st[1]->value->math_fn, MathFn::Max);
  EXPECT_EQ(p.buffers[2].role, TensorRole::Local);
  EXPECT_EQ(p.buffers[3].shape, (std::vector<int64_t>{6}));
}

// sum over axis 0 streams along the rows in place; sum over axis 1 (the last axis)
// keeps a register accumulator with the reduction innermost.
Kernel column_and_row_sums(DType dt) {
  Kernel k;
  k.name = "Sums";
  k.tensors = {tensor("X", dt, {v("R"), v("C")}, TensorRole::Input),
               tensor("cols", dt, {v("C")}, TensorRole::Output),
               tensor("rows", dt, {v("R")}, TensorRole::Output),
               tensor("total", dt, {}, TensorRole::Output)};
  std::map<std::string, Expr> ranges{{"i", v("R")}, {"j", v("C")}};
  Expr x = access("X", {v("i"), v("j")}, dt);
  k.body = {stmt("cols", {"j"}, ReduceKind::Add, x, {"i"}, ranges),
            stmt("rows", {"i"}, ReduceKind::Add, x, {"j"}, ranges),
            stmt("total", {}, ReduceKind::Min, x, {"i", "j"}, ranges)};
  return k;
}

TEST(LowerToLoops, ReductionOverAxis0VersusAxis1) {
  LoopProgram p = lower(column_and_row_sums(DType::F32), {{"R", 8}, {"C", 16}});
  // Axis 0: no spatial loop is left outside the reduction, so one block, in place.
  EXPECT_EQ(outline(p.funcs[0].body),
            "for j<16> vectorized { cols= }; for i<8> { for j<16> vectorized { cols= } }");
  EXPECT_EQ(outline(p.funcs[1].body),
            "for i<8> grid.x { alloc acc:f32 register { acc=; for j<16> { acc= }; rows= } }");
  // A rank-0 result: a single block, min= starts from +inf.
  EXPECT_EQ(outline(p.funcs[2].body),
            "alloc acc:f32 register { acc=; for i<8> { for j<16> { acc= } }; total= }");
  auto st = stores(p.funcs[2].body);
  EXPECT_TRUE(std::isinf(st[0]->value->float_value) && st[0]->value->float_value > 0);
  EXPECT_EQ(st[1]->value->math_fn, MathFn::Min);
  EXPECT_EQ(launch_dims(p.funcs[2]).grid[0], 1u);
}

TEST(LowerToLoops, IntegerReductionIdentitiesAreTheTypeExtremes) {
  LoopProgram p = lower(column_and_row_sums(DType::I8), {{"R", 2}, {"C", 3}});
  // i8 computes in i32: register accumulators everywhere, identity i32 max for min=.
  auto st = stores(p.funcs[2].body);
  ASSERT_EQ(st[0]->value->kind, ExprKind::IntImm);
  EXPECT_EQ(st[0]->value->type, DType::I32);
  EXPECT_EQ(st[0]->value->int_value, 2147483647);
  EXPECT_THAT(outline(p.funcs[0].body), HasSubstr("alloc acc:i32 register"));
}

TEST(LowerToLoops, BroadcastingElementwiseChainVectorizesTheLastAxis) {
  Kernel k;
  k.name = "Broadcast";
  k.tensors = {tensor("A", DType::F32, {v("M"), v("N")}, TensorRole::Input),
               tensor("b", DType::F32, {v("N")}, TensorRole::Input),
               tensor("c", DType::F32, {v("M"), c(1)}, TensorRole::Input),
               tensor("Y", DType::F16, {v("M"), v("N")}, TensorRole::Output)};
  Expr value = add(mul(access("A", {v("i"), v("j")}, DType::F32), access("b", {v("j")}, DType::F32)),
                   call(MathFn::Sigmoid, {access("c", {v("i"), c(0)}, DType::F32)}));
  k.body = {stmt("Y", {"i", "j"}, ReduceKind::Assign, value, {}, {{"i", v("M")}, {"j", v("N")}})};
  LoopProgram p = lower(k, {{"M", 3}, {"N", 33}});
  EXPECT_EQ(outline(p.funcs[0].body), "for i<3> grid.x { for j<33> vectorized { Y= } }");
  auto st = stores(p.funcs[0].body);
  ASSERT_EQ(st[0]->value->kind, ExprKind::Cast); // f32 value stored into f16
  EXPECT_EQ(st[0]->value->type, DType::F16);
}

TEST(LowerToLoops, TransposedReadKeepsTheLoopSerial) {
  Kernel k;
  k.name = "Transpose";
  k.tensors = {tensor("A", DType::F32, {v("N"), v("M")}, TensorRole::Input),
               tensor("T", DType::F32, {v("M"), v("N")}, TensorRole::Output)};
  k.body = {stmt("T", {"i", "j"}, ReduceKind::Assign, access("A", {v("j"), v("i")}, DType::F32), {},
                 {{"i", v("M")}, {"j", v("N")}})};
  LoopProgram p = lower(k, {{"M", 3}, {"N", 4}});
  EXPECT_EQ(outline(p.funcs[0].body), "for i<3> grid.x { for j<4> { T= } }");
}

TEST(LowerToLoops, BatchedMatmulPutsBatchOnTheGrid) {
  Kernel k;
  k.name = "BatchedMatMul";
  k.tensors = {tensor("X", DType::F32, {v("B"), v("M"), v("K")}, TensorRole::Input),
               tensor("Y", DType::F32, {v("B"), v("K"), v("N")}, TensorRole::Input),
               tensor("Z", DType::F32, {v("B"), v("M"), v("N")}, TensorRole::Output)};
  Expr value = mul(access("X", {v("b"), v("i"), v("k")}, DType::F32),
                   access("Y", {v("b"), v("k"), v("j")}, DType::F32));
  k.body = {stmt("Z", {"b", "i", "j"}, ReduceKind::Add, value, {"k"},
                 {{"b", v("B")}, {"i", v("M")}, {"j", v("N")}, {"k", v("K")}})};
  LoopProgram p = lower(k, {{"B", 2}, {"M", 3}, {"K", 4}, {"N", 5}});
  EXPECT_EQ(outline(p.funcs[0].body),
            "for b<2> grid.x { for i<3> { for j<5> vectorized { Z= } }; "
            "for i<3> { for k<4> { for j<5> vectorized { Z= } } } }");
}

// O[n,y] += (I[n, y*T + r - P] ?? 0) * W[r]: a 1-D convolution with stride T, padding P.
Kernel conv1d(bool guarded) {
  Kernel k;
  k.name = "Conv1d";
  Expr out_len = add(binary(BinaryOp::FloorDiv, sub(add(v("H"), mul(c(2), v("P"))), v("R")), v("T")), c(1));
  k.tensors = {tensor("I", DType::F32, {v("N"), v("H")}, TensorRole::Input),
               tensor("W", DType::F32, {v("R")}, TensorRole::Input),
               tensor("O", DType::F32, {v("N"), out_len}, TensorRole::Output)};
  Expr idx = sub(add(mul(v("y"), v("T")), v("r")), v("P"));
  Expr read = access("I", {v("n"), idx}, DType::F32, guarded ? float_imm(0.0) : nullptr, SourceLoc{6, 20});
  k.body = {stmt("O", {"n", "y"}, ReduceKind::Add, mul(read, access("W", {v("r")}, DType::F32)), {"r"},
                 {{"n", v("N")}, {"y", out_len}, {"r", v("R")}})};
  return k;
}

TEST(LowerToLoops, GuardedConvKeepsTheGuardAndFoldsConstants) {
  ShapeBindings b{{"N", 2}, {"H", 9}, {"R", 3}, {"P", 1}, {"T", 1}};
  LoopProgram p = lower(conv1d(true), b);
  EXPECT_EQ(p.buffers[2].shape, (std::vector<int64_t>{2, 9}));
  // The guarded read moves with y, so y stays serial; O and I stream along y in place.
  EXPECT_EQ(outline(p.funcs[0].body),
            "for n<2> grid.x { for y<9> { O= }; for r<3> { for y<9> { O= } } }");
  auto st = stores(p.funcs[0].body);
  Expr read = st[1]->value->operands[1]->operands[0];
  ASSERT_EQ(read->kind, ExprKind::Access);
  EXPECT_EQ(read->name, "I");
  ASSERT_NE(read->guard, nullptr);
  EXPECT_EQ(to_string(read->operands[1]), "y + r - 1"); // y*1 + r - 1, folded
}

TEST(LowerToLoops, UnguardedReadOffTheEdgeIsAStaticBoundsError) {
  ShapeBindings b{{"N", 2}, {"H", 9}, {"R", 3}, {"P", 1}, {"T", 2}};
  try {
    lower_to_loops(conv1d(false), b, cpu());
    FAIL() << "expected a bounds error";
  } catch (const UserError& e) {
    std::string msg = e.what();
    // y in [0, 5), r in [0, 3): y*2 + r - 1 ranges over [-1, 9]; H = 9.
    EXPECT_THAT(msg, HasSubstr("kernel 'Conv1d': read I[n, y * 2 + r - 1] (line 6:20): index 1 "
                               "ranges over [-1, 9] but dimension 1 of 'I' has extent 9"));
    EXPECT_THAT(msg, HasSubstr("hint: use a guarded read"));
  }
}

TEST(LowerToLoops, UnguardedReadInsideTheTensorIsAccepted) {
  // No padding: y*2 + r over y in [0, 4), r in [0, 3) reaches at most 8 < 9.
  ShapeBindings b{{"N", 1}, {"H", 9}, {"R", 3}, {"P", 0}, {"T", 2}};
  LoopProgram p = lower(conv1d(false), b);
  EXPECT_EQ(p.buffers[2].shape, (std::vector<int64_t>{1, 4}));
}

TEST(LowerToLoops, SpecialisationParamsAreFoldedAndRuntimeParamsKept) {
  Kernel k;
  k.name = "Shift";
  k.tensors = {tensor("X", DType::F32, {v("N")}, TensorRole::Input),
               tensor("Y", DType::F32, {sub(v("N"), v("S"))}, TensorRole::Output)};
  k.params = {ParamDecl{"S", DType::I64, {}}, ParamDecl{"alpha", DType::F32, {}}};
  Expr value = mul(access("X", {add(v("i"), v("S"))}, DType::F32), var("alpha", DType::F32));
  k.body = {stmt("Y", {"i"}, ReduceKind::Assign, value, {}, {{"i", sub(v("N"), v("S"))}})};
  ShapeBindings b = bind_shapes(k, {{"X", {10}}}, {{"S", 3}});
  LoopProgram p = lower(k, b);
  ASSERT_EQ(p.params.size(), 1u);
  EXPECT_EQ(p.params[0].name, "alpha");
  EXPECT_EQ(outline(p.funcs[0].body), "for i<7> grid.x { Y= }");
  EXPECT_EQ(to_string(stores(p.funcs[0].body)[0]->value), "X[i + 3] * alpha");
}

TEST(LowerToLoops, LoopVariableNamedLikeATensorIsRenamed) {
  Kernel k;
  k.name = "Clash";
  k.tensors = {tensor("X", DType::F32, {v("N"), v("D")}, TensorRole::Input),
               tensor("s", DType::F32, {v("N")}, TensorRole::Output)};
  k.body = {stmt("s", {"i"}, ReduceKind::Add, access("X", {v("i"), v("s")}, DType::F32), {"s"},
                 {{"i", v("N")}, {"s", v("D")}})};
  LoopProgram p = lower(k, {{"N", 2}, {"D", 3}});
  EXPECT_EQ(outline(p.funcs[0].body),
            "for i<2> grid.x { alloc acc:f32 register { acc=; for s_0<3> { acc= }; s= } }");
}

} // namespace
} // namespace unitile
