// Texts of the lane-wise f32 math helpers (see VectorMath.h).
//
// GCC syntax: `$V` is the vector type (ut_v8f32), `$M` its integer mask type (ut_v8i32,
// what a comparison of two $V gives), `$N` the lane count. The algorithms and
// coefficients are Cephes' single-precision ones (logf, sinf, tanf, asinf, atanf,
// asinhf, acoshf, atanhf, sinhf, exp2f), rewritten without branches: every lane computes
// each case and a blend picks one. Special values (NaN, +-inf, +-0, out-of-domain) give
// what C's libm gives. sin/cos/tan reduce by pi/4 in three parts, exact for |x| up to
// 8192; a vector with a larger (or non-finite) lane calls libm for those lanes.
#include "codegen/VectorMath.h"

#include "ir/Diagnostic.h"

#include <fmt/core.h>

#include <functional>
#include <map>
#include <vector>

namespace unitile::codegen {

namespace {

struct LaneHelper {
  std::vector<std::string> deps;
  std::string_view text;
};

// |x|, copysign, sqrt (GCC turns the lane loop into one vsqrtps) and libm per lane for
// the lanes `m` selects (the rare fallback of sin/cos/tan).
constexpr std::string_view kAbs =
    "static inline $V $V_abs($V x) { return ($V)(($M)x & 0x7fffffff); }\n";
constexpr std::string_view kCopysign =
    "static inline $V $V_copysign($V x, $V s) {\n"
    "  return ($V)((($M)x & 0x7fffffff) | (($M)s & ~0x7fffffff));\n"
    "}\n";
// y with its sign flipped where s's sign bit is set (-0 included, as sin(-0) = -0).
constexpr std::string_view kXorsign =
    "static inline $V $V_xorsign($V y, $V s) { return ($V)(($M)y ^ (($M)s & ~0x7fffffff)); }\n";
constexpr std::string_view kSqrt = "static inline $V $V_sqrt($V x) {\n"
                                   "  $V r;\n"
                                   "  for (int l = 0; l < $N; ++l) r[l] = __builtin_sqrtf(x[l]);\n"
                                   "  return r;\n"
                                   "}\n";

// Rounding. nearbyint per lane is one vroundps on x86 (GCC vectorises the lane loop of
// nearbyintf, which raises no inexact flag, but not those of floorf/ceilf/truncf); floor,
// ceil and trunc correct its result by one where it went the wrong way, which is exact
// (|x| >= 2^23 is already whole, and NaN, +-inf and +-0 pass through unchanged); ceil
// and trunc then take x's sign, as -0.6 goes to -0, not to -1 + 1 = +0. sign:
// 1, -1, 0 for +-0 and NaN for NaN, as the scalar ut_sign_f32.
constexpr std::string_view kRound = "static inline $V $V_round($V x) {\n"
                                    "  $V r;\n"
                                    "  for (int l = 0; l < $N; ++l) r[l] = __builtin_nearbyintf(x[l]);\n"
                                    "  return r;\n"
                                    "}\n";
constexpr std::string_view kFloor =
    "static inline $V $V_floor($V x) { $V t = $V_round(x); return $V_blend(t > x, t - 1.0f, t); }\n";
constexpr std::string_view kCeil = "static inline $V $V_ceil($V x) {\n"
                                   "  $V t = $V_round(x);\n"
                                   "  return $V_copysign($V_blend(t < x, t + 1.0f, t), x);\n"
                                   "}\n";
constexpr std::string_view kTrunc = R"(static inline $V $V_trunc($V x) {
  $V t = $V_round(x);
  t = $V_blend((x >= 0.0f) & (t > x), t - 1.0f, t);
  return $V_copysign($V_blend((x < 0.0f) & (t < x), t + 1.0f, t), x);
}
)";
constexpr std::string_view kSign = R"(static inline $V $V_sign($V x) {
  $V r = $V_blend(x == 0.0f, $V_splat(0.0f), x);
  r = $V_blend(x < 0.0f, $V_splat(-1.0f), r);
  return $V_blend(x > 0.0f, $V_splat(1.0f), r);
}
)";

