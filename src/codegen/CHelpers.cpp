// Texts of the helper functions generated C code calls (see CHelpers.h).
//
// The f16/bf16 conversions use integer arithmetic only, so they round to nearest even
// and treat NaN, infinities and subnormals exactly whatever floating-point flags the HCD
// passes to the compiler (-ffast-math included). They match the sim device bit for bit.
#include "codegen/CHelpers.h"

#include "codegen/VectorMath.h"

#include "ir/Diagnostic.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>

namespace unitile::codegen {

namespace {

struct ScalarHelper {
  std::vector<std::string> deps;
  std::string text;
};

// Replace every `$T` by the C type and `$S` by the type suffix of a generic helper.
std::string instantiate(std::string text, std::string_view ctype, std::string_view suffix) {
  for (size_t p = text.find('$'); p != std::string::npos; p = text.find('$', p)) {
    std::string_view with = text[p + 1] == 'T' ? ctype : suffix;
    text.replace(p, 2, with);
    p += with.size();
  }
  return text;
}

constexpr std::string_view kF16ToF32 = R"(static inline float ut_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, x;
  if (e == 0x1fu) {
    x = sign | 0x7f800000u | (m << 13);
  } else if (e != 0) {
    x = sign | ((e + 112u) << 23) | (m << 13);
  } else if (m == 0) {
    x = sign;
  } else {
    e = 113u;
    while (!(m & 0x400u)) { m <<= 1; --e; }
    x = sign | (e << 23) | ((m & 0x3ffu) << 13);
  }
  float f;
  memcpy(&f, &x, sizeof f);
  return f;
}
)";

constexpr std::string_view kF32ToF16 = R"(static inline uint16_t ut_f32_to_f16(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  uint32_t a = x & 0x7fffffffu;
  if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  if (a >= 0x47800000u) return (uint16_t)(sign | 0x7c00u);
  if (a >= 0x38800000u) {
    uint32_t r = a - 0x38000000u;
    r += 0xfffu + ((r >> 13) & 1u);
    return (uint16_t)(sign | (r >> 13));
  }
  if (a < 0x33000000u) return sign;
  uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u, s = 126u - e;
  uint32_t q = m >> s, rem = m & ((1u << s) - 1u), halfway = 1u << (s - 1u);
  if (rem > halfway || (rem == halfway && (q & 1u))) ++q;
  return (uint16_t)(sign | q);
}
)";

constexpr std::string_view kBf16ToF32 = R"(static inline float ut_bf16_to_f32(uint16_t h) {
  uint32_t x = (uint32_t)h << 16;
  float f;
  memcpy(&f, &x, sizeof f);
  return f;
}
)";

constexpr std::string_view kF32ToBf16 = R"(static inline uint16_t ut_f32_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}
)";

constexpr std::string_view kRoundF16 =
    "static inline float ut_round_f16(float f) { return ut_f16_to_f32(ut_f32_to_f16(f)); }\n";
constexpr std::string_view kRoundBf16 =
    "static inline float ut_round_bf16(float f) { return ut_bf16_to_f32(ut_f32_to_bf16(f)); }\n";

// Integer floor division and Python modulo (sign of the divisor).
constexpr std::string_view kFloorDivInt = R"(static inline $T ut_floordiv_$S($T a, $T b) {
  $T q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
)";
constexpr std::string_view kModInt = R"(static inline $T ut_mod_$S($T a, $T b) {
  $T r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
)";
constexpr std::string_view kModFloat = R"(static inline $T ut_mod_$S($T a, $T b) {
  $T r = ut_fmod_$S(a, b);
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
)";
// min/max: NaN in, NaN out (fmin/fmax would drop it); otherwise min = a < b ? a : b and
// max = a > b ? a : b, which also fixes which zero wins, as the sim device does.
constexpr std::string_view kMinFloat = "static inline $T ut_min_$S($T a, $T b) { return (a != a || "
                                       "b != b) ? a + b : (a < b ? a : b); }\n";
constexpr std::string_view kMaxFloat = "static inline $T ut_max_$S($T a, $T b) { return (a != a || "
                                       "b != b) ? a + b : (a > b ? a : b); }\n";
constexpr std::string_view kMinInt =
    "static inline $T ut_min_$S($T a, $T b) { return a < b ? a : b; }\n";
constexpr std::string_view kMaxInt =
    "static inline $T ut_max_$S($T a, $T b) { return a > b ? a : b; }\n";
// float -> integer: truncate toward zero, NaN gives 0, saturate outside int64; the cast
// to a narrower type then wraps. Defined for every input, unlike a plain C cast.
constexpr std::string_view kFloatToInt = R"(static inline int64_t ut_float_to_i64(double v) {
  if (v != v) return 0;
  if (v >= 9223372036854775808.0) return INT64_MAX;
  if (v < -9223372036854775808.0) return INT64_MIN;
  return (int64_t)v;
}
)";
// sign: -1, 0 or 1; NaN stays NaN.
constexpr std::string_view kSign = "static inline $T ut_sign_$S($T x) { return x > 0 ? ($T)1 : x < "
                                   "0 ? ($T)-1 : x == 0 ? ($T)0 : x; }\n";
constexpr std::string_view kAbsInt =
    "static inline $T ut_abs_$S($T x) { return x < 0 ? -x : x; }\n";

// Shifts in int64 (every integer dtype sign- or zero-extended), defined for every count:
// outside [0, bits) `<<` gives 0 and `>>` the sign fill; the caller casts to the dtype,
// which keeps the low bits, as the sim device does.
constexpr std::string_view kShl =
    "static inline int64_t ut_shl(int64_t a, int64_t b, int64_t bits) { return (b >= 0 && b < "
    "bits) ? (int64_t)((uint64_t)a << b) : 0; }\n";
constexpr std::string_view kShr =
    "static inline int64_t ut_shr(int64_t a, int64_t b, int64_t bits) { return (b >= 0 && b < "
    "bits) ? (a >> b) : (a < 0 ? -1 : 0); }\n";

