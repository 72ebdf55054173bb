// End-to-end tests of codegen + the cpu plugin: hand-built Loop IR is printed as C,
// compiled by the host compiler, launched over several thread counts, and compared with
// straightforward C++ loops (and, for f16/bf16, with the sim device's conversions).
#include "test_cpu_plugin.h"

#include "backends/sim/SimNumerics.h"

#include <gmock/gmock.h>

#include <bit>
#include <cmath>
#include <cstring>

namespace unitile::cpu_test {
namespace {

hcd::Hcd host(int vector_bits = 256) {
  hcd::Hcd h;
  h.name = "test-host";
  h.dialect = "c";
  h.vector_bits = vector_bits;
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
Expr ld(const std::string& b, std::vector<Expr> idx, DType t = DType::F32, Expr guard = nullptr) {
  return access(b, std::move(idx), t, std::move(guard));
}

LoopProgram program(std::vector<LoopBuffer> buffers, Stmt body,
                    std::vector<ParamDecl> params = {}) {
  LoopProgram p;
  p.kernel = "EndToEnd";
  p.buffers = std::move(buffers);
  p.params = std::move(params);
  p.funcs.push_back({"main", std::move(body)});
  return p;
}

std::vector<float> ramp(size_t n, float scale, float offset) {
  std::vector<float> x(n);
  for (size_t k = 0; k < n; ++k)
    x[k] = std::sin(static_cast<float>(k) * scale) + offset;
  return x;
}

constexpr const char* kThreadCounts[] = {"1", "2", "5"};

TEST(CpuEndToEnd, Matmul) {
  ASSERT_NE(cpu_api(), nullptr);
  const int64_t M = 17, K = 33, N = 9;
  // C[i,j] = sum_k A[i,k] * B[k,j]: rows on the grid, a register accumulator.
  Stmt step =
      store("acc", {i64(0)},
            add(ld("acc", {i64(0)}), mul(ld("A", {v("i"), v("k")}), ld("B", {v("k"), v("j")}))));
  Stmt body =
      for_loop("i", i64(0), i64(M), ForKind::GridX,
               for_loop("j", i64(0), i64(N), ForKind::Serial,
                        allocate("acc", DType::F32, {1}, MemScope::Register,
                                 block({store("acc", {i64(0)}, float_imm(0)),
                                        for_loop("k", i64(0), i64(K), ForKind::Serial, step),
                                        store("C", {v("i"), v("j")}, ld("acc", {i64(0)}))}))));
  LoopProgram p = program({{"A", DType::F32, {M, K}, TensorRole::Input},
                           {"B", DType::F32, {K, N}, TensorRole::Input},
                           {"C", DType::F32, {M, N}, TensorRole::Output}},
                          body);
  Module m(p, generate_source(p, host()));
  ASSERT_TRUE(m.ok());
  std::vector<float> a = ramp(M * K, 0.37f, 0.1f), b = ramp(K * N, 0.11f, -0.2f), want(M * N, 0.0f);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float acc = 0;
      for (int64_t k = 0; k < K; ++k)
        acc += a[i * K + k] * b[k * N + j];
      want[i * N + j] = acc;
    }
  for (const char* threads : kThreadCounts) {
    ScopedEnv env("UNITILE_NUM_THREADS", threads);
    Buffer A(a), B(b), C{std::vector<float>(M * N, -1.0f)};
    ASSERT_EQ(m.run({A.arg(), B.arg(), C.arg()}), UT_OK);
    std::vector<float> got = C.read<float>();
    for (size_t k = 0; k < want.size(); ++k)
      ASSERT_NEAR(got[k], want[k], 1e-5f * (1 + std::fabs(want[k])))
          << "element " << k << ", threads " << threads;
  }
}

TEST(CpuEndToEnd, GuardedConvolutionRows) {
  ASSERT_NE(cpu_api(), nullptr);
  // O[h,x] = sum_r (I[h, 2x + r - 2] ?? 0.5) * W[r]: stride 2, padding 2, a non-zero pad.
  const int64_t H = 6, Wd = 13, R = 5, S = 2, P = 2, Wo = (Wd + 2 * P - R) / S + 1;
  Expr idx = sub(add(mul(v("x"), i64(S)), v("r")), i64(P));
  Stmt step =
      store("O", {v("h"), v("x")},
            add(ld("O", {v("h"), v("x")}),
                mul(ld("I", {v("h"), idx}, DType::F32, float_imm(0.5)), ld("W", {v("r")}))));
  Stmt body = for_loop("h", i64(0), i64(H), ForKind::GridX,
                       for_loop("x", i64(0), i64(Wo), ForKind::Serial,
                                block({store("O", {v("h"), v("x")}, float_imm(0)),
                                       for_loop("r", i64(0), i64(R), ForKind::Serial, step)})));
  LoopProgram p = program({{"I", DType::F32, {H, Wd}, TensorRole::Input},
                           {"W", DType::F32, {R}, TensorRole::Input},
                           {"O", DType::F32, {H, Wo}, TensorRole::Output}},
                          body);
  Module m(p, generate_source(p, host()));
  ASSERT_TRUE(m.ok());
  std::vector<float> in = ramp(H * Wd, 0.7f, 0.0f), w = {0.5f, -1.0f, 2.0f, 0.25f, 1.5f},
                     want(H * Wo, 0.0f);
  for (int64_t h = 0; h < H; ++h)
    for (int64_t x = 0; x < Wo; ++x)
      for (int64_t r = 0; r < R; ++r) {
        int64_t c = x * S + r - P;
        want[h * Wo + x] += (c >= 0 && c < Wd ? in[h * Wd + c] : 0.5f) * w[r];
      }
  for (const char* threads : kThreadCounts) {
    ScopedEnv env("UNITILE_NUM_THREADS", threads);
    Buffer I(in), W(w), O{std::vector<float>(H * Wo, 9.0f)};
    ASSERT_EQ(m.run({I.arg(), W.arg(), O.arg()}), UT_OK);
    std::vector<float> got = O.read<float>();
    for (size_t k = 0; k < want.size(); ++k)
      ASSERT_NEAR(got[k], want[k], 1e-5f) << "element " << k;
  }
}

// Bit patterns that cover every f32 exponent with assorted mantissas, plus the edges.
std::vector<uint32_t> float_patterns() {
  std::vector<uint32_t> bits;
  for (uint64_t x = 0; x <= 0xffffffffull; x += 40009)
    bits.push_back(static_cast<uint32_t>(x));
  for (uint32_t edge :
       {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0x7f800001u, 0xffffffffu,
        0x477ff000u, 0x477fefffu, 0x477ff001u, 0x38800000u, 0x387fffffu, 0x33000000u, 0x33000001u,
        0x33800000u, 0x3f800000u, 0x3f801000u, 0x3f803000u, 0x3f808000u, 0x3f818000u, 0x00000001u})
    bits.push_back(edge);
  return bits;
}

TEST(CpuEndToEnd, HalfStoresAndLoadsMatchTheSimBitForBit) {
  ASSERT_NE(cpu_api(), nullptr);
  std::vector<uint32_t> bits = float_patterns();
  const int64_t n = static_cast<int64_t>(bits.size());
  // H[i] = f16(X[i]); G[i] = bf16(X[i]); Y[i] = f32(H[i]); Z[i] = f32(G[i])
  Stmt body =
      for_loop("i", i64(0), i64(n), ForKind::Serial,
               block({store("H", {v("i")}, cast(DType::F16, ld("X", {v("i")}))),
                      store("G", {v("i")}, cast(DType::BF16, ld("X", {v("i")}))),
                      store("Y", {v("i")}, cast(DType::F32, ld("H", {v("i")}, DType::F16))),
                      store("Z", {v("i")}, cast(DType::F32, ld("G", {v("i")}, DType::BF16)))}));
  LoopProgram p = program({{"X", DType::F32, {n}, TensorRole::Input},
                           {"H", DType::F16, {n}, TensorRole::Output},
                           {"G", DType::BF16, {n}, TensorRole::Output},
                           {"Y", DType::F32, {n}, TensorRole::Output},
                           {"Z", DType::F32, {n}, TensorRole::Output}},
                          body);
  // -ffast-math must not change the conversions: they are integer code.
  Module m(p, generate_source(p, host()), "cc -O3 -ffast-math");
  ASSERT_TRUE(m.ok());
  std::vector<float> x(n);
  std::memcpy(x.data(), bits.data(), bits.size() * 4);
  Buffer X(x), H{std::vector<uint16_t>(n)}, G{std::vector<uint16_t>(n)}, Y{std::vector<float>(n)},
      Z{std::vector<float>(n)};
  ASSERT_EQ(m.run({X.arg(), H.arg(), G.arg(), Y.arg(), Z.arg()}), UT_OK);
  std::vector<uint16_t> h = H.read<uint16_t>(), g = G.read<uint16_t>();
  std::vector<float> y = Y.read<float>(), z = Z.read<float>();
  for (int64_t k = 0; k < n; ++k) {
    ASSERT_EQ(h[k], sim::f32_to_f16_bits(x[k])) << std::hex << "f32 bits 0x" << bits[k];
    ASSERT_EQ(g[k], sim::f32_to_bf16_bits(x[k])) << std::hex << "f32 bits 0x" << bits[k];
    ASSERT_EQ(std::bit_cast<uint32_t>(y[k]), std::bit_cast<uint32_t>(sim::f16_bits_to_f32(h[k])))
        << std::hex << h[k];
    ASSERT_EQ(std::bit_cast<uint32_t>(z[k]), std::bit_cast<uint32_t>(sim::bf16_bits_to_f32(g[k])))
        << std::hex << g[k];
  }
}

TEST(CpuEndToEnd, EveryHalfWidensExactly) {
  ASSERT_NE(cpu_api(), nullptr);
  Stmt body = for_loop("i", i64(0), i64(65536), ForKind::Serial,
                       store("Y", {v("i")}, cast(DType::F32, ld("H", {v("i")}, DType::F16))));
  LoopProgram p = program({{"H", DType::F16, {65536}, TensorRole::Input},
                           {"Y", DType::F32, {65536}, TensorRole::Output}},
                          body);
  Module m(p, generate_source(p, host()));
  ASSERT_TRUE(m.ok());
  std::vector<uint16_t> all(65536);
  for (uint32_t k = 0; k < 65536; ++k)
    all[k] = static_cast<uint16_t>(k);
  Buffer H(all), Y{std::vector<float>(65536)};
  ASSERT_EQ(m.run({H.arg(), Y.arg()}), UT_OK);
  std::vector<float> y = Y.read<float>();
  for (uint32_t k = 0; k < 65536; ++k)
    ASSERT_EQ(std::bit_cast<uint32_t>(y[k]), std::bit_cast<uint32_t>(sim::f16_bits_to_f32(all[k])))
        << std::hex << k;
}

TEST(CpuEndToEnd, VectorizedElementwiseWithTail) {
  ASSERT_NE(cpu_api(), nullptr);
  // Y[i] = max(A[i] * alpha + B[i], 0) in chunks of 64 on the grid; the last chunk has
  // 43 elements, so the vector loop (8 lanes) leaves a scalar tail of 3.
  const int64_t n = 1003, chunk = 64, blocks = (n + chunk - 1) / chunk;
  Expr i = add(mul(v("b"), i64(chunk)), v("t"));
  Expr value = call(MathFn::Max,
                    {add(mul(ld("A", {i}), var("alpha", DType::F32)), ld("B", {i})), float_imm(0)});
  Expr extent = call(MathFn::Min, {i64(chunk), sub(i64(n), mul(v("b"), i64(chunk)))});
  Stmt body = for_loop("b", i64(0), i64(blocks), ForKind::GridX,
                       for_loop("t", i64(0), extent, ForKind::Vectorized, store("Y", {i}, value)));
  LoopProgram p = program({{"A", DType::F32, {n}, TensorRole::Input},
                           {"B", DType::F32, {n}, TensorRole::Input},
                           {"Y", DType::F32, {n}, TensorRole::Output}},
                          body, {{"alpha", DType::F32, {}}});
  GeneratedSource src = generate_source(p, host());
  ASSERT_THAT(src.code, ::testing::HasSubstr("ut_v8f32_max(")); // really the vector path
  Module m(p, src, "cc -O3");
  ASSERT_TRUE(m.ok());
  std::vector<float> a = ramp(n, 0.05f, 0.0f), b = ramp(n, 0.3f, -0.1f);
  a[5] = std::nanf(""); // NaN propagates through max
  const float alpha = 1.75f;
  for (const char* threads : kThreadCounts) {
    ScopedEnv env("UNITILE_NUM_THREADS", threads);
    Buffer A(a), B(b), Y{std::vector<float>(n, -7.0f)};
    ASSERT_EQ(m.run({A.arg(), B.arg(), Y.arg(), f64_arg(alpha)}), UT_OK);
    std::vector<float> y = Y.read<float>();
    for (int64_t k = 0; k < n; ++k) {
      float r = a[k] * alpha + b[k];
      float want = std::isnan(r) ? r : (r > 0 ? r : 0);
      if (std::isnan(want))
        ASSERT_TRUE(std::isnan(y[k])) << k;
      else
        ASSERT_FLOAT_EQ(y[k], want) << "element " << k << ", threads " << threads;
    }
  }
}

TEST(CpuEndToEnd, IntegerDivisionModuloAndCastsFollowTheReference) {
  ASSERT_NE(cpu_api(), nullptr);
  // For i in [0, 40): x = i - 20 and d = D[i] (either sign):
  // Q = x // d, R = x % d, T = x / d (truncating), F = i32(X[i]) (saturating, NaN -> 0)
  const int64_t n = 40;
  Expr x = sub(v("i"), i64(20));
  Expr d = ld("D", {v("i")}, DType::I64);
  Stmt body = for_loop("i", i64(0), i64(n), ForKind::Serial,
                       block({store("Q", {v("i")}, binary(BinaryOp::FloorDiv, x, d)),
                              store("R", {v("i")}, binary(BinaryOp::Mod, x, d)),
                              store("T", {v("i")}, binary(BinaryOp::Div, x, d)),
                              store("F", {v("i")}, cast(DType::I32, ld("X", {v("i")})))}));
  LoopProgram p = program({{"D", DType::I64, {n}, TensorRole::Input},
                           {"X", DType::F32, {n}, TensorRole::Input},
                           {"Q", DType::I64, {n}, TensorRole::Output},
                           {"R", DType::I64, {n}, TensorRole::Output},
                           {"T", DType::I64, {n}, TensorRole::Output},
                           {"F", DType::I32, {n}, TensorRole::Output}},
                          body);
  Module m(p, generate_source(p, host()));
  ASSERT_TRUE(m.ok());
  std::vector<int64_t> dv(n);
  std::vector<float> xv(n);
  for (int64_t k = 0; k < n; ++k) {
    dv[k] = (k % 7 + 1) * (k % 2 ? -1 : 1);
    xv[k] = static_cast<float>(k - 20) * 1.7f;
  }
  xv[0] = std::nanf("");
  xv[1] = 1e20f;
  xv[2] = -1e20f;
  std::vector<int64_t> zeros(n, 0);
  Buffer D(dv), X(xv), Q(zeros), R(zeros), T(zeros), F{std::vector<int32_t>(n)};
  ASSERT_EQ(m.run({D.arg(), X.arg(), Q.arg(), R.arg(), T.arg(), F.arg()}), UT_OK);
  std::vector<int64_t> q = Q.read<int64_t>(), r = R.read<int64_t>(), t = T.read<int64_t>();
  std::vector<int32_t> f = F.read<int32_t>();
  for (int64_t k = 0; k < n; ++k) {
    int64_t a = k - 20;
    EXPECT_EQ(q[k], sim::floor_div(a, dv[k])) << a << " // " << dv[k];
    EXPECT_EQ(r[k], sim::floor_mod(a, dv[k])) << a << " % " << dv[k];
    EXPECT_EQ(t[k], sim::trunc_div(a, dv[k])) << a << " / " << dv[k];
    EXPECT_EQ(f[k], static_cast<int32_t>(sim::float_to_int(xv[k]))) << xv[k];
  }
}

} // namespace
} // namespace unitile::cpu_test
