// The sim device plugin, loaded with dlopen as the runtime loads it, running hand-written
// Loop IR: results, the reference semantics, bounds errors, compile errors, speed.
#include "unitile/device.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

const ut_device_api* sim() {
  static const ut_device_api* api = [] {
    std::string path = std::string(UNITILE_PLUGIN_DIR) + "/libunitile-device-sim.so";
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) throw std::runtime_error(std::string("dlopen failed: ") + dlerror());
    auto fn = reinterpret_cast<ut_device_plugin_fn>(dlsym(lib, UT_DEVICE_PLUGIN_SYMBOL));
    if (!fn) throw std::runtime_error("no unitile_device_plugin symbol");
    return fn();
  }();
  return api;
}

// A device buffer that frees itself.
struct Buffer {
  ut_buffer* b = nullptr;
  size_t bytes = 0;
  explicit Buffer(size_t n) : bytes(n) {
    ut_error err;
    EXPECT_EQ(sim()->alloc(n, &b, &err), UT_OK) << err.message;
  }
  template <class T> explicit Buffer(const std::vector<T>& host) : Buffer(host.size() * sizeof(T)) {
    ut_error err;
    EXPECT_EQ(sim()->copy_in(b, 0, host.data(), bytes, &err), UT_OK) << err.message;
  }
  ~Buffer() { sim()->free(b); }
  Buffer(const Buffer&) = delete;
  template <class T> std::vector<T> read() const {
    std::vector<T> out(bytes / sizeof(T));
    ut_error err;
    EXPECT_EQ(sim()->copy_out(out.data(), b, 0, bytes, &err), UT_OK) << err.message;
    return out;
  }
};

// Compile and load `entry` of `text`; null (with a test failure) on error.
ut_kernel* load(const std::string& text, const char* entry) {
  ut_error err;
  ut_binary* bin = nullptr;
  const void* data = nullptr;
  size_t size = 0;
  ut_status st = sim()->compile(text.c_str(), "", &bin, &data, &size, &err);
  EXPECT_EQ(st, UT_OK) << err.message;
  if (st != UT_OK) return nullptr;
  ut_kernel* k = nullptr;
  st = sim()->load(data, size, entry, &k, &err);
  sim()->release(UT_RELEASE_BINARY, bin);
  EXPECT_EQ(st, UT_OK) << err.message;
  return st == UT_OK ? k : nullptr;
}

ut_arg buf(const Buffer& b) {
  ut_arg a{};
  a.kind = UT_ARG_BUFFER;
  a.value.buffer = b.b;
  return a;
}
ut_arg i64(int64_t v) {
  ut_arg a{};
  a.kind = UT_ARG_I64;
  a.dtype = 7;
  a.value.i64 = v;
  return a;
}
ut_arg f64(double v) {
  ut_arg a{};
  a.kind = UT_ARG_F64;
  a.dtype = 2;
  a.value.f64 = v;
  return a;
}

// Launch without grid/block (the sim takes them from the loops); returns the status.
ut_status launch(ut_kernel* k, const std::vector<ut_arg>& args, std::string* message = nullptr) {
  ut_error err;
  err.message[0] = '\0';
  ut_status st = sim()->launch(k, nullptr, nullptr, args.data(), static_cast<uint32_t>(args.size()), &err);
  if (message) *message = err.message;
  return st;
}

struct KernelHandle {
  ut_kernel* k;
  explicit KernelHandle(ut_kernel* kk) : k(kk) {}
  ~KernelHandle() { sim()->release(UT_RELEASE_KERNEL, k); }
};

std::string matmul_text(int M, int N, int K, int k_loop) {
  return "program MatrixMul {\n"
         "  buffer A: f32[" + std::to_string(M) + ", " + std::to_string(K) + "] input\n"
         "  buffer B: f32[" + std::to_string(K) + ", " + std::to_string(N) + "] input\n"
         "  buffer C: f32[" + std::to_string(M) + ", " + std::to_string(N) + "] output\n"
         "  func MatrixMul_0 {\n"
         "    for i in 0.." + std::to_string(M) + " grid.x {\n"
         "      for j in 0.." + std::to_string(N) + " vectorized {\n"
         "        C[i, j] = 0.0\n"
         "      }\n"
         "      for k in 0.." + std::to_string(k_loop) + " {\n"
         "        for j in 0.." + std::to_string(N) + " vectorized {\n"
         "          C[i, j] = C[i, j] + A[i, k] * B[k, j]\n"
         "        }\n"
         "      }\n"
         "    }\n"
         "  }\n"
         "}\n";
}

} // namespace