// Intel AMX tile registers (the c dialect's matrix unit), as inline assembly so that
// the kernel compiles without -mamx-tile/-mamx-bf16 (GCC's intrinsics need them or a
// target attribute). Linux hands out tile state only after a process asks for it
// (arch_prctl ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA; otherwise the first tile
// instruction raises SIGILL), and each thread must load a tile configuration: every
// entry that uses tiles calls ut_amx_begin (ask once per process; configure all 8 tiles
// as 16 rows x 64 bytes) and ut_amx_end (release the tiles: other code, oneDNN too, may
// configure them differently on the same thread between two calls).
constexpr std::string_view kAmx = R"AMX(#if !defined(__x86_64__)
#error "unitile: this kernel uses Intel AMX tile registers (x86-64 only); schedule it for an HCD without amx-tile"
#endif
#define UT_TILE_ZERO(t) __asm__ volatile("tilezero %%tmm" #t ::: "memory")
#define UT_TILE_LOAD(t, p, stride) \
  __asm__ volatile("tileloadd (%0,%1,1), %%tmm" #t ::"r"((const void*)(p)), "r"((int64_t)(stride)) : "memory")
#define UT_TILE_STORE(t, p, stride) \
  __asm__ volatile("tilestored %%tmm" #t ", (%0,%1,1)" ::"r"((void*)(p)), "r"((int64_t)(stride)) : "memory")
#define UT_TILE_DPBF16PS(c, a, b) __asm__ volatile("tdpbf16ps %%tmm" #b ", %%tmm" #a ", %%tmm" #c ::)
extern long syscall(long number, ...);
static void ut_amx_begin(void) {
  static volatile int permitted;
  if (!permitted) {
    syscall(158 /* SYS_arch_prctl */, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XFEATURE_XTILEDATA */);
    permitted = 1;
  }
  unsigned char cfg[64] __attribute__((aligned(64))) = {0};
  cfg[0] = 1; /* palette 1 */
  for (int t = 0; t < 8; ++t) {
    cfg[16 + 2 * t] = 64; /* bytes per row */
    cfg[48 + t] = 16;     /* rows */
  }
  __asm__ volatile("ldtilecfg %0" ::"m"(cfg) : "memory");
}
static void ut_amx_end(void) { __asm__ volatile("tilerelease" ::: "memory"); }
)AMX";

// A row of 16 f32 rounded to bf16 by AVX512-BF16's vcvtneps2bf16, for AMX tile stores
// into bf16 (printed only where the HCD's isa lists avx512_bf16, used only under the
// compiler's __AVX512BF16__). The same bits as ut_f32_to_bf16 (nearest even, NaNs
// quieted) but for f32 denormals, which the instruction flushes to signed zeros, as
// oneDNN's bf16 matmul does. One instruction where the integer rounding takes seven
// (512^3 bf16 GEMM: 0.33 -> 0.27 ms, docs/PERFORMANCE.md). Inline assembly, like
// ut_amx, so that no intrinsic header is needed.
constexpr std::string_view kAmxBf16Row = R"ROW(#if defined(__AVX512BF16__)
static inline void ut_amx_bf16_row(uint16_t* d, const float* s) {
  typedef float ut_row_f32 __attribute__((vector_size(64)));
  typedef uint16_t ut_row_bf16 __attribute__((vector_size(32)));
  ut_row_f32 x;
  ut_row_bf16 r;
  memcpy(&x, s, sizeof x);
  __asm__("vcvtneps2bf16 %1, %0" : "=v"(r) : "v"(x));
  memcpy(d, &r, sizeof r);
}
#endif
)ROW";

// A 1 x 16 x 2 matrix unit on AVX512-BF16 (CPrinter.cpp, vector pairs): an f32
// accumulator vector += A's pair of bf16 (broadcast from memory) times B's 16 columns in
// k pairs (one 64-byte vector), one vdpbf16ps; whole vectors stored as f32 or rounded to
// bf16 by vcvtneps2bf16 (nearest even, f32 denormals flushed, as oneDNN's bf16 matmul).
// Inline assembly, so that no intrinsic header is needed; the pair is read through a
// may_alias type, since the packs wrote it as two 16-bit values.
constexpr std::string_view kPairs = R"PAIRS(#if !defined(__x86_64__)
#error "unitile: this kernel uses AVX512-BF16 (x86-64 only); schedule it for an HCD without a 1x16x2 unit"
#endif
typedef float ut_pair_v __attribute__((vector_size(64)));
typedef int32_t ut_pair_bits __attribute__((may_alias));
static inline ut_pair_v ut_pair_load(const void* p) {
  ut_pair_v v;
  memcpy(&v, p, sizeof v);
  return v;
}
#if defined(__AVX512BF16__) && defined(__GNUC__) && !defined(__clang__)
/* GCC's builtin, so that its register allocator sees the instruction (24 accumulators in
   inline assembly were spilled: 2048^3 at 155 against 79 ms). Its operand type is a
   vector of __bf16 from GCC 13, of short before. */
#if __GNUC__ >= 13
typedef __bf16 ut_pair_h __attribute__((vector_size(64)));
#else
typedef short ut_pair_h __attribute__((vector_size(64)));
#endif
typedef int32_t ut_pair_i __attribute__((vector_size(64)));
static inline ut_pair_v ut_pair_dot(ut_pair_v acc, ut_pair_v b, const void* a) {
  const ut_pair_i pair = (ut_pair_i){0} + *(const ut_pair_bits*)a;
  return __builtin_ia32_dpbf16ps_v16sf(acc, (ut_pair_h)b, (ut_pair_h)pair);
}
#else
static inline ut_pair_v ut_pair_dot(ut_pair_v acc, ut_pair_v b, const void* a) {
  __asm__("vdpbf16ps %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(b), "m"(*(const ut_pair_bits*)a));
  return acc;
}
#endif
static inline void ut_pair_store_f32(float* d, ut_pair_v x) { memcpy(d, &x, sizeof x); }
static inline void ut_pair_store_bf16(uint16_t* d, ut_pair_v x) {
  typedef uint16_t ut_pair_half __attribute__((vector_size(32)));
  ut_pair_half r;
  __asm__("vcvtneps2bf16 %1, %0" : "=v"(r) : "v"(x));
  memcpy(d, &r, sizeof r);
}
)PAIRS";

const std::map<std::string, ScalarHelper, std::less<>>& scalar_helpers() {
  static const std::map<std::string, ScalarHelper, std::less<>> table = [] {
    std::map<std::string, ScalarHelper, std::less<>> t;
    t["ut_f16_to_f32"] = {{}, std::string(kF16ToF32)};
    t["ut_f32_to_f16"] = {{}, std::string(kF32ToF16)};
    t["ut_bf16_to_f32"] = {{}, std::string(kBf16ToF32)};
    t["ut_f32_to_bf16"] = {{}, std::string(kF32ToBf16)};
    t["ut_float_to_i64"] = {{}, std::string(kFloatToInt)};
    t["ut_shl"] = {{}, std::string(kShl)};
    t["ut_amx"] = {{}, std::string(kAmx)};
    t["ut_amx_bf16_row"] = {{}, std::string(kAmxBf16Row)};
    t["ut_pairs"] = {{}, std::string(kPairs)};
    t["ut_shr"] = {{}, std::string(kShr)};
    t["ut_round_f16"] = {{"ut_f16_to_f32", "ut_f32_to_f16"}, std::string(kRoundF16)};
    t["ut_round_bf16"] = {{"ut_bf16_to_f32", "ut_f32_to_bf16"}, std::string(kRoundBf16)};
    struct Generic {
      const char* ctype;
      const char* suffix;
      bool is_float;
    };
    for (Generic g : {Generic{"float", "f32", true}, Generic{"double", "f64", true},
                      Generic{"int32_t", "i32", false}, Generic{"int64_t", "i64", false}}) {
      auto add = [&](const char* stem, std::string_view text, std::vector<std::string> deps = {}) {
        t[std::string(stem) + g.suffix] = {std::move(deps),
                                           instantiate(std::string(text), g.ctype, g.suffix)};
      };
      add("ut_min_", g.is_float ? kMinFloat : kMinInt);
      add("ut_max_", g.is_float ? kMaxFloat : kMaxInt);
      add("ut_sign_", kSign);
      if (g.is_float) {
        std::string mod(kModFloat);
        mod.replace(mod.find("ut_fmod_$S"), 10,
                    g.suffix == std::string_view("f32") ? "fmodf" : "fmod");
        add("ut_mod_", mod);
      } else {
        add("ut_floordiv_", kFloorDivInt);
        add("ut_mod_", kModInt);
        add("ut_abs_", kAbsInt);
      }
    }
    return t;
  }();
  return table;
}