// log: x = 2^e m with m in [sqrt(1/2), sqrt(2)) (subnormals scaled by 2^23 first);
// log(1 + f) = f - f^2/2 + f^3 P(f); e ln2 added in two parts.
constexpr std::string_view kLogParts = R"(static inline $V $V_log_parts($V x, $V* fe, $V* tail) {
  $M sub = x < 1.17549435e-38f;
  $V s = $V_blend(sub, x * 8388608.0f, x);
  $M i = ($M)s;
  $M e = ((i >> 23) & 0xff) - 126 - (sub & 23);
  $V m = ($V)((i & 0x007fffff) | 0x3f000000);
  $M small = m < 0.707106781186547524f;
  e = e + small;
  m = $V_blend(small, m + m, m) - 1.0f;
  $V z = m * m;
  $V y = m * 7.0376836292e-2f - 1.1514610310e-1f;
  y = y * m + 1.1676998740e-1f;
  y = y * m - 1.2420140846e-1f;
  y = y * m + 1.4249322787e-1f;
  y = y * m - 1.6668057665e-1f;
  y = y * m + 2.0000714765e-1f;
  y = y * m - 2.4999993993e-1f;
  y = y * m + 3.3333331174e-1f;
  *tail = y * m * z - 0.5f * z;
  *fe = __builtin_convertvector(e, $V);
  return m;
}
static inline $V $V_log_special($V x, $V r) {
  r = $V_blend(x == 0.0f, $V_splat(-__builtin_inff()), r);
  r = $V_blend(x < 0.0f, $V_splat(__builtin_nanf("")), r);
  return $V_blend((x != x) | (x == __builtin_inff()), x, r);
}
)";
constexpr std::string_view kLog = R"(static inline $V $V_log($V x) {
  $V fe, y, m = $V_log_parts(x, &fe, &y);
  $V r = (m + (y + fe * -2.12194440e-4f)) + fe * 0.693359375f;
  return $V_log_special(x, r);
}
)";
// log2 = e + (m + y) log2(e), with log2(e) - 1 split off so m and y add exactly.
constexpr std::string_view kLog2 = R"(static inline $V $V_log2($V x) {
  $V fe, y, m = $V_log_parts(x, &fe, &y);
  $V r = y * 0.44269504088896340736f + m * 0.44269504088896340736f + y + m + fe;
  return $V_log_special(x, r);
}
)";
// log1p(x) = log(u) x / (u - 1) with u = 1 + x rounded: the quotient corrects u's
// rounding error (Goldberg), and u - 1 == 0 means log1p(x) = x to working precision.
constexpr std::string_view kLog1p = R"(static inline $V $V_log1p($V x) {
  $V u = 1.0f + x, d = u - 1.0f;
  $V r = $V_log(u) * (x / d);
  r = $V_blend(d == 0.0f, x, r);
  return $V_blend(x == __builtin_inff(), x, r);
}
)";
// expm1: below |x| 0.5 its Taylor series to x^9 (truncation under 1e-9 relative),
// above e^x - 1, which cancels at most a factor 2.5 there.
constexpr std::string_view kExpm1 = R"(static inline $V $V_expm1($V x) {
  $V p = x * (1.0f / 362880.0f) + 1.0f / 40320.0f;
  p = p * x + 1.0f / 5040.0f;
  p = p * x + 1.0f / 720.0f;
  p = p * x + 1.0f / 120.0f;
  p = p * x + 1.0f / 24.0f;
  p = p * x + 1.0f / 6.0f;
  p = p * x + 0.5f;
  p = p * x * x + x;
  return $V_copysign($V_blend($V_abs(x) < 0.5f, p, $V_exp(x) - 1.0f), x);
}
)";
// exp2: x = n + r with |r| <= 1/2, 2^r by Cephes' exp2f polynomial, 2^n in two steps so
// that results down to the subnormal range are scaled right.
constexpr std::string_view kExp2 = R"(static inline $V $V_exp2($V x) {
  const $V hi = $V_splat(128.0f), lo = $V_splat(-150.0f);
  $V c = $V_blend(x > hi, hi, $V_blend(x < lo, lo, x));
  $V n = (c + 12582912.0f) - 12582912.0f;
  $V r = c - n;
  $V p = r * 1.535336188319500e-4f + 1.339887440266574e-3f;
  p = p * r + 9.618437357674640e-3f;
  p = p * r + 5.550332471162809e-2f;
  p = p * r + 2.402264791363012e-1f;
  p = p * r + 6.931472028550421e-1f;
  p = p * r + 1.0f;
  $M k = __builtin_convertvector(n, $M);
  $M k1 = k >> 1, k2 = k - k1;
  $V y = p * ($V)((k1 + 127) << 23) * ($V)((k2 + 127) << 23);
  y = $V_blend(x > hi, $V_splat(__builtin_inff()), y);
  y = $V_blend(x < lo, $V_splat(0.0f), y);
  return $V_blend(x != x, x, y);
}
)";
// sinh and cosh from h = e^{|x|/2}: (h/2) h -+ 1/(2 h h) stays finite wherever the result
// is; sinh below |x| 1 by Cephes' sinhf polynomial (no cancellation).
constexpr std::string_view kSinh = R"(static inline $V $V_sinh($V x) {
  $V a = $V_abs(x), z = x * x;
  $V p = ((z * 2.03721912945e-4f + 8.33028376239e-3f) * z + 1.66667160211e-1f) * z * x + x;
  $V h = $V_exp(0.5f * a);
  $V s = $V_copysign((0.5f * h) * h - 0.5f / (h * h), x);
  return $V_blend(a > 1.0f, s, p);
}
)";
constexpr std::string_view kCosh = R"(static inline $V $V_cosh($V x) {
  $V h = $V_exp(0.5f * $V_abs(x));
  return (0.5f * h) * h + 0.5f / (h * h);
}
)";
// sin, cos, tan: j = the multiple of pi/4 nearest above |x| made even, r = |x| - j pi/4
// (pi/4 in three parts, the first two short enough that j times them is exact), then
// the sine or cosine polynomial on [-pi/4, pi/4] by the octant, and the sign.
constexpr std::string_view kTrigReduce = R"(static inline $V $V_trig_reduce($V a, $M* j) {
  $M k = __builtin_convertvector(a * 1.27323954473516f, $M);
  k = (k + 1) & ~1;
  *j = k;
  $V y = __builtin_convertvector(k, $V);
  return ((a - y * 0.78515625f) - y * 2.4187564849853515625e-4f) - y * 3.77489497744594108e-8f;
}
static inline $V $V_sin_poly($V r, $V z) {
  return ((z * -1.9515295891e-4f + 8.3321608736e-3f) * z - 1.6666654611e-1f) * z * r + r;
}
static inline $V $V_cos_poly($V z) {
  return ((z * 2.443315711809948e-5f - 1.388731625493765e-3f) * z + 4.166664568298827e-2f) * z * z -
         0.5f * z + 1.0f;
}
static inline $V $V_trig_libm($V x, $V y, float (*f)(float)) {
  $M big = ~($V_abs(x) <= 8192.0f);
  int any = 0;
  for (int l = 0; l < $N; ++l) any |= big[l];
  if (__builtin_expect(any, 0))
    for (int l = 0; l < $N; ++l)
      if (big[l]) y[l] = f(x[l]);
  return y;
}
)";
constexpr std::string_view kSin = R"(static inline $V $V_sin($V x) {
  $M j;
  $V r = $V_trig_reduce($V_abs(x), &j), z = r * r;
  $V y = $V_blend((j & 2) != 0, $V_cos_poly(z), $V_sin_poly(r, z));
  y = $V_blend((j & 4) != 0, -y, y);
  return $V_trig_libm(x, $V_xorsign(y, x), sinf);
}
)";
constexpr std::string_view kCos = R"(static inline $V $V_cos($V x) {
  $M j;
  $V r = $V_trig_reduce($V_abs(x), &j), z = r * r;
  $V y = $V_blend((j & 2) != 0, $V_sin_poly(r, z), $V_cos_poly(z));
  y = $V_blend(((j & 4) != 0) ^ ((j & 2) != 0), -y, y);
  return $V_trig_libm(x, y, cosf);
}
)";
constexpr std::string_view kTan = R"(static inline $V $V_tan($V x) {
  $M j;
  $V r = $V_trig_reduce($V_abs(x), &j), z = r * r;
  $V y = z * 9.38540185543e-3f + 3.11992232697e-3f;
  y = y * z + 2.44301354525e-2f;
  y = y * z + 5.34112807005e-2f;
  y = y * z + 1.33387994085e-1f;
  y = y * z + 3.33331568548e-1f;
  y = y * z * r + r;
  y = $V_blend((j & 2) != 0, -1.0f / y, y);
  return $V_trig_libm(x, $V_xorsign(y, x), tanf);
}
)";
// asin and acos: asin(s) = s + s^3 P(s^2) for |s| <= 1/2; above, asin(a) = pi/2 -
// 2 asin(sqrt((1 - a) / 2)).
constexpr std::string_view kAsinPoly = R"(static inline $V $V_asin_poly($V s, $V z) {
  $V p = z * 4.2163199048e-2f + 2.4181311049e-2f;
  p = p * z + 4.5470025998e-2f;
  p = p * z + 7.4953002686e-2f;
  p = p * z + 1.6666752422e-1f;
  return p * z * s + s;
}
)";
constexpr std::string_view kAsin = R"(static inline $V $V_asin($V x) {
  $V a = $V_abs(x);
  $M big = a > 0.5f;
  $V z = $V_blend(big, 0.5f * (1.0f - a), a * a);
  $V p = $V_asin_poly($V_blend(big, $V_sqrt(z), a), z);
  return $V_copysign($V_blend(big, 1.5707963267948966f - (p + p), p), x);
}
)";
constexpr std::string_view kAcos = R"(static inline $V $V_acos($V x) {
  $M big = $V_abs(x) > 0.5f;
  $V z = $V_blend(big, 0.5f * (1.0f - $V_abs(x)), x * x);
  $V p = $V_asin_poly($V_blend(big, $V_sqrt(z), x), z);
  $V r = $V_blend(big, p + p, 1.5707963267948966f - p);
  return $V_blend(big & (x < 0.0f), 3.14159265358979f - r, r);
}
)";
// atan: |x| above tan(3pi/8) -> pi/2 + atan(-1/|x|), above tan(pi/8) -> pi/4 +
// atan((|x| - 1) / (|x| + 1)); then t + t^3 P(t^2).
constexpr std::string_view kAtan = R"(static inline $V $V_atan($V x) {
  $V a = $V_abs(x);
  $M big = a > 2.414213562373095f, mid = a > 0.4142135623730950f;
  $V t = $V_blend(big, -1.0f / a, $V_blend(mid, (a - 1.0f) / (a + 1.0f), a));
  $V y0 = $V_blend(big, $V_splat(1.5707963267948966f),
                   $V_blend(mid, $V_splat(0.7853981633974483f), $V_splat(0.0f)));
  $V z = t * t;
  $V p = z * 8.05374449538e-2f - 1.38776856032e-1f;
  p = p * z + 1.99777106478e-1f;
  p = p * z - 3.33329491539e-1f;
  return $V_copysign(p * z * t + t + y0, x);
}
)";
// atan2(y, x) = atan(y / x), plus pi with y's sign where x's sign bit is set; zeros and
// infinities as C's atan2 (x = +-0: +-pi/2, or for y = +-0 too: y or pi with y's sign).
constexpr std::string_view kAtan2 = R"(static inline $V $V_atan2($V y, $V x) {
  $V r = $V_atan(y / x);
  $M xneg = ($M)x < 0;
  $V pi = $V_copysign($V_splat(3.14159265358979f), y);
  r = $V_blend(xneg, r + pi, r);
  $V at_zero = $V_blend(y == 0.0f, $V_blend(xneg, pi, y), $V_copysign($V_splat(1.5707963267948966f), y));
  r = $V_blend(x == 0.0f, at_zero, r);
  $M both_inf = ($V_abs(x) == __builtin_inff()) & ($V_abs(y) == __builtin_inff());
  $V corner = $V_blend(xneg, $V_splat(2.35619449019234f), $V_splat(0.7853981633974483f));
  r = $V_blend(both_inf, $V_copysign(corner, y), r);
  return $V_blend((x != x) | (y != y), x + y, r);
}
)";
// asinh, acosh: a polynomial near the origin (asinh below 1/2, acosh below x = 1.5),
// else log(a + sqrt(a^2 +- 1)), or log(a) + ln2 above 1500 where a^2 would overflow.
constexpr std::string_view kAsinh = R"(static inline $V $V_asinh($V x) {
  $V a = $V_abs(x), z = x * x;
  $V p = z * 2.0122003309e-2f - 4.2699340972e-2f;
  p = p * z + 7.4847586088e-2f;
  p = p * z - 1.6666288134e-1f;
  p = p * z * x + x;
  $M huge = a > 1500.0f;
  $V l = $V_log($V_blend(huge, a, a + $V_sqrt(z + 1.0f)));
  l = $V_blend(huge, l + 0.693147180559945309f, l);
  return $V_copysign($V_blend(a < 0.5f, p, l), x);
}
)";
constexpr std::string_view kAcosh = R"(static inline $V $V_acosh($V x) {
  $V z = x - 1.0f;
  $V p = z * 1.7596881071e-3f - 7.5272886713e-3f;
  p = p * z + 2.6454905019e-2f;
  p = p * z - 1.1784741703e-1f;
  p = (p * z + 1.4142135263f) * $V_sqrt(z);
  $M huge = x > 1500.0f;
  $V l = $V_log($V_blend(huge, x, x + $V_sqrt(z * (x + 1.0f))));
  l = $V_blend(huge, l + 0.693147180559945309f, l);
  return $V_blend(z < 0.5f, p, l);
}
)";
// atanh: x + x^3 P(x^2) below |x| 1/2, else log((1 + x) / (1 - x)) / 2.
constexpr std::string_view kAtanh = R"(static inline $V $V_atanh($V x) {
  $V z = x * x;
  $V p = z * 1.81740078349e-1f + 8.24370301058e-2f;
  p = p * z + 1.46691431730e-1f;
  p = p * z + 1.99782164500e-1f;
  p = p * z + 3.33337300303e-1f;
  p = p * z * x + x;
  $V l = 0.5f * $V_log((1.0f + x) / (1.0f - x));
  return $V_blend($V_abs(x) < 0.5f, p, l);
}
)";