TEST(SimDevice, DescribesItself) {
  ASSERT_EQ(sim()->abi_version, UT_DEVICE_ABI_VERSION);
  ut_device_info info{};
  ut_error err;
  ASSERT_EQ(sim()->describe(&info, &err), UT_OK);
  EXPECT_STREQ(info.name, "sim");
  EXPECT_STREQ(info.hcd_builtin, "sim");
  EXPECT_EQ(info.hcd_toml, nullptr);
  EXPECT_STREQ(info.toolchain_version, "sim-1");
}

TEST(SimDevice, MatmulMatchesTheReferenceAndIsFast) {
  const int n = 128;
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> small(-8, 8);
  std::vector<float> a(n * n), b(n * n);
  for (auto& x : a) x = static_cast<float>(small(rng)) / 4;
  for (auto& x : b) x = static_cast<float>(small(rng)) / 4;
  Buffer A(a), B(b), C(size_t(n) * n * sizeof(float));
  KernelHandle k(load(matmul_text(n, n, n, n), "MatrixMul_0"));
  ASSERT_NE(k.k, nullptr);
  uint32_t grid[3] = {n, 1, 1}, block[3] = {1, 1, 1};
  std::vector<ut_arg> args = {buf(A), buf(B), buf(C)};
  ut_error err;
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(sim()->launch(k.k, grid, block, args.data(), 3, &err), UT_OK) << err.message;
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::vector<float> c = C.read<float>();
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      double ref = 0;
      for (int kk = 0; kk < n; ++kk) ref += double(a[i * n + kk]) * b[kk * n + j];
      ASSERT_EQ(c[i * n + j], static_cast<float>(ref)) << i << "," << j;
    }
  // 2M multiply-adds with ~15 nodes each: far below a second at the target speed.
  EXPECT_LT(seconds, 1.0) << "128^3 matmul took " << seconds << " s";
  RecordProperty("matmul128_seconds", std::to_string(seconds));
}

TEST(SimDevice, RegisterAccumulatorKeepsDoublePrecision) {
  // 1e8 + 1000 * 1.0: an f32 accumulator stays at 1e8, a double one reaches 100001000
  // (which f32 represents exactly, so the final rounding keeps it).
  const char* text = R"(program RowSum {
  buffer X: f32[2, 1001] input
  buffer S: f32[2] output
  func RowSum_0 {
    for i in 0..2 grid.x {
      allocate acc: f32[1] register {
        acc[0] = 0.0
        for k in 0..1001 {
          acc[0] = acc[0] + X[i, k]
        }
        S[i] = acc[0]
      }
    }
  }
}
)";
  std::vector<float> x(2 * 1001, 1.0f);
  x[0] = 1e8f;
  x[1001] = -3.0f;
  Buffer X(x), S(2 * sizeof(float));
  KernelHandle k(load(text, "RowSum_0"));
  ASSERT_NE(k.k, nullptr);
  ASSERT_EQ(launch(k.k, {buf(X), buf(S)}), UT_OK);
  std::vector<float> s = S.read<float>();
  EXPECT_EQ(s[0], 100001000.0f);
  EXPECT_EQ(s[1], 997.0f);
}

TEST(SimDevice, GuardedReadsGiveTheirDefault) {
  const char* text = R"(program Blur {
  buffer X: f32[5] input
  buffer Y: f32[5] output
  func Blur_0 {
    for i in 0..5 {
      Y[i] = (X[i - 1] ?? -100.0) + X[i] + (X[i + 1] ?? 0.5)
    }
  }
}
)";
  Buffer X(std::vector<float>{1, 2, 3, 4, 5}), Y(5 * sizeof(float));
  KernelHandle k(load(text, "Blur_0"));
  ASSERT_NE(k.k, nullptr);
  ASSERT_EQ(launch(k.k, {buf(X), buf(Y)}), UT_OK);
  EXPECT_EQ(Y.read<float>(), (std::vector<float>{-97, 6, 9, 12, 9.5}));
}