const char* dtype_ctype(DType t) {
  switch (t) {
  case DType::F32:
    return "float";
  case DType::F64:
    return "double";
  case DType::I32:
    return "int32_t";
  case DType::I64:
    return "int64_t";
  case DType::I8:
    return "int8_t";
  case DType::U8:
  case DType::Bool:
    return "uint8_t";
  default:
    return nullptr;
  }
}

// Lane-wise exp, sigmoid, tanh and erf of f32 vectors, so that loops calling them stay
// vector code instead of one libm call per element.
//   exp: x = (n / 8) ln2 + r with |r| <= ln2/16 (ln2/8 split in two parts, the first
//     short enough that n times it is exact), e^x = 2^(n >> 3) 2^((n & 7) / 8) e^r. n
//     comes from the round-to-nearest trick z = x 8 log2(e) + 1.5 2^23, n = z - 1.5 2^23,
//     so n's integer is z's low bits (no conversion); 2^((n & 7) / 8) is one of eight
//     table entries, picked by a lane permutation (`$V_exp2_8th`: one vpermps on AVX2);
//     2^(n >> 3) goes into that entry's exponent field by an integer add; e^r = 1 + r +
//     r^2 (c2 + c3 r) (a relative minimax fit on [-ln2/16, ln2/16], error 2.6e-8 before
//     rounding); the result is one FMA, p s + s. That holds while |n| <= 1008 (2^(n >> 3)
//     normal) for every lane; a vector with a lane beyond (results that overflow, are
//     subnormal or 0, and +-inf; NaN stays on the fast path, where it propagates) takes
//     `_exp_wide` for those lanes (the others keep the fast path's bits, so a lane's
//     result does not depend on its neighbours or the vector width): x clamped to [-110,
//     89], a degree-6 polynomial on |r| <= ln2/2 and 2^n applied in two factors, so results
//     down to the subnormal range are scaled right, beyond 88.72 the product overflows to
//     inf and below -103.97 it rounds to 0. The fast path is 7 FMA-unit instructions and
//     about 9 others (the lane test included: an and, a compare, a mask move); the wide
//     form, which every call paid before, 11 and 11 (the Cephes form before it 33 in all). Softmax is exp-bound on one core: its
//     exp pass ran about 1.6x faster (docs/PERFORMANCE.md). Measured error 1.14 ulp over
//     [-115, 90] (test_vector_math; 5e7 points: 1.135 ulp, relative 1.1e-7; the wide
//     form 1.16 ulp).
//   sigmoid = 1 / (1 + e^-x); tanh and erf as x P(x^2) / Q(x^2), rational
//     approximations of degree 13/6 and 13/8 (Eigen's fast tanh and erf for float, as in
//     XLA) on x clamped to where the function is +-1 in f32 (|x| <= 7.905, |x| <= 4): one
//     division and no exp, about a third of the instructions of the exp-based forms
//     (gelu and its gradient are erf-bound). x (P / Q) rather than (x P) / Q keeps tiny
//     and subnormal x exact; erf is clamped to [-1, 1]. Relative error below 4.4e-7
//     (measured in f32 over [-10, 10] and down to 1e-30); NaN stays NaN (no clamp
//     comparison holds for it).
//   The same polynomials in every syntax, so the c and opencl dialects agree bit for bit;
//   `to_mask` converts a float vector to its integer lanes, `as_float` reinterprets
//   integer lanes as floats and `as_int` float lanes as integers; `$V_any` (defined by
//   the caller) says whether any lane of a mask is set. `lane_test`, where not empty,
//   comes first in exp's lane test: the same test in a form of the caller's (its own
//   preprocessor guard), which returns.
std::string vector_math_f32(const std::string& v, const std::string& m, const std::string& to_mask,
                            const std::string& as_float, const std::string& as_int,
                            const std::string& lane_test = {}) {
  return fmt::format(
      "static inline {0} {0}_exp_wide({0} x) {{\n"
      "  {0} c = {0}_clamp(x, -110.0f, 89.0f);\n"
      "  {0} n = (c * 1.44269504088896341f + 12582912.0f) - 12582912.0f;\n"
      "  {0} r = c - n * 0.693359375f;\n"
      "  r = r - n * -2.12194440e-4f;\n"
      "  {0} q = r * 1.38436502e-3f + 8.37415643e-3f;\n"
      "  q = q * r + 4.16680016e-2f;\n"
      "  q = q * r + 1.66664317e-1f;\n"
      "  q = q * r + 4.99999940e-1f;\n"
      "  q = (r * r) * q + r;\n"
      "  {1} k = {2};\n"
      "  {1} k1 = k >> 1;\n"
      "  {0} s1 = {3}, s2 = {4};\n"
      "  return (q * s1 + s1) * s2;\n"
      "}}\n"
      "static inline {0} {0}_exp({0} x) {{\n"
      "  {0} z = x * 11.5415603271f + 12582912.0f;\n"
      "  {0} n = z - 12582912.0f;\n"
      "  {0} r = x - n * 8.6639404297e-2f;\n"
      "  r = r - n * 3.9932729123e-6f;\n"
      "  {0} p = r * 1.666685939e-1f + 5.000646114e-1f;\n"
      "  p = p * (r * r) + r;\n"
      "  {1} k = {6};\n"
      "  {0} s = {5};\n"
      "{8}"
      "  {1} wide = ({7} & 0x7fffffff) > 0x447c0000;\n"
      "  if (__builtin_expect({0}_any(wide), 0))\n"
      "    return {0}_blend(wide, {0}_exp_wide(x), p * s + s);\n"
      "  return p * s + s;\n"
      "}}\n"
      "static inline {0} {0}_sigmoid({0} x) {{ return 1.0f / (1.0f + {0}_exp(-x)); }}\n"
      "static inline {0} {0}_tanh({0} x) {{\n"
      "  {0} c = {0}_clamp(x, -7.90531110763549805f, 7.90531110763549805f);\n"
      "  {0} z = c * c;\n"
      "  {0} p = z * -2.76076847742355e-16f + 2.00018790482477e-13f;\n"
      "  p = p * z - 8.60467152213735e-11f;\n"
      "  p = p * z + 5.12229709037114e-08f;\n"
      "  p = p * z + 1.48572235717979e-05f;\n"
      "  p = p * z + 6.37261928875436e-04f;\n"
      "  p = p * z + 4.89352455891786e-03f;\n"
      "  {0} q = z * 1.19825839466702e-06f + 1.18534705686654e-04f;\n"
      "  q = q * z + 2.26843463243900e-03f;\n"
      "  q = q * z + 4.89352518554385e-03f;\n"
      "  return c * (p / q);\n"
      "}}\n"
      "static inline {0} {0}_erf({0} x) {{\n"
      "  {0} c = {0}_clamp(x, -4.0f, 4.0f);\n"
      "  {0} z = c * c;\n"
      "  {0} p = z * -2.72614225801306e-10f + 2.77068142495902e-08f;\n"
      "  p = p * z - 2.10102402082508e-06f;\n"
      "  p = p * z - 5.69250639462346e-05f;\n"
      "  p = p * z - 7.34990630326855e-04f;\n"
      "  p = p * z - 2.95459980854025e-03f;\n"
      "  p = p * z - 1.60960333262415e-02f;\n"
      "  {0} q = z * -1.45660718464996e-05f - 2.13374055278905e-04f;\n"
      "  q = q * z - 1.68282697438203e-03f;\n"
      "  q = q * z - 7.37332916720468e-03f;\n"
      "  q = q * z - 1.42647390514189e-02f;\n"
      "  const {0} y = c * (p / q);\n"
      "  return {0}_clamp(y, -1.0f, 1.0f);\n"
      "}}\n",
      v, m, fmt::format(fmt::runtime(to_mask), "n"),
      fmt::format(fmt::runtime(as_float), "((k1 + 127) << 23)"),
      fmt::format(fmt::runtime(as_float), "((k - k1 + 127) << 23)"),
      fmt::format(
          fmt::runtime(as_float),
          fmt::format("(({}) + ((k >> 3) << 23))",
                      fmt::format(fmt::runtime(as_int), fmt::format("{}_exp2_8th(k & 7)", v)))),
      fmt::format(fmt::runtime(as_int), "z"), fmt::format(fmt::runtime(as_int), "n"), lane_test);
}

