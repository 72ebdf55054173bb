// Tests of the c dialect printer on hand-built Loop IR: the text it prints, the errors it
// raises, and that everything it prints compiles warning-free with the host compiler.
#include "codegen/CDialectAbi.h"
#include "codegen/Codegen.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <unistd.h>

namespace unitile {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

hcd::Hcd test_hcd(int vector_bits = 256) {
  hcd::Hcd h;
  h.name = "test-cpu";
  h.dialect = "c";
  h.vector_bits = vector_bits;
  h.source = "test";
  return h;
}

Expr v(const std::string& n) {
  return var(n);
}
Expr i64(int64_t x) {
  return int_imm(x);
}
Expr add(Expr a, Expr b) {
  return binary(BinaryOp::Add, std::move(a), std::move(b));
}
Expr sub(Expr a, Expr b) {
  return binary(BinaryOp::Sub, std::move(a), std::move(b));
}
Expr mul(Expr a, Expr b) {
  return binary(BinaryOp::Mul, std::move(a), std::move(b));
}
Expr ld(const std::string& buf, std::vector<Expr> idx, DType t = DType::F32, Expr guard = nullptr) {
  return access(buf, std::move(idx), t, std::move(guard));
}
Stmt loop(const std::string& name, int64_t min, int64_t extent, ForKind k, Stmt body) {
  return for_loop(name, i64(min), i64(extent), k, std::move(body));
}

LoopProgram program(std::vector<LoopBuffer> buffers, Stmt body,
                    std::vector<ParamDecl> params = {}) {
  LoopProgram p;
  p.kernel = "Test";
  p.buffers = std::move(buffers);
  p.params = std::move(params);
  p.funcs.push_back({"main", std::move(body)});
  return p;
}

// C[i,j] = sum_k A[i,k] * B[k,j], rows on the grid, accumulating in a register.
LoopProgram matmul(int64_t M, int64_t K, int64_t N) {
  Stmt acc_init = store("acc", {i64(0)}, float_imm(0));
  Stmt acc_step =
      store("acc", {i64(0)},
            add(ld("acc", {i64(0)}), mul(ld("A", {v("i"), v("k")}), ld("B", {v("k"), v("j")}))));
  Stmt body = loop("i", 0, M, ForKind::GridX,
                   loop("j", 0, N, ForKind::Serial,
                        allocate("acc", DType::F32, {1}, MemScope::Register,
                                 block({acc_init, loop("k", 0, K, ForKind::Serial, acc_step),
                                        store("C", {v("i"), v("j")}, ld("acc", {i64(0)}))}))));
  return program({{"A", DType::F32, {M, K}, TensorRole::Input},
                  {"B", DType::F32, {K, N}, TensorRole::Input},
                  {"C", DType::F32, {M, N}, TensorRole::Output}},
                 body);
}

// Compile `code` with the host compiler as the cpu plugin would, warnings as errors.
std::string compile_errors(const std::string& code) {
  char dir[] = "/tmp/unitile-codegen-test-XXXXXX";
  if (!mkdtemp(dir))
    return "mkdtemp failed";
  std::string src = std::string(dir) + "/k.c", log = std::string(dir) + "/log.txt";
  std::ofstream(src) << code;
  std::string cmd = "cc -std=gnu11 -O3 -Wall -Wextra -Wno-unused-parameter -Werror -fsyntax-only " +
                    src + " > " + log + " 2>&1";
  int rc = std::system(cmd.c_str());
  std::ifstream in(log);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::remove(src.c_str());
  std::remove(log.c_str());
  rmdir(dir);
  return rc == 0 ? "" : text + "\n--- source ---\n" + code;
}

TEST(CPrinter, MatmulBindsGridLoopAndLinearisesIndices) {
  GeneratedSource g = generate_source(matmul(4, 8, 16), test_hcd());
  EXPECT_EQ(g.dialect, "c");
  ASSERT_EQ(g.entries, std::vector<std::string>{UT_C_ENTRY_PREFIX "main"});
  const std::string& c = g.code;
  EXPECT_THAT(
      c,
      HasSubstr("void ut_entry_main(const ut_c_arg* args, uint32_t bx, uint32_t by, uint32_t bz)"));
  EXPECT_THAT(c, HasSubstr("typedef union ut_c_arg { void* p; int64_t i; double f; } ut_c_arg;"));
  EXPECT_THAT(c, HasSubstr("const float* restrict A = (const float*)args[0].p;"));
  EXPECT_THAT(c, HasSubstr("float* restrict C = (float*)args[2].p;"));
  EXPECT_THAT(c, HasSubstr("const int64_t i = (int64_t)bx;"));
  EXPECT_THAT(c, Not(HasSubstr("for (int64_t i")));
  EXPECT_THAT(c, HasSubstr("for (int64_t j = 0; j < 16; ++j) {"));
  EXPECT_THAT(c, HasSubstr("float acc[1];"));
  EXPECT_THAT(c, HasSubstr("acc[0] = acc[0] + (A[i * 8 + k] * B[k * 16 + j]);"));
  EXPECT_THAT(c, HasSubstr("C[i * 16 + j] = acc[0];"));
  EXPECT_EQ(compile_errors(c), "");
}

TEST(CPrinter, UnusedBuffersAndGridVariablesAreNotDeclared) {
  Stmt body = loop("b", 0, 3, ForKind::GridX, store("Y", {i64(0)}, float_imm(1.5)));
  LoopProgram p = program(
      {{"X", DType::F32, {4}, TensorRole::Input}, {"Y", DType::F32, {1}, TensorRole::Output}},
      body);
  std::string c = generate_source(p, test_hcd()).code;
  EXPECT_THAT(c, Not(HasSubstr("args[0]")));
  EXPECT_THAT(c, Not(HasSubstr("const int64_t b")));
  EXPECT_THAT(c, HasSubstr("Y[0] = 1.5f;"));
  EXPECT_EQ(compile_errors(c), "");
}

TEST(CPrinter, GuardedReadTestsOnlyWhatCanFail) {
  // O[x] += (I[x + r - 1] ?? 0) * W[r]: a convolution row with zero padding.
  auto conv = [](int64_t x_min, int64_t x_extent) {
    Expr idx = sub(add(v("x"), v("r")), i64(1));
    Stmt body = loop("x", x_min, x_extent, ForKind::Serial,
                     loop("r", 0, 3, ForKind::Serial,
                          store("O", {v("x")},
                                add(ld("O", {v("x")}), mul(ld("I", {idx}, DType::F32, float_imm(0)),
                                                           ld("W", {v("r")}))))));
    return program({{"I", DType::F32, {10}, TensorRole::Input},
                    {"W", DType::F32, {3}, TensorRole::Input},
                    {"O", DType::F32, {10}, TensorRole::Output}},
                   body);
  };
  std::string edge = generate_source(conv(0, 10), test_hcd()).code;
  EXPECT_THAT(edge,
              HasSubstr("((((x + r) - 1) >= 0 && ((x + r) - 1) < 10) ? I[(x + r) - 1] : 0.0f)"));
  EXPECT_EQ(compile_errors(edge), "");
  // Interior points never leave I: no test at all.
  std::string interior = generate_source(conv(1, 8), test_hcd()).code;
  EXPECT_THAT(interior, HasSubstr("(I[(x + r) - 1] * W[r])"));
  EXPECT_THAT(interior, Not(HasSubstr("?")));
}

TEST(CPrinter, F16StorageConvertsAtLoadsAndStores) {
  // Y[i] = f16(X[i] * 2) ; Z[i] = Y[i] + 1 (f16 arithmetic happens in float)
  Stmt body = loop(
      "i", 0, 8, ForKind::Serial,
      block({store("Y", {v("i")}, cast(DType::F16, mul(ld("X", {v("i")}), float_imm(2)))),
             store("Z", {v("i")}, add(ld("Y", {v("i")}, DType::F16), float_imm(1, DType::F16)))}));
  LoopProgram p = program({{"X", DType::F32, {8}, TensorRole::Input},
                           {"Y", DType::F16, {8}, TensorRole::Output},
                           {"Z", DType::BF16, {8}, TensorRole::Output}},
                          body);
  std::string c = generate_source(p, test_hcd()).code;
  EXPECT_THAT(c, HasSubstr("uint16_t* restrict Y = (uint16_t*)args[1].p;"));
  EXPECT_THAT(c, HasSubstr("Y[i] = ut_f32_to_f16((X[i] * 2.0f));"));
  EXPECT_THAT(c, HasSubstr("Z[i] = ut_f32_to_bf16((ut_f16_to_f32(Y[i]) + 1.0f));"));
  EXPECT_THAT(c, HasSubstr("static inline uint16_t ut_f32_to_f16(float f)"));
  EXPECT_THAT(c, HasSubstr("static inline float ut_f16_to_f32(uint16_t h)"));
  EXPECT_EQ(compile_errors(c), "");
}

TEST(CPrinter, InexactHalfLiteralsAreRounded) {
  Stmt body = store("Y", {i64(0)}, add(float_imm(0.1, DType::F16), float_imm(0.5, DType::F16)));
  LoopProgram p = program({{"Y", DType::F32, {1}, TensorRole::Output}}, body);
  std::string c = generate_source(p, test_hcd()).code;
  EXPECT_THAT(c, HasSubstr("Y[0] = ut_round_f16(0.100000001f) + 0.5f;"));
}

TEST(CPrinter, VectorizedElementwiseLoopHasVectorBodyAndScalarTail) {
  // Y[i] = A[i] * alpha + B[i] over 19 elements, 8 f32 lanes at 256 bits.
  Expr value = add(mul(ld("A", {v("i")}), var("alpha", DType::F32)), ld("B", {v("i")}));
  LoopProgram p = program({{"A", DType::F32, {19}, TensorRole::Input},
                           {"B", DType::F32, {19}, TensorRole::Input},
                           {"Y", DType::F32, {19}, TensorRole::Output}},
                          loop("i", 0, 19, ForKind::Vectorized, store("Y", {v("i")}, value)),
                          {{"alpha", DType::F32, {}}});
  std::string c = generate_source(p, test_hcd()).code;
  EXPECT_THAT(c, HasSubstr("typedef float ut_v8f32 __attribute__((vector_size(32)));"));
  EXPECT_THAT(c, HasSubstr("const float alpha = (float)args[3].f;"));
  EXPECT_THAT(c, HasSubstr("for (; i + 8 <= 19; i += 8) {"));
  EXPECT_THAT(c,
              HasSubstr("ut_v8f32_store(&Y[i], ((ut_v8f32_load(&A[i]) * ut_v8f32_splat(alpha)) + "
                        "ut_v8f32_load(&B[i])));"));
  EXPECT_THAT(c, HasSubstr("for (; i < 19; ++i) {"));
  EXPECT_THAT(c, HasSubstr("Y[i] = (A[i] * alpha) + B[i];"));
  EXPECT_EQ(compile_errors(c), "");

  // 512-bit vectors hold 16 lanes; an exact multiple needs no tail.
  LoopProgram q = p;
  q.buffers = {{"A", DType::F32, {32}, TensorRole::Input},
               {"B", DType::F32, {32}, TensorRole::Input},
               {"Y", DType::F32, {32}, TensorRole::Output}};
  q.funcs[0].body = loop("i", 0, 32, ForKind::Vectorized, store("Y", {v("i")}, value));
  std::string c16 = generate_source(q, test_hcd(512)).code;
  EXPECT_THAT(c16, HasSubstr("ut_v16f32"));
  EXPECT_THAT(c16, Not(HasSubstr("++i")));
}

TEST(CPrinter, VectorSelectMinMaxAndCasts) {
  // Y[i] = max(A[i], 0) ; Z[i] = (A[i] < 1 ? f64(A[i]) : D[i]) with mismatched lane widths
  Expr relu = call(MathFn::Max, {ld("A", {v("i")}), float_imm(0)});
  Expr pick = select(binary(BinaryOp::Lt, ld("A", {v("i")}), float_imm(1)), ld("A", {v("i")}),
                     ld("D", {v("i")}));
  LoopProgram p = program({{"A", DType::F32, {12}, TensorRole::Input},
                           {"D", DType::F32, {12}, TensorRole::Input},
                           {"Y", DType::F32, {12}, TensorRole::Output},
                           {"Z", DType::F64, {12}, TensorRole::Output}},
                          loop("i", 0, 12, ForKind::Vectorized,
                               block({store("Y", {v("i")}, relu), store("Z", {v("i")}, pick)})));
  std::string c = generate_source(p, test_hcd(128)).code;
  EXPECT_THAT(
      c, HasSubstr(
             "ut_v4f32_store(&Y[i], ut_v4f32_max(ut_v4f32_load(&A[i]), ut_v4f32_splat(0.0f)));"));
  EXPECT_THAT(
      c,
      HasSubstr(
          "__builtin_convertvector(ut_v4f32_blend((ut_v4f32_load(&A[i]) < ut_v4f32_splat(1.0f))"));
  EXPECT_THAT(c, HasSubstr("ut_v4f64"));
  EXPECT_EQ(compile_errors(c), "");
}

TEST(CPrinter, VectorizedLoopWithMathCallFallsBackToScalar) {
  // pow has no lane-wise helper: the loop stays scalar libm calls.
  Stmt body = loop("i", 0, 16, ForKind::Vectorized,
                   store("Y", {v("i")}, call(MathFn::Pow, {ld("A", {v("i")}), ld("A", {v("i")})})));
  LoopProgram p = program(
      {{"A", DType::F32, {16}, TensorRole::Input}, {"Y", DType::F32, {16}, TensorRole::Output}},
      body);
  std::string c = generate_source(p, test_hcd()).code;
  EXPECT_THAT(c, HasSubstr("#pragma GCC ivdep\n  for (int64_t i = 0; i < 16; ++i) {"));
  EXPECT_THAT(c, HasSubstr("Y[i] = powf(A[i], A[i]);"));
  EXPECT_THAT(c, Not(HasSubstr("ut_v8f32")));
}

TEST(CPrinter, VectorizedLoopWithLog1pUsesTheLaneWiseHelperAndOnlyWhatItNeeds) {
  Stmt body = loop("i", 0, 16, ForKind::Vectorized,
                   store("Y", {v("i")}, call(MathFn::Log1p, {ld("A", {v("i")})})));
  LoopProgram p = program(
      {{"A", DType::F32, {16}, TensorRole::Input}, {"Y", DType::F32, {16}, TensorRole::Output}},
      body);
  std::string c = generate_source(p, test_hcd()).code;
  EXPECT_THAT(c, HasSubstr("ut_v8f32_log1p(ut_v8f32_load(&A["));
  EXPECT_THAT(c, HasSubstr("static inline ut_v8f32 ut_v8f32_log(")); // its dependency
  EXPECT_THAT(c, Not(HasSubstr("ut_v8f32_atan2")));                  // nothing else
  EXPECT_THAT(c, Not(HasSubstr("log1pf(")));
  EXPECT_EQ(compile_errors(c), "");
}

TEST(CPrinter, BoolLogicIsVectorCodeOnByteLanes) {
  // C = A && !B on bool tensors: 32 one-byte lanes under a 256-bit HCD, & and ^ on 0/1.
  Stmt body = loop("i", 0, 64, ForKind::Vectorized,
                   store("C", {v("i")},
                         binary(BinaryOp::And, ld("A", {v("i")}, DType::Bool),
                                unary(UnaryOp::Not, ld("B", {v("i")}, DType::Bool)))));
  LoopProgram p = program({{"A", DType::Bool, {64}, TensorRole::Input},
                           {"B", DType::Bool, {64}, TensorRole::Input},
                           {"C", DType::Bool, {64}, TensorRole::Output}},
                          body);
  std::string c = generate_source(p, test_hcd()).code;
  EXPECT_THAT(c, HasSubstr("ut_v32bool_store(&C[i], (ut_v32bool_load(&A[i]) & "
                           "(ut_v32bool_load(&B[i]) ^ ut_v32bool_splat(1))));"));
  EXPECT_EQ(compile_errors(c), "");
}

TEST(CPrinter, SelectOnABoolTensorBlendsByItsLanes) {
  // where(Cond, A, B): the bool lanes widened to the f32 mask, one vector per 8 floats.
  Stmt body = loop("i", 0, 16, ForKind::Vectorized,
                   store("Y", {v("i")},
                         select(ld("Cond", {v("i")}, DType::Bool), ld("A", {v("i")}),
                                ld("B", {v("i")}))));
  LoopProgram p = program({{"Cond", DType::Bool, {16}, TensorRole::Input},
                           {"A", DType::F32, {16}, TensorRole::Input},
                           {"B", DType::F32, {16}, TensorRole::Input},
                           {"Y", DType::F32, {16}, TensorRole::Output}},
                          body);
  std::string c = generate_source(p, test_hcd()).code;
  EXPECT_THAT(c, HasSubstr("ut_v8f32_blend((__builtin_convertvector(ut_v8bool_load(&Cond[i]), "
                           "ut_v8i32) != ut_v8i32_splat(0))"));
  EXPECT_EQ(compile_errors(c), "");
}

TEST(CPrinter, VectorizedLoopWithExpUsesTheLaneWiseHelper) {
  // exp, sigmoid, tanh and erf of f32 have vector helpers; f64 keeps libm.
  Stmt body = loop("i", 0, 16, ForKind::Vectorized,
                   store("Y", {v("i")}, call(MathFn::Exp, {ld("A", {v("i")})})));
  LoopProgram p = program(
      {{"A", DType::F32, {16}, TensorRole::Input}, {"Y", DType::F32, {16}, TensorRole::Output}},
      body);
  std::string c = generate_source(p, test_hcd()).code;
  EXPECT_THAT(c, HasSubstr("ut_v8f32_exp(ut_v8f32_load(&A["));
  EXPECT_THAT(c, Not(HasSubstr("expf(")));
  EXPECT_EQ(compile_errors(c), "");
  LoopProgram p64 = program(
      {{"A", DType::F64, {16}, TensorRole::Input}, {"Y", DType::F64, {16}, TensorRole::Output}},
      loop("i", 0, 16, ForKind::Vectorized,
           store("Y", {v("i")}, call(MathFn::Exp, {ld("A", {v("i")}, DType::F64)}))));
  EXPECT_THAT(generate_source(p64, test_hcd()).code, HasSubstr("exp(A[i])"));
}

// A vectorized row sum: acc[l] += X[v*16 + l] over v, then acc[0] += acc[l] over the
// lanes in a serial loop, Y = acc[0].
LoopProgram vector_row_sum(int64_t step_lanes = 16) {
  Stmt init = loop("l", 0, 16, ForKind::Vectorized, store("acc", {v("l")}, float_imm(0)));
  Stmt step =
      loop("c", 0, 4, ForKind::Serial,
           loop("l", 0, step_lanes, ForKind::Vectorized,
                store("acc", {v("l")},
                      add(ld("acc", {v("l")}), ld("X", {add(mul(v("c"), i64(16)), v("l"))})))));
  Stmt sum = loop("l", 1, 15, ForKind::Serial,
                  store("acc", {i64(0)}, add(ld("acc", {i64(0)}), ld("acc", {v("l")}))));
  Stmt body = allocate("acc", DType::F32, {16}, MemScope::Register,
                       block({init, step, sum, store("Y", {i64(0)}, ld("acc", {i64(0)}))}));
  return program(
      {{"X", DType::F32, {64}, TensorRole::Input}, {"Y", DType::F32, {1}, TensorRole::Output}},
      body);
}

TEST(CPrinter, ReductionRegisterTileWithScalarLaneSum) {
  // c dialect: the final sum reads single lanes, so the accumulator stays a plain array
  // (GCC keeps it in registers anyway).
  std::string c = generate_source(vector_row_sum(), test_hcd()).code;
  EXPECT_THAT(c, HasSubstr("float acc[16] __attribute__((aligned(32)));"));
  EXPECT_THAT(c, HasSubstr("ut_v8f32_store(&acc[l], (ut_v8f32_load(&acc[l]) + ut_v8f32_load(&X["));
  EXPECT_EQ(compile_errors(c), "");
  // opencl dialect: an array of vectors, the lane sum through a pointer to its elements.
  hcd::Hcd h = test_hcd();
  h.dialect = "opencl";
  std::string cl = generate_source(vector_row_sum(), h).code;
  EXPECT_THAT(cl, HasSubstr("ut_v8f32 acc[2];"));
  EXPECT_THAT(cl, HasSubstr("acc[(l) / 8] = (acc[(l) / 8] + ut_v8f32_load(&X["));
  EXPECT_THAT(cl, HasSubstr("((float*)acc)[0] = ((float*)acc)[0] + ((float*)acc)[l];"));
  // A vector loop of 12 lanes is not whole vectors of 8: the tile stays a plain array.
  EXPECT_THAT(generate_source(vector_row_sum(12), h).code, HasSubstr("float acc[16] __attribute__((aligned(32)));"));
}

TEST(CPrinter, OpenCLDialectPrintsOpenCLVectorTypes) {
  // Same Loop IR, opencl dialect: floatN typedefs, vloadN/vstoreN, select, convert_intN.
  hcd::Hcd h = test_hcd();
  h.dialect = "opencl";
  std::string cl = generate_source(vector_row_sum(), h).code;
  EXPECT_THAT(cl, HasSubstr("typedef float8 ut_v8f32;"));
  EXPECT_THAT(cl, HasSubstr("#define ut_v8f32_load(p) vload8(0, p)"));
  EXPECT_THAT(cl, HasSubstr("#define ut_v8f32_store(p, v) vstore8(v, 0, p)"));
  EXPECT_THAT(cl, HasSubstr("return select(b, a, m);"));
  EXPECT_THAT(cl, HasSubstr("ut_v8f32 acc[2];"));
  EXPECT_THAT(cl, Not(HasSubstr("__builtin_convertvector")));
  EXPECT_THAT(cl, Not(HasSubstr("vector_size")));
  Stmt body = loop(
      "i", 0, 16, ForKind::Vectorized,
      store("Y", {v("i")}, call(MathFn::Exp, {cast(DType::F32, ld("K", {v("i")}, DType::I32))})));
  LoopProgram p = program(
      {{"K", DType::I32, {16}, TensorRole::Input}, {"Y", DType::F32, {16}, TensorRole::Output}},
      body);
  std::string e = generate_source(p, h).code;
  EXPECT_THAT(e, HasSubstr("ut_v8f32_exp(convert_float8(ut_v8i32_load(&K[i])))"));
  EXPECT_THAT(e, HasSubstr("ut_v8i32 k = convert_int8(n);"));
  EXPECT_THAT(e, HasSubstr("as_float8(((k1 + 127) << 23))"));
  // OpenCL C has no vectors wider than 16 lanes: a 1024-bit HCD prints scalar loops.
  h.vector_bits = 1024;
  EXPECT_THAT(generate_source(p, h).code, Not(HasSubstr("ut_v32f32")));
}

TEST(CPrinter, VectorizedLoopReadingItsOwnOutputElsewhereStaysScalar) {
  // Y[i] = Y[0] + 1 would read lane 0 after the scalar loop wrote it: not vectorizable.
  Stmt body = loop("i", 0, 16, ForKind::Vectorized,
                   store("Y", {v("i")}, add(ld("Y", {i64(0)}), float_imm(1))));
  LoopProgram p = program({{"Y", DType::F32, {16}, TensorRole::Output}}, body);
  std::string c = generate_source(p, test_hcd()).code;
  EXPECT_THAT(c, HasSubstr("#pragma GCC ivdep"));
  EXPECT_THAT(c, Not(HasSubstr("ut_v8f32")));
  // In-place on the same element is fine.
  p.funcs[0].body = loop("i", 0, 16, ForKind::Vectorized,
                         store("Y", {v("i")}, add(ld("Y", {v("i")}), float_imm(1))));
  EXPECT_THAT(generate_source(p, test_hcd()).code, HasSubstr("ut_v8f32_store(&Y[i]"));
}

TEST(CPrinter, IntegerDivisionAndModuloSemantics) {
  // Indices provably >= 0 use plain C operators; others get the Python-semantics helpers.
  Expr q = binary(BinaryOp::FloorDiv, v("i"), i64(4));
  Expr r = binary(BinaryOp::Mod, v("i"), i64(4));
  Expr qn = binary(BinaryOp::FloorDiv, sub(v("i"), i64(3)), i64(4));
  Expr rn = binary(BinaryOp::Mod, sub(v("i"), i64(3)), i64(4));
  Expr dn = binary(BinaryOp::Div, sub(v("i"), i64(3)), i64(4));
  Stmt body =
      loop("i", 0, 8, ForKind::Serial,
           block({store("Q", {v("i")}, q), store("R", {v("i")}, r), store("QN", {v("i")}, qn),
                  store("RN", {v("i")}, rn), store("DN", {v("i")}, dn)}));
  std::vector<LoopBuffer> bufs;
  for (const char* n : {"Q", "R", "QN", "RN", "DN"})
    bufs.push_back({n, DType::I64, {8}, TensorRole::Output});
  std::string c = generate_source(program(bufs, body), test_hcd()).code;
  EXPECT_THAT(c, HasSubstr("Q[i] = i / 4;"));
  EXPECT_THAT(c, HasSubstr("R[i] = i % 4;"));
  EXPECT_THAT(c, HasSubstr("QN[i] = ut_floordiv_i64((i - 3), 4);"));
  EXPECT_THAT(c, HasSubstr("RN[i] = ut_mod_i64((i - 3), 4);"));
  EXPECT_THAT(c, HasSubstr("DN[i] = (i - 3) / 4;"));
  EXPECT_EQ(compile_errors(c), "");
}

TEST(CPrinter, MathFunctionsPickTheVariantByType) {
  Expr x = ld("A", {v("i")});
  Expr xd = ld("D", {v("i")}, DType::F64);
  Stmt body =
      loop("i", 0, 4, ForKind::Serial,
           block({store("Y", {v("i")}, call(MathFn::Sigmoid, {x})),
                  store("Y", {v("i")}, call(MathFn::Rsqrt, {x})),
                  store("Y", {v("i")}, call(MathFn::Round, {x})),
                  store("Y", {v("i")}, call(MathFn::Min, {x, float_imm(2)})),
                  store("Y", {v("i")}, call(MathFn::Sign, {x})),
                  store("E", {v("i")}, call(MathFn::Exp, {xd})),
                  store("B", {v("i")}, call(MathFn::IsNan, {x})),
                  store("N", {v("i")}, cast(DType::I32, x)),
                  store("N", {v("i")}, call(MathFn::Abs, {ld("N", {v("i")}, DType::I32)}))}));
  LoopProgram p = program({{"A", DType::F32, {4}, TensorRole::Input},
                           {"D", DType::F64, {4}, TensorRole::Input},
                           {"Y", DType::F32, {4}, TensorRole::Output},
                           {"E", DType::F64, {4}, TensorRole::Output},
                           {"B", DType::Bool, {4}, TensorRole::Output},
                           {"N", DType::I32, {4}, TensorRole::Output}},
                          body);
  std::string c = generate_source(p, test_hcd()).code;
  EXPECT_THAT(c, HasSubstr("Y[i] = 1.0f / (1.0f + expf(-(A[i])));"));
  EXPECT_THAT(c, HasSubstr("Y[i] = 1.0f / sqrtf(A[i]);"));
  EXPECT_THAT(c, HasSubstr("Y[i] = nearbyintf(A[i]);"));
  EXPECT_THAT(c, HasSubstr("Y[i] = ut_min_f32(A[i], 2.0f);"));
  EXPECT_THAT(c, HasSubstr("Y[i] = ut_sign_f32(A[i]);"));
  EXPECT_THAT(c, HasSubstr("E[i] = exp(D[i]);"));
  EXPECT_THAT(c, HasSubstr("B[i] = isnan(A[i]) != 0;"));
  EXPECT_THAT(c, HasSubstr("N[i] = (int32_t)ut_float_to_i64(A[i]);"));
  EXPECT_THAT(c, HasSubstr("N[i] = ut_abs_i32(N[i]);"));
  EXPECT_THAT(c, Not(HasSubstr("fminf")));
  EXPECT_EQ(compile_errors(c), "");
}

TEST(CPrinter, ParamsLetsIfsAndUnrolledLoops) {
  Stmt inner = let_stmt("t", mul(v("i"), var("n")),
                        if_then(binary(BinaryOp::Lt, v("t"), i64(10)),
                                store("Y", {v("i")}, cast(DType::F32, var("flag", DType::Bool))),
                                store("Y", {v("i")}, var("h", DType::F16))));
  Stmt body = loop("i", 0, 4, ForKind::Unrolled, inner);
  LoopProgram p =
      program({{"Y", DType::F32, {4}, TensorRole::Output}}, body,
              {{"n", DType::I64, {}}, {"flag", DType::Bool, {}}, {"h", DType::F16, {}}});
  std::string c = generate_source(p, test_hcd()).code;
  EXPECT_THAT(c, HasSubstr("const int64_t n = (int64_t)args[1].i;"));
  EXPECT_THAT(c, HasSubstr("const uint8_t flag = args[2].i != 0;"));
  EXPECT_THAT(c, HasSubstr("const float h = ut_round_f16((float)args[3].f);"));
  // Unrolled in the source: one block per iteration with the variable a constant.
  EXPECT_THAT(c, Not(HasSubstr("for (int64_t i")));
  EXPECT_THAT(c, HasSubstr("{\n    const int64_t i = 0;"));
  EXPECT_THAT(c, HasSubstr("{\n    const int64_t i = 3;"));
  EXPECT_THAT(c, HasSubstr("const int64_t t = i * n;"));
  EXPECT_THAT(c, HasSubstr("if (t < 10) {"));
  EXPECT_THAT(c, HasSubstr("} else {"));
  EXPECT_EQ(compile_errors(c), "");
}

TEST(CPrinter, LargeAllocationsLiveOnTheHeap) {
  Stmt use = loop("i", 0, 20000, ForKind::Serial, store("tmp", {v("i")}, float_imm(0)));
  Stmt body = block({allocate("tmp", DType::F32, {20000}, MemScope::Local,
                              block({use, store("Y", {i64(0)}, ld("tmp", {i64(7)}))})),
                     allocate("small", DType::F16, {4}, MemScope::Register,
                              block({store("small", {i64(1)}, float_imm(3, DType::F16)),
                                     store("Y", {i64(1)}, ld("small", {i64(1)}, DType::F16))}))});
  LoopProgram p = program({{"Y", DType::F32, {2}, TensorRole::Output}}, body);
  std::string c = generate_source(p, test_hcd()).code;
  EXPECT_THAT(c, HasSubstr("float* tmp = (float*)aligned_alloc(64, 80000);"));
  EXPECT_THAT(c, HasSubstr("free(tmp);"));
  EXPECT_THAT(c, HasSubstr("float small[4];")); // f16 registers hold float
  EXPECT_THAT(c, HasSubstr("Y[1] = small[1];"));
  EXPECT_EQ(compile_errors(c), "");
}

TEST(CPrinter, GlobalAllocationInsideAFuncIsACompilerBug) {
  Stmt body = allocate("g", DType::F32, {4}, MemScope::Global, store("g", {i64(0)}, float_imm(0)));
  EXPECT_THROW(generate_source(program({}, body), test_hcd()), InternalError);
}

TEST(CPrinter, BarriersNeedSingleThreadBlocks) {
  Stmt single = loop(
      "b", 0, 2, ForKind::GridX,
      loop("t", 0, 1, ForKind::ThreadX, block({store("Y", {v("b")}, float_imm(1)), barrier()})));
  LoopProgram p = program({{"Y", DType::F32, {2}, TensorRole::Output}}, single);
  std::string c = generate_source(p, test_hcd()).code;
  EXPECT_THAT(c, HasSubstr("Y[b] = 1.0f;"));
  EXPECT_EQ(compile_errors(c), "");

  p.funcs[0].body = loop(
      "b", 0, 2, ForKind::GridX,
      loop("t", 0, 4, ForKind::ThreadX, block({store("Y", {v("b")}, float_imm(1)), barrier()})));
  try {
    generate_source(p, test_hcd());
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), HasSubstr("cannot run multi-thread blocks with barriers"));
  }

  // Without a barrier a multi-thread block runs its threads as a serial loop.
  p.funcs[0].body =
      loop("b", 0, 2, ForKind::GridX,
           loop("t", 0, 4, ForKind::ThreadX, store("Y", {v("b")}, cast(DType::F32, v("t")))));
  c = generate_source(p, test_hcd()).code;
  EXPECT_THAT(c, HasSubstr("for (int64_t t = 0; t < 4; ++t) {"));
  EXPECT_EQ(compile_errors(c), "");
}

