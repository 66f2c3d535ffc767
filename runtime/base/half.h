// IEEE 754 binary16 ("half", fp16) conversions, written out in integer arithmetic so that every
// compiler and CPU gives the same bits (no F16C or _Float16 needed). Device memory keeps an fp16
// tensor's elements in float containers whose values are always binary16 values; these functions
// make them so (docs/executable_format.md, "FLOAT16").
#pragma once

#include <cstdint>

namespace ipu {

// The largest finite binary16 value.
inline constexpr float kHalfMax = 65504.0f;

// `value` rounded to the nearest binary16 value, ties to even: magnitudes from 65520 up become
// infinities, subnormals (multiples of 2^-24 below 2^-14) are kept, a NaN stays a quiet NaN of
// the same sign.
uint16_t float_to_half_bits(float value);
// Exact: every binary16 value is a float.
float half_bits_to_float(uint16_t bits);
inline float round_to_half(float value) {
  return half_bits_to_float(float_to_half_bits(value));
}

// Stochastic rounding: `value` rounded to one of the two binary16 values around it, away from
// zero with probability equal to its distance from the one toward zero as a fraction of the gap
// between them, so the expected result is `value`. `random` is a uniformly distributed 32-bit
// number; the result rounds away from zero when random < fraction × 2^32. Magnitudes above 65504
// round between 65504 and infinity as if infinity were 65536 (the next power of the binade's
// spacing), and from 65536 up are infinite. A binary16 value, an infinity or a NaN is returned as
// round_to_half returns it.
float round_to_half_stochastic(float value, uint32_t random);

} // namespace ipu