// `lanes` copies of `value`, comma-separated (a vector literal's elements).
std::string splat_text(const std::string& value, int lanes) {
  std::string s = value;
  for (int l = 1; l < lanes; ++l) s += ", " + value;
  return s;
}

// GCC vector extensions: vector_size types, memcpy loads and stores, blends by bit masks.
std::string gcc_vector_text(DType elem, int lanes) {
  std::string v = vector_type_name(elem, lanes);
  DType mask_elem = vector_mask_elem(elem);
  std::string m = vector_type_name(mask_elem, lanes);
  const char* t = dtype_ctype(elem);
  int bytes = dtype_bytes(elem) * lanes;
  std::string s;
  if (mask_elem != elem)
    s += fmt::format("#ifndef UT_HAVE_{0}\n#define UT_HAVE_{0}\n"
                     "typedef {1} {0} __attribute__((vector_size({2})));\n#endif\n",
                     m, dtype_ctype(mask_elem), bytes);
  s += fmt::format("#ifndef UT_HAVE_{0}\n#define UT_HAVE_{0}\n"
                   "typedef {1} {0} __attribute__((vector_size({2})));\n#endif\n",
                   v, t, bytes);
  // The splat is an initializer of `lanes` copies: GCC turns that into one broadcast
  // instruction, where a loop of lane stores becomes a chain of inserts.
  std::string copies;
  for (int l = 0; l < lanes; ++l)
    copies += l ? ", x" : "x";
  s += fmt::format("static inline {0} {0}_splat({1} x) {{ return ({0}){{{2}}}; }}\n", v, t, copies);
  s += fmt::format(
      "static inline {0} {0}_load(const {1}* p) {{ {0} v; memcpy(&v, p, sizeof v); return v; }}\n"
      "static inline void {0}_store({1}* p, {0} v) {{ memcpy(p, &v, sizeof v); }}\n"
      "static inline {0} {0}_blend({3} m, {0} a, {0} b) {{ return ({0})((({3})a & m) | (({3})b & "
      "~m)); }}\n",
      v, t, lanes, m);
  return s;
}

// OpenCL C vector types: typeN, blends by select on the mask's sign. Loads and stores:
// under clang (PoCL, and most OpenCL compilers) overloadable helpers per address space
// that dereference an element-aligned vector typedef, an ordinary unaligned vector load;
// PoCL's vloadN is a call into its kernel library that LLVM 15 splits into 64-bit pieces,
// so a row buffer stored and read back (keep_terms) became lane extracts and inserts
// (softmax 1024x1024: 1.30 -> 1.10 ms). Other compilers get vloadN/vstoreN (macros, so
// that one helper serves pointers into every address space).
std::string opencl_vector_text(const CDialect& d, DType elem, int lanes) {
  std::string v = vector_type_name(elem, lanes);
  DType mask_elem = vector_mask_elem(elem);
  std::string m = vector_type_name(mask_elem, lanes);
  std::string_view t = d.storage_type[static_cast<size_t>(elem)];
  std::string_view mt = d.storage_type[static_cast<size_t>(mask_elem)];
  std::string s;
  if (mask_elem != elem)
    s += fmt::format("#ifndef UT_HAVE_{0}\n#define UT_HAVE_{0}\ntypedef {1}{2} {0};\n#endif\n", m,
                     mt, lanes);
  s += fmt::format("#ifndef UT_HAVE_{0}\n#define UT_HAVE_{0}\ntypedef {1}{2} {0};\n#endif\n", v, t,
                   lanes);
  s += fmt::format("static inline {0} {0}_splat({1} x) {{ return ({0})(x); }}\n", v, t);
  s += fmt::format("#if defined(__clang__)\ntypedef {0} {0}_u __attribute__((aligned({1})));\n", v,
                   dtype_bytes(elem));
  for (const char* space : {"__global", "__local", "__private"})
    s += fmt::format("static inline __attribute__((overloadable)) {0} {0}_load(const {2} {1}* p) "
                     "{{ return *(const {2} {0}_u*)p; }}\n"
                     "static inline __attribute__((overloadable)) void {0}_store({2} {1}* p, {0} v) "
                     "{{ *({2} {0}_u*)p = v; }}\n",
                     v, t, space);
  s += fmt::format("#else\n#define {0}_load(p) vload{1}(0, p)\n#define {0}_store(p, v) vstore{1}(v, 0, p)\n"
                   "#endif\n",
                   v, lanes);
  s += fmt::format("static inline {0} {0}_blend({1} m, {0} a, {0} b) {{ return select(b, a, m); }}\n",
                   v, m);
  return s;
}