const std::map<std::string, LaneHelper, std::less<>>& gcc_f32_helpers() {
  static const std::map<std::string, LaneHelper, std::less<>> t = {
      {"abs", {{}, kAbs}},
      {"copysign", {{}, kCopysign}},
      {"sqrt", {{}, kSqrt}},
      {"round", {{}, kRound}},
      {"floor", {{"round"}, kFloor}},
      {"ceil", {{"round", "copysign"}, kCeil}},
      {"trunc", {{"round", "copysign"}, kTrunc}},
      {"sign", {{}, kSign}},
      {"log_parts", {{}, kLogParts}},
      {"log", {{"log_parts"}, kLog}},
      {"log2", {{"log_parts"}, kLog2}},
      {"log1p", {{"log"}, kLog1p}},
      {"xorsign", {{}, kXorsign}},
      {"expm1", {{"abs", "copysign"}, kExpm1}},
      {"exp2", {{}, kExp2}},
      {"sinh", {{"abs", "copysign"}, kSinh}},
      {"cosh", {{"abs"}, kCosh}},
      {"trig_reduce", {{"abs", "xorsign"}, kTrigReduce}},
      {"sin", {{"trig_reduce"}, kSin}},
      {"cos", {{"trig_reduce"}, kCos}},
      {"tan", {{"trig_reduce"}, kTan}},
      {"asin_poly", {{}, kAsinPoly}},
      {"asin", {{"abs", "copysign", "sqrt", "asin_poly"}, kAsin}},
      {"acos", {{"abs", "sqrt", "asin_poly"}, kAcos}},
      {"atan", {{"abs", "copysign"}, kAtan}},
      {"atan2", {{"atan"}, kAtan2}},
      {"asinh", {{"abs", "copysign", "sqrt", "log"}, kAsinh}},
      {"acosh", {{"sqrt", "log"}, kAcosh}},
      {"atanh", {{"abs", "log"}, kAtanh}},
  };
  return t;
}