TEST(SimDevice, HalfAndBfloatStoresRoundToNearestEven) {
  const char* text = R"(program Narrow {
  buffer X: f64[10] input
  buffer H: f16[10] output
  buffer B: bf16[10] output
  buffer R: f64[10] output
  func store {
    for i in 0..10 {
      H[i] = X[i]
      B[i] = X[i]
    }
  }
  func readback {
    for i in 0..10 {
      R[i] = H[i] + B[i]
    }
  }
}
)";
  double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> x = {1.0 / 3,          65519.0,       65520.0,       std::ldexp(1.0, -24),
                           std::ldexp(1.0, -25), 3 * std::ldexp(1.0, -25), -0.0, nan,
                           1.0 + std::ldexp(1.0, -8), 1.0 + 3 * std::ldexp(1.0, -8)};
  Buffer X(x), H(10 * 2), B(10 * 2), R(10 * 8);
  KernelHandle st(load(text, "store")), rb(load(text, "readback"));
  ASSERT_NE(st.k, nullptr);
  ASSERT_NE(rb.k, nullptr);
  ASSERT_EQ(launch(st.k, {buf(X), buf(H), buf(B), buf(R)}), UT_OK);
  std::vector<uint16_t> h = H.read<uint16_t>(), b = B.read<uint16_t>();
  // f16: 1/3, largest finite, overflow to inf, smallest subnormal, a tie to even (0),
  // a tie to even (2 units), -0, NaN, and two values exact in f16.
  std::vector<uint16_t> want_h = {0x3555, 0x7bff, 0x7c00, 0x0001, 0x0000, 0x0002, 0x8000, 0, 0x3c04, 0x3c0c};
  for (size_t i = 0; i < h.size(); ++i) {
    if (i == 7) {
      EXPECT_EQ(h[i] & 0x7c00, 0x7c00);
      EXPECT_NE(h[i] & 0x03ff, 0);
      continue;
    }
    EXPECT_EQ(h[i], want_h[i]) << "f16 element " << i;
  }
  // bf16: 1/3, 65519 and 65520 round to 65536, tiny values stay normal in bf16, -0,
  // NaN, 1 + 2^-8 is a tie that goes to the even 1.0, 1 + 3 * 2^-8 ties up to 1 + 2^-6.
  std::vector<uint16_t> want_b = {0x3eab, 0x4780, 0x4780, 0x3380, 0x3300, 0x33c0, 0x8000, 0, 0x3f80, 0x3f82};
  for (size_t i = 0; i < b.size(); ++i) {
    if (i == 7) {
      EXPECT_EQ(b[i] & 0x7f80, 0x7f80);
      EXPECT_NE(b[i] & 0x007f, 0);
      continue;
    }
    EXPECT_EQ(b[i], want_b[i]) << "bf16 element " << i;
  }
  ASSERT_EQ(launch(rb.k, {buf(X), buf(H), buf(B), buf(R)}), UT_OK);
  std::vector<double> r = R.read<double>();
  EXPECT_EQ(r[1], 65504.0 + 65536.0);
  EXPECT_EQ(r[3], std::ldexp(1.0, -24) * 2);
  EXPECT_TRUE(std::isinf(r[2]));
  EXPECT_TRUE(std::isnan(r[7]));
}

TEST(SimDevice, IntegerSemantics) {
  const char* text = R"(program Ints {
  buffer A: i64[4] input
  buffer B: i64[4] input
  buffer F: f32[4] input
  buffer Q: i64[4] output
  buffer M: i64[4] output
  buffer D: i64[4] output
  buffer W: i8[4] output
  buffer U: u8[4] output
  buffer T: i32[4] output
  func Ints_0 {
    for i in 0..4 {
      Q[i] = A[i] // B[i]
      M[i] = A[i] % B[i]
      D[i] = A[i] / B[i]
      W[i] = A[i] * 40
      U[i] = A[i] - 8
      T[i] = i32(F[i])
    }
  }
}
)";
  Buffer A(std::vector<int64_t>{-7, 7, -7, 7}), B(std::vector<int64_t>{2, 2, -2, -2});
  Buffer F(std::vector<float>{-2.7f, 2.7f, -0.5f, 1e10f});
  Buffer Q(32), M(32), D(32), W(4), U(4), T(16);
  KernelHandle k(load(text, "Ints_0"));
  ASSERT_NE(k.k, nullptr);
  ASSERT_EQ(launch(k.k, {buf(A), buf(B), buf(F), buf(Q), buf(M), buf(D), buf(W), buf(U), buf(T)}), UT_OK);
  EXPECT_EQ(Q.read<int64_t>(), (std::vector<int64_t>{-4, 3, 3, -4}));  // floor
  EXPECT_EQ(M.read<int64_t>(), (std::vector<int64_t>{1, 1, -1, -1}));  // sign of the divisor
  EXPECT_EQ(D.read<int64_t>(), (std::vector<int64_t>{-3, 3, 3, -3}));  // toward zero
  EXPECT_EQ(W.read<int8_t>(), (std::vector<int8_t>{-24, 24, -24, 24})); // -280, 280 wrap
  EXPECT_EQ(U.read<uint8_t>(), (std::vector<uint8_t>{241, 255, 241, 255}));
  // Truncation toward zero; 1e10 converts exactly and then wraps to i32.
  EXPECT_EQ(T.read<int32_t>(), (std::vector<int32_t>{-2, 2, 0, static_cast<int32_t>(10000000000LL)}));
}