TEST(CPrinter, IrNamesBecomeValidDistinctCIdentifiers) {
  Stmt body =
      loop("i.outer", 0, 2, ForKind::Serial,
           loop("i_outer", 0, 2, ForKind::Serial,
                store("int", {add(mul(v("i.outer"), i64(2)), v("i_outer"))}, float_imm(0))));
  LoopProgram p = program({{"int", DType::F32, {4}, TensorRole::Output}}, body);
  p.funcs[0].name = "main_0";
  GeneratedSource g = generate_source(p, test_hcd());
  EXPECT_EQ(g.entries[0], "ut_entry_main_0");
  EXPECT_THAT(g.code, HasSubstr("float* restrict int_ = (float*)args[0].p;"));
  EXPECT_THAT(g.code, HasSubstr("int_[(i_outer * 2) + i_outer_1] = 0.0f;"));
  EXPECT_EQ(compile_errors(g.code), "");
}

TEST(CPrinter, SeveralFuncsShareOneTranslationUnit) {
  LoopProgram p = matmul(2, 2, 2);
  p.funcs.push_back({"second", store("C", {i64(0), i64(1)}, float_imm(7))});
  GeneratedSource g = generate_source(p, test_hcd());
  EXPECT_EQ(g.entries, (std::vector<std::string>{"ut_entry_main", "ut_entry_second"}));
  EXPECT_THAT(g.code, HasSubstr("C[1] = 7.0f;"));
  EXPECT_EQ(compile_errors(g.code), "");
}

TEST(Codegen, UnknownDialectIsAUserError) {
  hcd::Hcd h = test_hcd();
  h.dialect = "ptx";
  try {
    generate_source(matmul(2, 2, 2), h);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), HasSubstr("unknown dialect 'ptx' in HCD 'test-cpu'"));
  }
}

TEST(Codegen, LoopIrDialectIsTheLoopIrText) {
  hcd::Hcd h = test_hcd();
  h.dialect = "loopir";
  LoopProgram p = matmul(2, 3, 4);
  GeneratedSource g = generate_source(p, h);
  EXPECT_EQ(g.dialect, "loopir");
  EXPECT_EQ(g.code, to_string(p));
  EXPECT_EQ(g.entries, std::vector<std::string>{"main"});
}

} // namespace
} // namespace unitile