// Replace `$V`, `$M` and `$N` in `text`.
std::string instantiate(std::string_view text, const std::string& v, const std::string& m,
                        const std::string& n) {
  std::string s;
  s.reserve(text.size() + 256);
  for (size_t p = 0; p < text.size(); ++p) {
    if (text[p] != '$' || p + 1 == text.size()) {
      s += text[p];
      continue;
    }
    char c = text[++p];
    s += c == 'V' ? v : c == 'M' ? m : n;
  }
  return s;
}

// OpenCL C's built-ins are overloaded on vector types: each helper is a call.
std::string opencl_text(const CDialect& d, const std::string& v, const std::string& name) {
  // OpenCL's round() rounds halves away from zero (ONNX and the scalar code: to even),
  // and its sign() gives 0 for NaN and -0 for -0 (the scalar code: NaN and +0).
  std::string_view builtin = name == "abs" ? "fabs" : name == "round" ? "rint" : std::string_view(name);
  if (name == "sign")
    return fmt::format("{0} {1} {1}_sign({1} x) {{ return select(sign(x) + 0.0f, x, isnan(x)); }}\n",
                       d.helper_qualifier, v);
  if (name == "atan2")
    return fmt::format("{0} {1} {1}_atan2({1} y, {1} x) {{ return atan2(y, x); }}\n",
                       d.helper_qualifier, v);
  return fmt::format("{0} {1} {1}_{2}({1} x) {{ return {3}(x); }}\n", d.helper_qualifier, v,
                     name, builtin);
}

} // namespace