TEST(SimDevice, IntegerDivisionByZeroIsALaunchError) {
  const char* text = R"(program Div {
  buffer A: i64[2] input
  buffer O: i64[2] output
  func Div_0 {
    for i in 0..2 {
      O[i] = 10 // A[i]
    }
  }
}
)";
  Buffer A(std::vector<int64_t>{5, 0}), O(16);
  KernelHandle k(load(text, "Div_0"));
  ASSERT_NE(k.k, nullptr);
  std::string msg;
  EXPECT_EQ(launch(k.k, {buf(A), buf(O)}, &msg), UT_ERROR_LAUNCH);
  EXPECT_EQ(msg, "sim: kernel 'Div' (func Div_0): integer division by zero in `(10 // A[i])`");
}

TEST(SimDevice, MathAndParams) {
  const char* text = R"(program Math {
  buffer X: f64[4] input
  buffer O: f64[4, 6] output
  param scale: f32
  param shift: i32
  func Math_0 {
    for i in 0..4 {
      O[i, 0] = max(X[i], 0.0f64)
      O[i, 1] = sigmoid(X[i])
      O[i, 2] = round(X[i] * 2.0f64)
      O[i, 3] = sign(X[i]) * scale
      O[i, 4] = f64(isnan(X[i])) + f64(shift)
      O[i, 5] = f32(X[i] / 3.0f64)
    }
  }
}
)";
  double nan = std::numeric_limits<double>::quiet_NaN();
  Buffer X(std::vector<double>{-1.25, 0.25, nan, 1.75}), O(4 * 6 * 8);
  KernelHandle k(load(text, "Math_0"));
  ASSERT_NE(k.k, nullptr);
  // 0.1 arrives as f64 and is narrowed to the declared f32; the i32 param wraps.
  ASSERT_EQ(launch(k.k, {buf(X), buf(O), f64(0.1), i64(4294967296LL + 3)}), UT_OK);
  std::vector<double> o = O.read<double>();
  EXPECT_EQ(o[0 * 6 + 0], 0.0);
  EXPECT_TRUE(std::isnan(o[2 * 6 + 0])); // max propagates NaN
  EXPECT_DOUBLE_EQ(o[1 * 6 + 1], 1.0 / (1.0 + std::exp(-0.25)));
  EXPECT_EQ(o[0 * 6 + 2], -2.0); // -2.5 rounds half to even
  EXPECT_EQ(o[1 * 6 + 2], 0.0);  // 0.5 -> 0
  EXPECT_EQ(o[3 * 6 + 2], 4.0);  // 3.5 -> 4
  EXPECT_EQ(o[0 * 6 + 3], -double(0.1f));
  EXPECT_EQ(o[2 * 6 + 4], 4.0);
  EXPECT_EQ(o[1 * 6 + 4], 3.0);
  EXPECT_EQ(o[3 * 6 + 5], double(float(1.75 / 3.0)));
}

TEST(SimDevice, BarriersSeparateThreadSegments) {
  // Each thread writes its slot of a shared tile, then reads its neighbour's: correct
  // only if every thread finished the first segment before any starts the second.
  const char* text = R"(program Rotate {
  buffer X: f32[2, 4] input
  buffer Y: f32[2, 4] output
  func Rotate_0 {
    for b in 0..2 grid.x {
      allocate tile: f32[4] shared {
        for t in 0..4 thread.x {
          tile[t] = X[b, t]
          barrier
          Y[b, t] = tile[(t + 1) % 4] * 10.0
          barrier
          tile[t] = 0.0
        }
      }
    }
  }
}
)";
  Buffer X(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}), Y(8 * 4);
  KernelHandle k(load(text, "Rotate_0"));
  ASSERT_NE(k.k, nullptr);
  ASSERT_EQ(launch(k.k, {buf(X), buf(Y)}), UT_OK);
  EXPECT_EQ(Y.read<float>(), (std::vector<float>{20, 30, 40, 10, 60, 70, 80, 50}));
}