// Streaming stores of a GCC vector type: x86's non-temporal moves of 16, 32 or 64 bytes
// (SSE2, AVX, AVX-512F) when the address is aligned to the vector's size, else a plain
// store (other targets, or an unaligned row).
std::string gcc_stream_text(DType elem, int lanes) {
  const std::string v = vector_type_name(elem, lanes);
  const int bytes = dtype_bytes(elem) * lanes;
  const char* guard = bytes == 16 ? "__SSE2__" : bytes == 32 ? "__AVX__" : bytes == 64 ? "__AVX512F__" : nullptr;
  const char* call = bytes == 16   ? "_mm_stream_si128((__m128i*)p, (__m128i)v)"
                     : bytes == 32 ? "_mm256_stream_si256((__m256i*)p, (__m256i)v)"
                                   : "_mm512_stream_si512((void*)p, (__m512i)v)";
  std::string s = fmt::format("static inline void {0}_stream({1}* p, {0} v) {{\n", v, dtype_ctype(elem));
  if (guard)
    s += fmt::format("#if defined({0})\n  if (((uintptr_t)p & {1}) == 0) {{ {2}; return; }}\n#endif\n", guard,
                     bytes - 1, call);
  s += "  memcpy(p, &v, sizeof v);\n}\n";
  return s;
}

// exp's table, 2^(j / 8) for the lanes' j in 0..7 (f32, correctly rounded): a lane
// permutation of a table vector where the syntax has one for this width (GCC's
// __builtin_shuffle: one vpermps for 8 lanes on AVX2, a two-vector shuffle for 4), else
// (clang, other widths, OpenCL C) three levels of blends on j's bits. OpenCL C has a
// variable shuffle (`shuffle(float8, uint16)`), but PoCL 3.1 runs it lane by lane: with
// it, softmax on PoCL took 1.27 ms against the blends' 0.92 ms (1024x1024, one thread).
// OpenCL C under clang for x86 with AVX2 or AVX-512 takes vpermps through clang's x86
// builtin instead.
std::string exp2_8th_text(const std::string& v, const std::string& m, int lanes, bool gcc) {
  constexpr const char* kT[8] = {"1.0f",         "1.090507746f", "1.189207077f", "1.296839595f",
                                 "1.414213538f", "1.542210817f", "1.681792855f", "1.834008098f"};
  auto entries = [&](int from, int count, int total) {
    std::string e;
    for (int l = 0; l < total; ++l)
      e += (l ? ", " : "") + std::string(kT[from + l % count]);
    return e;
  };
  std::string s = fmt::format("static inline {0} {0}_exp2_8th({1} j) {{\n", v, m);
  // __builtin_shuffle with a variable mask is GCC's (clang, the riscv64 cross compiler,
  // has only constant-index shuffles): clang takes the blends.
  if (gcc && (lanes % 8 == 0 || lanes == 4)) {
    s += "#if !defined(__clang__)\n";
    if (lanes % 8 == 0)
      s += fmt::format("  return __builtin_shuffle(({0}){{{1}}}, j);\n", v, entries(0, 8, lanes));
    else
      s += fmt::format("  return __builtin_shuffle(({0}){{{1}}}, ({0}){{{2}}}, j);\n", v,
                       entries(0, 4, 4), entries(4, 4, 4));
    s += "#endif\n";
  }
  // OpenCL C under clang on x86 (PoCL's CPU device): the target's own lane permutation
  // (vpermps) on the table, as GCC's shuffle gives the c dialect; the same values as the
  // blends. Softmax 1024x1024 on PoCL, one thread: 0.57 -> 0.49-0.52 ms (cpu 0.48-0.50).
  if (!gcc && (lanes == 16 || lanes == 8)) {
    s += lanes == 16 ? "#if defined(__clang__) && defined(__x86_64__) && defined(__AVX512F__)\n"
                     : "#if defined(__clang__) && defined(__x86_64__) && defined(__AVX2__)\n";
    s += fmt::format("  return __builtin_ia32_permvarsf{2}(({0})({1}), j);\n", v, entries(0, 8, lanes),
                     lanes == 16 ? 512 : 256);
    s += "#endif\n";
  }
  s += fmt::format("  {0} b0 = (j & 1) != 0, b1 = (j & 2) != 0, b2 = (j & 4) != 0;\n", m);
  auto pick = [&](int a, int b) {
    return fmt::format("{0}_blend(b0, {0}_splat({2}), {0}_splat({1}))", v, kT[a], kT[b]);
  };
  s += fmt::format("  {0} t0 = {0}_blend(b1, {2}, {1}), t1 = {0}_blend(b1, {4}, {3});\n", v,
                   pick(0, 1), pick(2, 3), pick(4, 5), pick(6, 7));
  s += fmt::format("  return {0}_blend(b2, t1, t0);\n", v);
  return s + "}\n";
}

// The shuffles of an in-register transpose (CHelperSet::need_transpose), each one
// two-vector shuffle with constant lanes: clang's __builtin_shufflevector (PoCL, the
// riscv64 cross compiler), GCC's __builtin_shuffle with a constant mask (vpermt2ps and
// the like on x86, zip/uzp/ext on NEON), OpenCL's shuffle2 for other OpenCL compilers.
std::string transpose_text(const CDialect& d, DType elem, int lanes) {
  const std::string v = vector_type_name(elem, lanes), m = vector_type_name(vector_mask_elem(elem), lanes);
  const bool gcc = d.vector_syntax == VectorSyntax::Gcc;
  std::string s;
  for (int h = 1; h < lanes; h *= 2) {
    for (bool hi : {false, true}) {
      std::string idx;
      for (int j = 0; j < lanes; ++j) {
        const int k = (j & h) == 0 ? (hi ? j + h : j) : (hi ? lanes + j : lanes + j - h);
        idx += (j ? ", " : "") + std::to_string(k);
      }
      s += fmt::format("{0} {1} {1}_t{2}{3}({1} a, {1} b) {{\n#if defined(__clang__)\n"
                       "  return __builtin_shufflevector(a, b, {4});\n#else\n",
                       d.helper_qualifier, v, hi ? "hi" : "lo", h, idx);
      if (gcc)
        s += fmt::format("  return __builtin_shuffle(a, b, ({0}){{{1}}});\n", m, idx);
      else
        s += fmt::format("  return shuffle2(a, b, ({0}{1})({2}));\n", dtype_bytes(elem) == 4 ? "uint" : "ulong",
                         lanes, idx);
      s += "#endif\n}\n";
    }
  }
  return s;
}

