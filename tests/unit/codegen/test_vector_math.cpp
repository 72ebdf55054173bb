// The lane-wise f32 math helpers (VectorMath.cpp, and exp, sigmoid, min and max from
// CHelpers.cpp) compiled by the host compiler and run
// against glibc's double-precision functions, special values included.
#include "codegen/CDialect.h"
#include "codegen/CHelpers.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <unistd.h>

namespace unitile::codegen {
namespace {

// The C test program: every helper on sweeps of its domain (linear and log-spaced, both
// signs, beyond the 8192 limit of the trigonometric reduction) and on +-0, +-inf, NaN,
// 1, -1 and a subnormal. It prints one line per function that misses: error above
// `ulps` units in the last place of the correctly rounded float, or a special value
// that differs from libm's (NaN for NaN, sign of zero and of infinity included).
constexpr std::string_view kCheck = R"C(
#include <stdio.h>
typedef ut_v8f32 (*vfn)(ut_v8f32);
static double ulp_error(float got, double want) {
  if (isnan(want)) return isnan(got) ? 0 : 1e30;
  float w = (float)want;
  if (isinf(w)) return got == w ? 0 : 1e30;
  if (isinf(got) || isnan(got)) return 1e30;
  double u = fabs(nextafterf(w, INFINITY) - (double)w);
  if (w == 0 || fabs(w) < 1.17549435e-38) u = 1.4e-45;
  return fabs(got - want) / u;
}
static int same_special(float got, float want) {
  if (isnan(want)) return isnan(got);
  if (want == 0 || isinf(want)) return got == want && signbit(got) == signbit(want);
  return fabsf(got - want) <= 4e-7f * fabsf(want);
}
static int check(const char* name, vfn f, double (*ref)(double), float (*ref_f)(float), double lo,
                 double hi, double ulps) {
  int bad = 0;
  for (int k = 0; k < 200000; k += 8) {
    ut_v8f32 x;
    for (int l = 0; l < 8; ++l) {
      double t = (k + l) / 200000.0;
      x[l] = (k / 8) % 2 ? (float)(lo + (hi - lo) * t)
                         : (float)((l % 2 ? -1 : 1) * 1e-30 * pow(fmax(fabs(lo), fabs(hi)) / 1e-30, t));
    }
    ut_v8f32 y = f(x);
    for (int l = 0; l < 8; ++l)
      if (ulp_error(y[l], ref(x[l])) > ulps && !bad++)
        printf("%s(%.9g) = %.9g, libm %.9g\n", name, x[l], y[l], ref(x[l]));
  }
  const float special[8] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1.0f, -1.0f, 1e-40f};
  ut_v8f32 x;
  for (int l = 0; l < 8; ++l) x[l] = special[l];
  ut_v8f32 y = f(x);
  for (int l = 0; l < 8; ++l)
    if (!same_special(y[l], ref_f(special[l])) && !bad++)
      printf("%s(%g) = %g, libm %g\n", name, special[l], y[l], ref_f(special[l]));
  return bad;
}
static double exp2_d(double x) { return exp2(x); }
static double sigmoid_d(double x) { return 1.0 / (1.0 + exp(-x)); }
static float sigmoid_f(float x) { return (float)sigmoid_d(x); }
static float exp2_f(float x) { return exp2f(x); }
static ut_v8f32 atan2_y1(ut_v8f32 x) { return ut_v8f32_atan2(ut_v8f32_splat(1.0f), x); }
static double atan2_y1_d(double x) { return atan2(1.0, x); }
static float atan2_y1_f(float x) { return atan2f(1.0f, x); }
static ut_v8f32 atan2_x1(ut_v8f32 y) { return ut_v8f32_atan2(y, ut_v8f32_splat(-1.0f)); }
static double atan2_x1_d(double y) { return atan2(y, -1.0); }
static float atan2_x1_f(float y) { return atan2f(y, -1.0f); }
int main(void) {
  int bad = 0;
#define CHECK(fn, lo, hi, ulps) bad += check(#fn, ut_v8f32_##fn, fn, fn##f, lo, hi, ulps)
  CHECK(log, 1e-45, 3e38, 2); CHECK(log2, 1e-45, 3e38, 2); CHECK(log1p, -1, 1e30, 3);
  CHECK(expm1, -100, 88, 3); CHECK(sin, -1e5, 1e5, 4); CHECK(cos, -1e5, 1e5, 4);
  CHECK(tan, -1e5, 1e5, 5); CHECK(asin, -1, 1, 3); CHECK(acos, -1, 1, 3);
  CHECK(atan, -1e30, 1e30, 3); CHECK(sinh, -89, 89, 4); CHECK(cosh, -89, 89, 4);
  CHECK(asinh, -1e30, 1e30, 4); CHECK(acosh, 1, 1e30, 3); CHECK(atanh, -1, 1, 3);
  bad += check("exp2", ut_v8f32_exp2, exp2_d, exp2_f, -151, 129, 2);
  bad += check("exp", ut_v8f32_exp, exp, expf, -115, 90, 2);
  bad += check("sigmoid", ut_v8f32_sigmoid, sigmoid_d, sigmoid_f, -80, 80, 3);
  // tanh and erf: rational approximations with relative error below 4.4e-7, which is
  // 5 and 7.5 ulps next to +-1 (where an ulp is 6e-8).
  CHECK(tanh, -20, 20, 6); CHECK(erf, -10, 10, 8);
  // min and max: NaN from either side, otherwise the comparison's pick (max(+0, -0) is b).
  const float mv[5] = {1.0f, -2.0f, NAN, 0.0f, -0.0f};
  for (int a = 0; a < 5; ++a)
    for (int b = 0; b < 5; ++b) {
      float x = mv[a], y = mv[b];
      float mx = ut_v8f32_max(ut_v8f32_splat(x), ut_v8f32_splat(y))[3];
      float mn = ut_v8f32_min(ut_v8f32_splat(x), ut_v8f32_splat(y))[3];
      float want_mx = (x != x || y != y) ? NAN : (x > y ? x : y), want_mn = (x != x || y != y) ? NAN : (x < y ? x : y);
      if ((isnan(want_mx) ? !isnan(mx) : (mx != want_mx || signbit(mx) != signbit(want_mx))) ||
          (isnan(want_mn) ? !isnan(mn) : (mn != want_mn || signbit(mn) != signbit(want_mn))))
        if (!bad++) printf("max/min(%g, %g) = %g / %g\n", x, y, mx, mn);
    }
  bad += check("atan2(1, x)", atan2_y1, atan2_y1_d, atan2_y1_f, -1e30, 1e30, 4);
  bad += check("atan2(y, -1)", atan2_x1, atan2_x1_d, atan2_x1_f, -1e30, 1e30, 4);
  const float v[6] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 2.0f};
  for (int a = 0; a < 6; ++a)
    for (int b = 0; b < 6; ++b) {
      float got = ut_v8f32_atan2(ut_v8f32_splat(v[a]), ut_v8f32_splat(v[b]))[0];
      if (!same_special(got, atan2f(v[a], v[b])) && !bad++)
        printf("atan2(%g, %g) = %g, libm %g\n", v[a], v[b], got, atan2f(v[a], v[b]));
    }
  return bad != 0;
}
)C";