TEST(SimDevice, LaunchGeometryMustMatchTheLoops) {
  KernelHandle k(load(matmul_text(4, 2, 3, 3), "MatrixMul_0"));
  ASSERT_NE(k.k, nullptr);
  Buffer A(4 * 3 * 4), B(3 * 2 * 4), C(4 * 2 * 4);
  std::vector<ut_arg> args = {buf(A), buf(B), buf(C)};
  uint32_t grid[3] = {4, 1, 1}, block[3] = {1, 1, 1}, wrong[3] = {8, 1, 1};
  ut_error err;
  EXPECT_EQ(sim()->launch(k.k, grid, block, args.data(), 3, &err), UT_OK) << err.message;
  EXPECT_EQ(sim()->launch(k.k, wrong, block, args.data(), 3, &err), UT_ERROR_INVALID);
  EXPECT_NE(std::string(err.message).find("launched with grid (8, 1, 1) block (1, 1, 1) but its loops give "
                                          "grid (4, 1, 1)"),
            std::string::npos)
      << err.message;
}

TEST(SimDevice, ANestedBarrierIsRefusedAtCompileTime) {
  const char* text = R"(program Bad {
  buffer Y: f32[4] output
  func Bad_0 {
    for t in 0..4 thread.x {
      if t > 0 {
        barrier
      }
    }
  }
}
)";
  ut_binary* bin = nullptr;
  const void* data = nullptr;
  size_t size = 0;
  ut_error err;
  EXPECT_EQ(sim()->compile(text, "", &bin, &data, &size, &err), UT_ERROR_COMPILE);
  EXPECT_NE(std::string(err.message).find("not at the top level"), std::string::npos) << err.message;
}

TEST(SimDevice, OutOfRangeReadNamesKernelBufferAndIndex) {
  KernelHandle k(load([] {
    std::string t = matmul_text(4, 2, 32, 33);
    // A gets 33 columns so that B (32 rows) is the access that leaves its buffer.
    t.replace(t.find("f32[4, 32]"), 10, "f32[4, 33]");
    return t;
  }(), "MatrixMul_0"));
  ASSERT_NE(k.k, nullptr);
  Buffer A(std::vector<float>(4 * 33, 1.0f)), B(std::vector<float>(32 * 2, 1.0f)), C(4 * 2 * 4);
  std::string msg;
  EXPECT_EQ(launch(k.k, {buf(A), buf(B), buf(C)}, &msg), UT_ERROR_LAUNCH);
  EXPECT_EQ(msg, "sim: kernel 'MatrixMul' (func MatrixMul_0): out-of-range read B[32, 0]: index 0 is 32 "
                 "but the extent is 32");
}

TEST(SimDevice, OutOfRangeWriteIsALaunchError) {
  const char* text = R"(program W {
  buffer O: f32[3, 3] output
  func W_0 {
    for i in 0..3 {
      O[i, i + 1] = 1.0
    }
  }
}
)";
  Buffer O(9 * 4);
  KernelHandle k(load(text, "W_0"));
  ASSERT_NE(k.k, nullptr);
  std::string msg;
  EXPECT_EQ(launch(k.k, {buf(O)}, &msg), UT_ERROR_LAUNCH);
  EXPECT_EQ(msg, "sim: kernel 'W' (func W_0): out-of-range write O[2, 3]: index 1 is 3 but the extent is 3");
}

TEST(SimDevice, ShapesTooLargeToAddressAreRefused) {
  ut_binary* bin = nullptr;
  const void* data = nullptr;
  size_t size = 0;
  ut_error err;
  const char* text = "program P { buffer O: f32[4294967296, 4294967296] output func f { O[0, 0] = 1.0 } }";
  EXPECT_EQ(sim()->compile(text, "", &bin, &data, &size, &err), UT_ERROR_COMPILE);
  EXPECT_NE(std::string(err.message).find("'O' has more than 2^48 elements"), std::string::npos) << err.message;
}