// The vector type of `lanes` elements of `elem` and its helpers in dialect `d`'s syntax.
std::string vector_text(const CDialect& d, DType elem, int lanes) {
  UT_INTERNAL_ASSERT(d.vector_syntax != VectorSyntax::None,
                     "dialect " + std::string(d.name) + " prints no vector types");
  std::string v = vector_type_name(elem, lanes),
              m = vector_type_name(vector_mask_elem(elem), lanes);
  std::string s = d.vector_syntax == VectorSyntax::Gcc ? gcc_vector_text(elem, lanes)
                                                       : opencl_vector_text(d, elem, lanes);
  const int vbytes = dtype_bytes(elem) * lanes;
  if (is_float(elem) && elem == DType::F32 && d.vector_syntax == VectorSyntax::Gcc && vbytes == 64) {
    // 16 lanes on AVX-512: the lanes where a is a number into a mask register, then
    // maxps/minps under that mask (b when either is NaN: the inner blend) keeping a
    // elsewhere, two instructions (GCC made six of the two blends: softmax's first pass
    // does one per vector). GCC's builtins, so no intrinsics header; 7 is _CMP_ORD_Q, 4
    // _MM_FROUND_CUR_DIRECTION.
    for (const char* op : {"min", "max"})
      s += fmt::format("static inline {0} {0}_{1}({0} a, {0} b) {{\n#if defined(__AVX512F__) && !defined(__clang__)\n"
                       "  return __builtin_ia32_{1}ps512_mask(a, b, a, __builtin_ia32_cmpps512_mask(a, a, 7, "
                       "(unsigned short)0xffff, 4), 4);\n#else\n"
                       "  return {0}_blend(a != a, a, {0}_blend(a {2} b, a, b));\n#endif\n}}\n",
                       v, op, op[1] == 'i' ? "<" : ">");
  } else if (is_float(elem) && elem == DType::F32 && d.vector_syntax == VectorSyntax::Gcc &&
             (vbytes == 16 || vbytes == 32)) {
    // The same on x86 with the inner blend as one minps/maxps (`a < b ? a : b`, b when
    // either is NaN: exactly the inner blend), three instructions instead of four (a
    // max reduction, softmax's first pass, does one per vector).
    const char* guard = vbytes == 16 ? "__SSE__" : "__AVX__";
    const char* suffix = vbytes == 16 ? "ps" : "ps256";
    for (const char* op : {"min", "max"})
      s += fmt::format("static inline {0} {0}_{1}({0} a, {0} b) {{\n#if defined({2})\n"
                       "  return {0}_blend(a != a, a, __builtin_ia32_{1}{3}(a, b));\n#else\n"
                       "  return {0}_blend(a != a, a, {0}_blend(a {4} b, a, b));\n#endif\n}}\n",
                       v, op, guard, suffix, op[1] == 'i' ? "<" : ">");
  } else if (is_float(elem) && elem == DType::F32 && d.vector_syntax == VectorSyntax::OpenCL && vbytes == 64) {
    // The same two instructions in OpenCL C under clang on AVX-512 (PoCL's CPU device),
    // through clang's builtins: LLVM made four of the blends (two compares, a mask or,
    // a masked move), in softmax's max pass and every flash-attention row max.
    for (const char* op : {"min", "max"})
      s += fmt::format("static inline {0} {0}_{1}({0} a, {0} b) {{\n"
                       "#if defined(__clang__) && defined(__x86_64__) && defined(__AVX512F__)\n"
                       "  return __builtin_ia32_selectps_512(__builtin_ia32_cmpps512_mask(a, a, 7, "
                       "(ushort)0xffff, 4), __builtin_ia32_{1}ps512(a, b, 4), a);\n#else\n"
                       "  return {0}_blend(a != a, a, {0}_blend(a {2} b, a, b));\n#endif\n}}\n",
                       v, op, op[1] == 'i' ? "<" : ">");
  } else if (is_float(elem))
    // NaN in, NaN out with two compares and two blends (a max reduction does one per
    // vector): a NaN b fails `a > b` and is picked; a NaN a is picked by the outer blend.
    s += fmt::format("static inline {0} {0}_min({0} a, {0} b) {{ return {0}_blend(a != a, a, "
                     "{0}_blend(a < b, a, b)); }}\n"
                     "static inline {0} {0}_max({0} a, {0} b) {{ return {0}_blend(a != a, a, "
                     "{0}_blend(a > b, a, b)); }}\n",
                     v);
  else
    s += fmt::format(
        "static inline {0} {0}_min({0} a, {0} b) {{ return {0}_blend(a < b, a, b); }}\n"
        "static inline {0} {0}_max({0} a, {0} b) {{ return {0}_blend(a > b, a, b); }}\n",
        v);
  // x clamped to [lo, hi], NaN kept (the clamps of tanh, erf and exp's wide path). On
  // x86 under GCC one minps and one maxps with the bound first: the instruction returns
  // its second operand, x, when either is NaN. GCC made each clamp written as a blend a
  // compare and two masked xors, and erf's two clamps bound gelu on one core (1024 x
  // 1024 on the AMX Xeon: 0.45 -> 0.32 ms). Other compilers and widths keep the blends.
  if (elem == DType::F32) {
    std::string fast;
    if (d.vector_syntax == VectorSyntax::Gcc && vbytes == 64)
      fast = fmt::format("#if defined(__AVX512F__) && !defined(__clang__)\n"
                         "  const {0} c = __builtin_ia32_minps512_mask({0}_splat(hi), x, x, (unsigned short)0xffff, 4);\n"
                         "  return __builtin_ia32_maxps512_mask({0}_splat(lo), c, c, (unsigned short)0xffff, 4);\n"
                         "#else\n",
                         v);
    else if (d.vector_syntax == VectorSyntax::Gcc && (vbytes == 16 || vbytes == 32))
      fast = fmt::format("#if defined({1})\n"
                         "  return __builtin_ia32_max{2}({0}_splat(lo), __builtin_ia32_min{2}({0}_splat(hi), x));\n"
                         "#else\n",
                         v, vbytes == 16 ? "__SSE__" : "__AVX__", vbytes == 16 ? "ps" : "ps256");
    s += fmt::format("static inline {0} {0}_clamp({0} x, float lo, float hi) {{\n{1}"
                     "  const {0} c = {0}_blend(x > hi, {0}_splat(hi), x);\n"
                     "  return {0}_blend(c < lo, {0}_splat(lo), c);\n{2}}}\n",
                     v, fast, fast.empty() ? "" : "#endif\n");
  }
  // exp's test of its lanes (whether any needs the wide path): on x86 one mask move of
  // the lanes' sign bits (a GCC builtin, so no intrinsics header), else the lanes OR-ed.
  // 16 lanes of f32 (AVX-512): one test into a mask register (GCC's builtin; clang takes
  // the loop), where GCC otherwise extracted the 16 lanes one by one in every exp
  // (softmax on the AVX-512 Xeon spent more time there than in the polynomial).
  if (elem == DType::F32 && d.vector_syntax == VectorSyntax::Gcc) {
    const int bytes = dtype_bytes(elem) * lanes;
    s += fmt::format("static inline int {0}_any({1} k) {{\n", v, m);
    if (bytes == 16 || bytes == 32)
      s += fmt::format("#if defined({0})\n  return {1}(({2})k) != 0;\n#endif\n",
                       bytes == 16 ? "__SSE__" : "__AVX__",
                       bytes == 16 ? "__builtin_ia32_movmskps" : "__builtin_ia32_movmskps256", v);
    if (bytes == 64)
      s += "#if defined(__AVX512F__) && !defined(__clang__)\n"
           "  return __builtin_ia32_ptestmd512(k, k, (unsigned short)0xffff) != 0;\n#endif\n";
    s += fmt::format(
        "  int a = 0;\n  for (int l = 0; l < {0}; ++l) a |= k[l];\n  return a != 0;\n}}\n", lanes);
    s += exp2_8th_text(v, m, lanes, true);
    // 16 lanes on AVX-512: exp's lane test straight into a mask register (an and and a
    // compare), where GCC moved the compare's mask into a vector and tested that again
    // (softmax on one Zen 4 core: 1.86 -> 1.71 us a row with the max below).
    const std::string lane_test =
        bytes == 64 ? fmt::format("#if defined(__AVX512F__) && !defined(__clang__)\n"
                                  "  const unsigned short wide_lanes = __builtin_ia32_pcmpgtd512_mask(({1})n & "
                                  "0x7fffffff, ({1}){{{2}}}, (unsigned short)0xffff);\n"
                                  "  if (__builtin_expect(wide_lanes != 0, 0))\n"
                                  "    return __builtin_ia32_blendmps_512_mask(p * s + s, {0}_exp_wide(x), wide_lanes);\n"
                                  "  return p * s + s;\n"
                                  "#endif\n",
                                  v, m, splat_text("0x447c0000", 16))
                    : std::string();
    s += vector_math_f32(v, m, "__builtin_convertvector({}, " + m + ")", "(" + v + "){}",
                         "(" + m + ")({})", lane_test);
  } else if (elem == DType::F32) {
    // OR the halves together down to one lane: PoCL's any() on wide vectors
    // (int16) tests the lanes one by one, in every exp.
    s += fmt::format("static inline int {0}_any({1} k) {{\n", v, m);
    std::string cur = "k";
    for (int w = lanes; w > 1; w /= 2) {
      const std::string next = fmt::format("h{}", w / 2);
      s += w / 2 > 1 ? fmt::format("  const int{} {} = {}.lo | {}.hi;\n", w / 2, next, cur, cur)
                     : fmt::format("  const int {} = {}.lo | {}.hi;\n", next, cur, cur);
      cur = next;
    }
    s += fmt::format("  return {} != 0;\n}}\n", cur);
    s += exp2_8th_text(v, m, lanes, false);
    // 16 lanes under clang on AVX-512: exp's lane test into a mask register and the
    // blend under it, as the c dialect does with GCC's builtins (the OR of the halves
    // above is an extract, an or and a vector test per exp).
    const std::string lane_test =
        lanes == 16 ? fmt::format("#if defined(__clang__) && defined(__x86_64__) && defined(__AVX512F__)\n"
                                  "  const ushort wide_lanes = __builtin_ia32_cmpd512_mask(as_int16(n) & "
                                  "0x7fffffff, ({1})(0x447c0000), 6, (ushort)0xffff);\n"
                                  "  if (__builtin_expect(wide_lanes != 0, 0))\n"
                                  "    return __builtin_ia32_selectps_512(wide_lanes, {0}_exp_wide(x), p * s + s);\n"
                                  "  return p * s + s;\n"
                                  "#endif\n",
                                  v, m)
                    : std::string();
    s += vector_math_f32(v, m, fmt::format("convert_int{}({{}})", lanes),
                         fmt::format("as_float{}({{}})", lanes),
                         fmt::format("as_int{}({{}})", lanes), lane_test);
  }
  return s;
}

} // namespace

