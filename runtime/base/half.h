// IEEE 754 binary16 ("half", fp16) conversions, written out in integer arithmetic so that every
// compiler and CPU gives the same bits (no F16C or _Float16 needed). Device memory keeps an fp16
// tensor's elements in float containers whose values are always binary16 values; these functions
// make them so (docs/executable_format.md, "FLOAT16").
#pragma once

#include <bit>
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

// half_bits_to_float(float_to_half_bits(value)) for every float (test_half.cpp checks it), in
// float and integer operations without a branch, so that a loop over a tensor vectorises: the
// engine rounds every value a compute set writes to an fp16 tensor.
inline float round_to_half(float value) {
  constexpr uint32_t kSignMask = 0x80000000u;
  constexpr uint32_t kInfinity = 0x7f800000u;
  constexpr uint32_t kMinHalfNormal = 0x38800000u; // 2^-14
  constexpr uint32_t kHalfOverflow = 0x477ff000u;  // 65520: halfway from 65504 to 65536
  constexpr uint32_t kDroppedBits = 0x1fffu;       // the float mantissa's 13 bits below a half's
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const uint32_t magnitude = bits & ~kSignMask;
  // A normal half keeps the top 10 of the float's 23 mantissa bits: add just under half a unit,
  // plus one if the kept part is odd (ties to even), then drop the rest. A carry out of the
  // mantissa moves to the next binade, as it should.
  const uint32_t normal = (magnitude + (kDroppedBits >> 1) + ((magnitude >> 13) & 1u)) & ~kDroppedBits;
  // A subnormal half is a multiple of 2^-24, the float spacing at 0.5: adding 0.5 rounds to
  // one, ties to even, in the default rounding mode; subtracting it again is exact.
  const uint32_t subnormal = std::bit_cast<uint32_t>((std::bit_cast<float>(magnitude) + 0.5f) - 0.5f);
  // A NaN becomes quiet, keeping the top 10 bits of its payload.
  const uint32_t nan = kInfinity | 0x400000u | (bits & 0x7fe000u);
  // Compared as signed integers (a magnitude is below 2^31), which SSE2 has and unsigned lacks.
  const auto signed_magnitude = static_cast<int32_t>(magnitude);
  uint32_t rounded = signed_magnitude < static_cast<int32_t>(kMinHalfNormal) ? subnormal : normal;
  rounded = signed_magnitude >= static_cast<int32_t>(kHalfOverflow) ? kInfinity : rounded;
  rounded = signed_magnitude > static_cast<int32_t>(kInfinity) ? nan : rounded;
  return std::bit_cast<float>((bits & kSignMask) | rounded);
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
