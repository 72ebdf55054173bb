// Bit-exact conversions between f32 and the two 16-bit float storage formats (f16, bf16).
//
// Written out by hand rather than through _Float16 or __bf16 so that random inputs and
// .npy contents are identical on every compiler and target, round-to-nearest-even.
#pragma once

#include <cstdint>

namespace unitile {

uint16_t f32_to_f16_bits(float f);
float f16_bits_to_f32(uint16_t h);
uint16_t f32_to_bf16_bits(float f);
float bf16_bits_to_f32(uint16_t b);

} // namespace unitile