std::string vector_type_name(DType elem, int lanes) {
  return fmt::format("ut_v{}{}", lanes, dtype_name(elem));
}

DType vector_mask_elem(DType elem) {
  switch (dtype_bytes(elem)) {
  case 1:
    return DType::I8;
  case 8:
    return DType::I64;
  default:
    return DType::I32;
  }
}

void CHelperSet::need(std::string_view name) {
  const auto& table = scalar_helpers();
  auto it = table.find(name);
  UT_INTERNAL_ASSERT(it != table.end(), "unknown C helper " + std::string(name));
  if (!scalars_.insert(std::string(name)).second)
    return;
  for (const auto& d : it->second.deps)
    need(d);
}

// f16 / bf16 lanes as f32 vectors (CHelperSet::need_half_lanes), branch-free versions of
// the scalar conversions above that give the same bits for every input:
// - f16 -> f32: normal numbers rebias the exponent (+112); exponent 31 keeps the payload
//   under an all-ones exponent; zeros and subnormals are m * 2^-24, exact in f32.
// - f32 -> f16, round to nearest even: NaN keeps the top of its payload and goes quiet;
//   |f| >= 65520 overflows to inf; normal results round like the scalar code (add 0xfff
//   plus the kept bit's parity, shift by 13); smaller ones are |f| + 0.5, whose low
//   mantissa bits are then the subnormal half rounded by the FPU's own nearest-even add.
// - bf16: the high half of the f32 bits, NaN made quiet, others rounded to nearest even.
static std::string half_lanes_text(const CDialect& d, DType elem, int lanes) {
  UT_INTERNAL_ASSERT(d.vector_syntax == VectorSyntax::Gcc,
                     "half lanes need GCC vector syntax, not dialect " + std::string(d.name));
  const std::string n = std::to_string(lanes), f = vector_type_name(DType::F32, lanes);
  const std::string h = "ut_v" + n + "u16", u = "ut_v" + n + "u32";
  const std::string name = "ut_v" + n + (elem == DType::F16 ? "f16" : "bf16");
  std::string s = fmt::format(
      "#ifndef UT_HAVE_{0}\n#define UT_HAVE_{0}\ntypedef uint16_t {0} __attribute__((vector_size({2})));\n#endif\n"
      "#ifndef UT_HAVE_{1}\n#define UT_HAVE_{1}\ntypedef uint32_t {1} __attribute__((vector_size({3})));\n#endif\n",
      h, u, 2 * lanes, 4 * lanes);
  std::string unpack, pack;
  if (elem == DType::F16) {
    unpack = fmt::format(R"(static inline {0} {2}_unpack({3} v) {{
  {1} x = __builtin_convertvector(v, {1});
  {1} sign = (x & 0x8000u) << 16, em = x & 0x7fffu, e = em >> 10;
  {1} normal = (em << 13) + (112u << 23), special = (em << 13) | 0x7f800000u;
  {0} tiny = __builtin_convertvector(em, {0}) * 5.9604644775390625e-8f;
  {1} r = ({1})(e == 0u) & ({1})tiny;
  r |= ({1})(e == 31u) & special;
  r |= ({1})((e != 0u) & (e != 31u)) & normal;
  return ({0})(r | sign);
}}
)",
                         f, u, name, h);
    pack = fmt::format(R"(static inline {3} {2}_pack({0} v) {{
  {1} x = ({1})v, a = x & 0x7fffffffu, sign = (x >> 16) & 0x8000u;
  {1} rn = a - 0x38000000u;
  rn = (rn + 0xfffu + ((rn >> 13) & 1u)) >> 13;
  {1} sub = ({1})(({0})a + 0.5f) - 0x3f000000u;
  {1} r = ({1})(a < 0x38800000u) & sub;
  r |= ({1})((a >= 0x38800000u) & (a < 0x47800000u)) & rn;
  r |= ({1})((a >= 0x47800000u) & (a <= 0x7f800000u)) & 0x7c00u;
  r |= ({1})(a > 0x7f800000u) & (0x7e00u | ((a >> 13) & 0x3ffu));
  return __builtin_convertvector(r | sign, {3});
}}
)",
                       f, u, name, h);
  } else {
    unpack = fmt::format("static inline {0} {2}_unpack({3} v) {{ return ({0})(__builtin_convertvector(v, {1}) << 16); }}\n",
                         f, u, name, h);
    pack = fmt::format(R"(static inline {3} {2}_pack({0} v) {{
  {1} x = ({1})v;
  {1} r = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  {1} nan = ({1})((x & 0x7fffffffu) > 0x7f800000u);
  r = (r & ~nan) | (((x >> 16) | 0x40u) & nan);
  return __builtin_convertvector(r, {3});
}}
)",
                       f, u, name, h);
  }
  s += unpack + pack;
  s += fmt::format(
      "static inline {0} {1}_load(const uint16_t* p) {{ {2} v; memcpy(&v, p, sizeof v); return {1}_unpack(v); }}\n"
      "static inline void {1}_store(uint16_t* p, {0} x) {{ {2} v = {1}_pack(x); memcpy(p, &v, sizeof v); }}\n"
      "static inline {0} {1}_round({0} x) {{ return {1}_unpack({1}_pack(x)); }}\n",
      f, name, h);
  constexpr std::string_view kQualifier = "static inline";
  for (size_t p = 0; (p = s.find(kQualifier, p)) != std::string::npos; p += d.helper_qualifier.size())
    s.replace(p, kQualifier.size(), d.helper_qualifier);
  return s;
}

