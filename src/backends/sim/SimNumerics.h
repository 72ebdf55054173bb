// The sim device's scalar semantics: the reference every other device is compared to.
//
// Values: every float-typed value is a double and every integer or bool value an
// int64_t while a kernel runs; nothing is rounded to a narrower type inside an
// expression except by an explicit cast. Precisely:
//  - float arithmetic is done in double (f16/bf16/f32 operands included);
//  - float-typed allocations (register, local, shared) keep doubles, so accumulators
//    are f64 wherever the dtype allows; integer allocations keep the value wrapped to
//    their dtype;
//  - a store to a global buffer rounds to its dtype: f32 by a float cast (round to
//    nearest even), f16 and bf16 round to nearest even from that f32 value (so a double
//    is rounded twice, as a device computing in f32 would), integers wrap to the width
//    (two's complement; u8 modulo 256), bool stores `value != 0`;
//  - integer arithmetic is int64 with two's-complement wrap-around; Div truncates toward
//    zero, FloorDiv floors, Mod has the sign of the divisor (Python); integer division
//    or modulo by zero is a launch error; INT64_MIN / -1 wraps to INT64_MIN;
//  - float FloorDiv is floor(a / b), float Mod is Python's (fmod, moved to the sign of
//    the divisor);
//  - casts: float -> integer truncates toward zero (NaN gives 0, values beyond the
//    int64 range saturate) and then wraps to the width; integer -> integer wraps;
//    anything -> bool is `!= 0` (NaN is true); -> f32/f16/bf16 rounds to that type
//    (the program asked for it); -> f64 converts;
//  - math: sigmoid = 1/(1+exp(-x)), rsqrt = 1/sqrt(x), round = half to even
//    (nearbyint), sign in {-1, 0, 1} (NaN stays NaN), isnan/isinf are bools and false
//    for integers, min/max propagate NaN (either operand NaN gives NaN; otherwise
//    max(a, b) = a > b ? a : b and min(a, b) = a < b ? a : b), abs/min/max/sign on
//    integers are integer operations, other functions on integers compute in double
//    and convert back like a cast;
//  - `&&`, `||` and `c ? a : b` evaluate only what C would (short circuit), so a guard
//    condition protects an access behind it.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace unitile::sim {

// ---- 16-bit floats, exact round-to-nearest-even from f32 ----

inline uint16_t f32_to_f16_bits(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t a = x & 0x7fffffffu;
  if (a > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu)); // NaN stays NaN (quiet)
  if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u); // >= 65520 rounds to inf
  if (a < 0x38800000u) {
    // Below the smallest normal half (2^-14): a subnormal, in units of 2^-24. The
    // scaling by 2^24 is exact and nearbyint rounds half to even.
    float scaled = std::bit_cast<float>(a) * 16777216.0f;
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(scaled)));
  }
  uint32_t h = ((a >> 23) - 112u) << 10 | ((a >> 13) & 0x3ffu);
  uint32_t rest = a & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h; // a carry into the exponent is right
  return static_cast<uint16_t>(sign | h);
}

inline float f16_bits_to_f32(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu;
  uint32_t m = h & 0x3ffu;
  if (e == 0) {
    float v = static_cast<float>(m) * 5.9604644775390625e-8f; // m * 2^-24, exact
    return sign ? -v : v;
  }
  if (e == 31) return std::bit_cast<float>(sign | 0x7f800000u | (m << 13));
  return std::bit_cast<float>(sign | ((e + 112u) << 23) | (m << 13));
}

inline uint16_t f32_to_bf16_bits(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u); // quiet NaN
  x += 0x7fffu + ((x >> 16) & 1u); // round to nearest even; overflow carries into inf
  return static_cast<uint16_t>(x >> 16);
}

inline float bf16_bits_to_f32(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

inline double round_to_f32(double v) { return static_cast<double>(static_cast<float>(v)); }
inline double round_to_f16(double v) { return f16_bits_to_f32(f32_to_f16_bits(static_cast<float>(v))); }
inline double round_to_bf16(double v) { return bf16_bits_to_f32(f32_to_bf16_bits(static_cast<float>(v))); }

// ---- integers ----

/// Float -> int64: truncate toward zero, NaN -> 0, saturate outside the int64 range.
inline int64_t float_to_int(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9223372036854775808.0) return std::numeric_limits<int64_t>::max();
  if (v < -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

inline int64_t wrap_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
inline int64_t wrap_sub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
inline int64_t wrap_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
inline int64_t wrap_neg(int64_t a) { return static_cast<int64_t>(0 - static_cast<uint64_t>(a)); }

/// Truncating division for b != 0; INT64_MIN / -1 wraps.
inline int64_t trunc_div(int64_t a, int64_t b) {
  if (b == -1) return wrap_neg(a);
  return a / b;
}
inline int64_t floor_div(int64_t a, int64_t b) {
  if (b == -1) return wrap_neg(a);
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
/// Python modulo: the result has the sign of the divisor.
inline int64_t floor_mod(int64_t a, int64_t b) {
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

inline double float_floor_div(double a, double b) { return std::floor(a / b); }
inline double float_mod(double a, double b) {
  double r = std::fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

inline double nan_max(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
  return a > b ? a : b;
}
inline double nan_min(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
  return a < b ? a : b;
}
inline double float_sign(double x) {
  if (std::isnan(x)) return x;
  return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0);
}

} // namespace unitile::sim