// Builds and runs `code` with the host compiler as the cpu plugin would (-O3
// -march=native -fno-math-errno); returns what the program printed, or the compiler's
// errors.
std::string run_c(const std::string& code) {
  char dir[] = "/tmp/unitile-vector-math-XXXXXX";
  if (!mkdtemp(dir))
    return "mkdtemp failed";
  const std::string d(dir), src = d + "/t.c", exe = d + "/t", log = d + "/log.txt";
  std::ofstream(src) << code;
  const std::string cmd = "cc -std=gnu11 -O3 -march=native -fno-math-errno -Wall -Werror -o " + exe +
                          " " + src + " -lm > " + log + " 2>&1 && " + exe + " >> " + log + " 2>&1";
  const int rc = std::system(cmd.c_str());
  std::ifstream in(log);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const std::string& f : {src, exe, log})
    std::remove(f.c_str());
  rmdir(dir);
  return rc == 0 ? "" : "exit " + std::to_string(rc) + ": " + text;
}

TEST(VectorMath, HelpersMatchLibmWithinAFewUlps) {
  CHelperSet h;
  for (MathFn fn : {MathFn::Log, MathFn::Log2, MathFn::Log1p, MathFn::Expm1, MathFn::Exp2,
                    MathFn::Sin, MathFn::Cos, MathFn::Tan, MathFn::Asin, MathFn::Acos,
                    MathFn::Atan, MathFn::Atan2, MathFn::Sinh, MathFn::Cosh, MathFn::Asinh,
                    MathFn::Acosh, MathFn::Atanh})
    h.need_lane_math(DType::F32, 8, fn);
  const std::string code = "#include <math.h>\n#include <stdint.h>\n#include <string.h>\n" +
                           h.text(c_dialect()) + std::string(kCheck);
  EXPECT_EQ(run_c(code), "");
}