std::string CHelperSet::need_vector(DType elem, int lanes) {
  UT_INTERNAL_ASSERT(dtype_ctype(elem) != nullptr,
                     "no vector type for " + std::string(dtype_name(elem)));
  UT_INTERNAL_ASSERT(lanes > 1 && (lanes & (lanes - 1)) == 0,
                     "vector lanes must be a power of two");
  vectors_.insert({static_cast<int>(elem), lanes});
  return vector_type_name(elem, lanes);
}

std::string CHelperSet::need_transpose(DType elem, int lanes) {
  UT_INTERNAL_ASSERT(dtype_bytes(elem) == 4 || dtype_bytes(elem) == 8,
                     "no transpose shuffles of " + std::string(dtype_name(elem)));
  transposes_.insert({static_cast<int>(elem), lanes});
  return need_vector(elem, lanes);
}

std::string CHelperSet::need_half_lanes(DType elem, int lanes) {
  UT_INTERNAL_ASSERT(elem == DType::F16 || elem == DType::BF16,
                     "no half lanes of " + std::string(dtype_name(elem)));
  need_vector(DType::F32, lanes);
  halves_.insert({static_cast<int>(elem), lanes});
  return fmt::format("ut_v{}{}", lanes, elem == DType::F16 ? "f16" : "bf16");
}

std::string CHelperSet::need_lane_math(DType elem, int lanes, MathFn fn) {
  UT_INTERNAL_ASSERT(has_lane_math(fn, elem), std::string("no lane-wise ") + math_fn_name(fn) +
                                                  " of " + std::string(dtype_name(elem)));
  std::string v = need_vector(elem, lanes);
  lane_math_[{static_cast<int>(elem), lanes}].insert(math_fn_name(fn));
  return v + "_" + math_fn_name(fn);
}

// Helper `name`'s definition in dialect `d`.
static std::string helper_text(const CDialect& d, const std::string& name,
                               const std::string& generic) {
  for (const auto& [n, text] : d.helper_overrides)
    if (n == name)
      return std::string(text);
  constexpr std::string_view kQualifier = "static inline";
  std::string s = generic;
  if (d.helper_qualifier != kQualifier && s.rfind(kQualifier, 0) == 0)
    s.replace(0, kQualifier.size(), d.helper_qualifier);
  return s;
}

std::string CHelperSet::text(const CDialect& d) const {
  // Dependencies never come after their users: the conversions first, then the rest.
  static const std::vector<std::string> first = {"ut_f16_to_f32", "ut_f32_to_f16", "ut_bf16_to_f32",
                                                 "ut_f32_to_bf16"};
  const auto& table = scalar_helpers();
  std::string s;
  for (const auto& name : first)
    if (scalars_.count(name))
      s += helper_text(d, name, table.find(name)->second.text);
  for (const auto& name : scalars_)
    if (std::find(first.begin(), first.end(), name) == first.end())
      s += helper_text(d, name, table.find(name)->second.text);
  // The vector helpers are static and inlined, so their calling convention never meets
  // other code: GCC's note that wide vectors change the ABI without -mavx is moot here.
  if (!vectors_.empty() && d.vector_syntax == VectorSyntax::Gcc)
    s += "#pragma GCC diagnostic ignored \"-Wpsabi\"\n";
  // The non-temporal store intrinsics. Such stores are weakly ordered: the launcher
  // (the cpu plugin) fences them once per run of blocks, before it reports completion.
  if (stream_ && d.vector_syntax == VectorSyntax::Gcc)
    s += "#if defined(__SSE2__)\n#include <immintrin.h>\n#endif\n";
  for (auto [elem, lanes] : vectors_) {
    s += vector_text(d, static_cast<DType>(elem), lanes);
    if (stream_ && d.vector_syntax == VectorSyntax::Gcc)
      s += gcc_stream_text(static_cast<DType>(elem), lanes);
  }
  for (const auto& [type, names] : lane_math_)
    s += lane_math_text(d, static_cast<DType>(type.first), type.second, names);
  for (auto [elem, lanes] : halves_)
    s += half_lanes_text(d, static_cast<DType>(elem), lanes);
  for (auto [elem, lanes] : transposes_)
    s += transpose_text(d, static_cast<DType>(elem), lanes);
  return s;
}

} // namespace unitile::codegen