bool has_lane_math(MathFn fn, DType elem) {
  if (elem != DType::F32)
    return false;
  switch (fn) {
  case MathFn::Abs:
  case MathFn::Sqrt:
  case MathFn::Log:
  case MathFn::Log2:
  case MathFn::Log1p:
  case MathFn::Expm1:
  case MathFn::Exp2:
  case MathFn::Sin:
  case MathFn::Cos:
  case MathFn::Tan:
  case MathFn::Asin:
  case MathFn::Acos:
  case MathFn::Atan:
  case MathFn::Atan2:
  case MathFn::Sinh:
  case MathFn::Cosh:
  case MathFn::Asinh:
  case MathFn::Acosh:
  case MathFn::Atanh:
  case MathFn::Floor:
  case MathFn::Ceil:
  case MathFn::Round:
  case MathFn::Trunc:
  case MathFn::Sign:
    return true;
  default:
    return false;
  }
}

std::string lane_math_text(const CDialect& d, DType elem, int lanes,
                           const std::set<std::string>& names) {
  UT_INTERNAL_ASSERT(elem == DType::F32, "no lane-wise math for " + std::string(dtype_name(elem)));
  const std::string v = fmt::format("ut_v{}f32", lanes), m = fmt::format("ut_v{}i32", lanes);
  std::string s;
  if (d.vector_syntax == VectorSyntax::OpenCL) {
    for (const auto& name : names)
      s += opencl_text(d, v, name);
    return s;
  }
  UT_INTERNAL_ASSERT(d.vector_syntax == VectorSyntax::Gcc,
                     "dialect " + std::string(d.name) + " prints no vector types");
  const auto& table = gcc_f32_helpers();
  std::set<std::string> done;
  std::function<void(const std::string&)> emit = [&](const std::string& name) {
    if (done.count(name))
      return;
    auto it = table.find(name);
    UT_INTERNAL_ASSERT(it != table.end(), "unknown lane-wise helper " + name);
    done.insert(name);
    for (const auto& dep : it->second.deps)
      emit(dep);
    std::string text = instantiate(it->second.text, v, m, std::to_string(lanes));
    constexpr std::string_view kQualifier = "static inline";
    for (size_t p = 0; (p = text.find(kQualifier, p)) != std::string::npos;
         p += d.helper_qualifier.size())
      text.replace(p, kQualifier.size(), d.helper_qualifier);
    s += text;
  };
  for (const auto& name : names)
    emit(name);
  return s;
}

} // namespace unitile::codegen