// exp's table lookup differs by width (one permutation for 8 and 16 lanes, a
// two-vector shuffle for 4, blends for 2): every width gives the 8-lane helper's bits,
// on the fast path and on the wide one, which test_vector_math checks against libm.
TEST(VectorMath, ExpGivesTheSameBitsAtEveryWidth) {
  CHelperSet h;
  for (int lanes : {2, 4, 8, 16})
    h.need_vector(DType::F32, lanes);
  const std::string code =
      std::string(
          "#include <math.h>\n#include <stdint.h>\n#include <stdio.h>\n#include <string.h>\n") +
      "#pragma GCC diagnostic ignored \"-Wpsabi\"\n" + h.text(c_dialect()) + R"C(
int main(void) {
  int bad = 0;
  for (int k = 0; k < 400000; k += 16) {
    float x[16];
    for (int l = 0; l < 16; ++l) x[l] = -115.0f + 205.0f * (float)(k + l) / 400000.0f;
    ut_v8f32 a = ut_v8f32_exp(ut_v8f32_load(x)), b = ut_v8f32_exp(ut_v8f32_load(x + 8));
    ut_v16f32 w = ut_v16f32_exp(ut_v16f32_load(x));
    for (int l = 0; l < 16; l += 4) {
      ut_v4f32 q = ut_v4f32_exp(ut_v4f32_load(x + l));
      ut_v2f32 d = ut_v2f32_exp(ut_v2f32_load(x + l)), e = ut_v2f32_exp(ut_v2f32_load(x + l + 2));
      for (int i = 0; i < 4; ++i) {
        float want = l + i < 8 ? a[l + i] : b[l + i - 8];
        float got[3] = {q[i], w[l + i], i < 2 ? d[i] : e[i - 2]};
        for (int g = 0; g < 3; ++g)
          if (memcmp(&got[g], &want, 4) != 0 && !bad++) printf("exp(%.9g): %.9g against %.9g\n", x[l + i], got[g], want);
      }
    }
  }
  return bad != 0;
}
)C";
  EXPECT_EQ(run_c(code), "");
}

// tanh and erf clamp their argument (and erf its result) with minps/maxps on x86 and
// with blends elsewhere: every width gives the 8-lane helper's bits (checked against
// libm above) across the clamp bounds, at the bounds and for +-inf; NaN stays NaN.
TEST(VectorMath, ClampedFunctionsGiveTheSameBitsAtEveryWidth) {
  CHelperSet h;
  for (int lanes : {2, 4, 8, 16})
    h.need_vector(DType::F32, lanes);
  const std::string code =
      std::string(
          "#include <math.h>\n#include <stdint.h>\n#include <stdio.h>\n#include <string.h>\n") +
      "#pragma GCC diagnostic ignored \"-Wpsabi\"\n" + h.text(c_dialect()) + R"C(
#define SAME_AT_EVERY_WIDTH(fn)                                                                       \
  {                                                                                              \
    ut_v8f32 a = ut_v8f32_##fn(ut_v8f32_load(x)), b = ut_v8f32_##fn(ut_v8f32_load(x + 8));       \
    ut_v16f32 w = ut_v16f32_##fn(ut_v16f32_load(x));                                             \
    for (int l = 0; l < 16; l += 4) {                                                            \
      ut_v4f32 q = ut_v4f32_##fn(ut_v4f32_load(x + l));                                          \
      ut_v2f32 d = ut_v2f32_##fn(ut_v2f32_load(x + l)), e = ut_v2f32_##fn(ut_v2f32_load(x + l + 2)); \
      for (int i = 0; i < 4; ++i) {                                                              \
        float want = l + i < 8 ? a[l + i] : b[l + i - 8];                                        \
        float got[3] = {q[i], w[l + i], i < 2 ? d[i] : e[i - 2]};                                \
        for (int g = 0; g < 3; ++g)                                                              \
          if ((isnan(want) ? !isnan(got[g]) : memcmp(&got[g], &want, 4) != 0) && !bad++)         \
            printf(#fn "(%.9g): %.9g against %.9g\n", x[l + i], got[g], want);                   \
        if (isnan(x[l + i]) && !isnan(want) && !bad++) printf(#fn "(nan) = %.9g\n", want);        \
      }                                                                                          \
    }                                                                                            \
  }
int main(void) {
  int bad = 0;
  const float special[16] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 4.0f, -4.0f, 7.90531110763549805f,
                             -7.90531110763549805f, 4.0000005f, -3.9999998f, 8.0f, -1e30f, 1e-40f, -NAN, 1.0f};
  float x[16];
  memcpy(x, special, sizeof x);
  SAME_AT_EVERY_WIDTH(tanh) SAME_AT_EVERY_WIDTH(erf)
  for (int k = 0; k < 200000; k += 16) {
    for (int l = 0; l < 16; ++l) x[l] = -12.0f + 24.0f * (float)(k + l) / 200000.0f;
    SAME_AT_EVERY_WIDTH(tanh) SAME_AT_EVERY_WIDTH(erf)
  }
  return bad != 0;
}
)C";
  EXPECT_EQ(run_c(code), "");
}

} // namespace
} // namespace unitile::codegen