TEST(SimDevice, MalformedSourceIsACompileErrorWithTheDiagnostic) {
  ut_binary* bin = nullptr;
  const void* data = nullptr;
  size_t size = 0;
  ut_error err;
  const char* text = "program P {\n  buffer O: f32[2] output\n  func f {\n    O[0] = Z[0]\n  }\n}\n";
  EXPECT_EQ(sim()->compile(text, "", &bin, &data, &size, &err), UT_ERROR_COMPILE);
  EXPECT_NE(std::string(err.message).find("<sim source>:4:12: error: unknown buffer 'Z'"), std::string::npos)
      << err.message;
  EXPECT_EQ(sim()->compile("program", "", &bin, &data, &size, &err), UT_ERROR_COMPILE);
}

TEST(SimDevice, TheBinaryIsTheCanonicalTextAndLoadChecksTheEntry) {
  const char* text = "program P { buffer O: f32[2] output func f { for i in 0..2 { O[i] = 1.0 } } }";
  ut_binary* bin = nullptr;
  const void* data = nullptr;
  size_t size = 0;
  ut_error err;
  ASSERT_EQ(sim()->compile(text, "", &bin, &data, &size, &err), UT_OK) << err.message;
  std::string binary(static_cast<const char*>(data), size);
  EXPECT_EQ(binary, "program P {\n  buffer O: f32[2] output\n  func f {\n    for i in 0..2 {\n      O[i] = 1.0\n"
                    "    }\n  }\n}\n");
  ut_kernel* k = nullptr;
  EXPECT_EQ(sim()->load(data, size, "g", &k, &err), UT_ERROR_INVALID);
  EXPECT_NE(std::string(err.message).find("has no func 'g' (it has: f)"), std::string::npos) << err.message;
  sim()->release(UT_RELEASE_BINARY, bin);
}

TEST(SimDevice, ArgumentsAreChecked) {
  KernelHandle k(load("program P { buffer O: f32[4] output param s: f32 func f { O[0] = s } }", "f"));
  ASSERT_NE(k.k, nullptr);
  Buffer small(8), ok(16);
  std::string msg;
  EXPECT_EQ(launch(k.k, {buf(ok)}, &msg), UT_ERROR_INVALID);
  EXPECT_NE(msg.find("expected 2 arguments"), std::string::npos) << msg;
  EXPECT_EQ(launch(k.k, {buf(small), f64(1)}, &msg), UT_ERROR_INVALID);
  EXPECT_NE(msg.find("needs 16 bytes but the one passed has 8"), std::string::npos) << msg;
  EXPECT_EQ(launch(k.k, {f64(1), f64(1)}, &msg), UT_ERROR_INVALID);
  EXPECT_EQ(launch(k.k, {buf(ok), f64(2.5)}), UT_OK);
  EXPECT_EQ(ok.read<float>()[0], 2.5f);
}

TEST(SimDevice, MemoryCopiesAndTimer) {
  Buffer a(std::vector<int32_t>{1, 2, 3, 4}), b(16);
  ut_error err;
  EXPECT_EQ(sim()->copy(b.b, 8, a.b, 0, 8, &err), UT_OK);
  EXPECT_EQ(sim()->copy(b.b, 0, a.b, 8, 8, &err), UT_OK);
  EXPECT_EQ(b.read<int32_t>(), (std::vector<int32_t>{3, 4, 1, 2}));
  EXPECT_EQ(sim()->copy(b.b, 12, a.b, 0, 8, &err), UT_ERROR_INVALID);
  int32_t x = 0;
  EXPECT_EQ(sim()->copy_out(&x, a.b, 16, 4, &err), UT_ERROR_INVALID);
  ut_event *start = nullptr, *stop = nullptr;
  ASSERT_EQ(sim()->timer(UT_TIMER_RECORD, &start, nullptr, nullptr, &err), UT_OK);
  ASSERT_EQ(sim()->timer(UT_TIMER_RECORD, &stop, nullptr, nullptr, &err), UT_OK);
  double ms = -1;
  ASSERT_EQ(sim()->timer(UT_TIMER_ELAPSED, &stop, start, &ms, &err), UT_OK);
  EXPECT_GE(ms, 0.0);
  EXPECT_EQ(sim()->synchronize(&err), UT_OK);
  sim()->release(UT_RELEASE_EVENT, start);
  sim()->release(UT_RELEASE_EVENT, stop);
}
