#include "runtime/base/half.h"

#include <bit>
#include <cmath>

namespace ipu {
namespace {

constexpr uint32_t kFloatSignMask = 0x80000000u;
constexpr uint32_t kFloatInfinity = 0x7f800000u;
constexpr uint32_t kFloatMinHalfNormal = 0x38800000u; // 2^-14
constexpr uint32_t kFloatHalfOverflow = 0x477ff000u;  // 65520: halfway from 65504 to 65536
constexpr uint32_t kFloatTwoToThe16 = 0x47800000u;    // 65536
constexpr uint16_t kHalfInfinity = 0x7c00u;

// The magnitude of a finite float below 65536 in binary16 units, rounded toward zero, and the
// remainder below that unit as a fraction of it (exact in double).
struct Truncated {
  uint16_t bits = 0;
  double fraction = 0;
};

Truncated truncate_to_half(uint32_t magnitude) {
  const uint32_t exponent = magnitude >> 23;
  const uint32_t mantissa = magnitude & 0x7fffffu;
  if (magnitude < kFloatMinHalfNormal) {
    // A subnormal half counts units of 2^-24: the float is mantissa × 2^(exponent - 150) with
    // its implicit bit, mantissa × 2^-shift units.
    if (exponent == 0) return {0, std::ldexp(static_cast<double>(mantissa), -149 + 24)};
    const uint32_t significand = mantissa | 0x800000u;
    const uint32_t shift = 126 - exponent;
    if (shift >= 32) return {0, std::ldexp(static_cast<double>(significand), -static_cast<int>(shift))};
    const uint32_t rest = significand & ((1u << shift) - 1);
    return {static_cast<uint16_t>(significand >> shift),
            std::ldexp(static_cast<double>(rest), -static_cast<int>(shift))};
  }
  const auto bits = static_cast<uint16_t>(((exponent - 112) << 10) | (mantissa >> 13));
  return {bits, static_cast<double>(mantissa & 0x1fffu) / 8192.0};
}

uint16_t nan_bits(uint32_t bits) {
  // Quiet, keeping the sign and the top of the payload.
  return static_cast<uint16_t>(((bits >> 16) & 0x8000u) | 0x7e00u | ((bits >> 13) & 0x3ffu));
}

} // namespace

uint16_t float_to_half_bits(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & ~kFloatSignMask;
  if (magnitude > kFloatInfinity) return nan_bits(bits);
  if (magnitude >= kFloatHalfOverflow) return sign | kHalfInfinity;
  const Truncated t = truncate_to_half(magnitude);
  // Ties to even; a carry out of the mantissa moves to the next binade, as it should.
  const bool up = t.fraction > 0.5 || (t.fraction == 0.5 && (t.bits & 1u) != 0);
  return static_cast<uint16_t>(sign | (t.bits + (up ? 1 : 0)));
}

float half_bits_to_float(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  const uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0) {
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign != 0 ? -magnitude : magnitude;
  }
  if (exponent == 0x1f) return std::bit_cast<float>(sign | kFloatInfinity | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

float round_to_half_stochastic(float value, uint32_t random) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const uint32_t magnitude = bits & ~kFloatSignMask;
  if (magnitude > kFloatInfinity) return round_to_half(value);
  const auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  if (magnitude >= kFloatTwoToThe16) return half_bits_to_float(sign | kHalfInfinity);
  const Truncated t = truncate_to_half(magnitude);
  // 65504 < |value| < 65536: the gap to "65536" is one unit of the top binade, 32.
  const bool up = static_cast<double>(random) < t.fraction * 4294967296.0;
  return half_bits_to_float(static_cast<uint16_t>(sign | (t.bits + (up ? 1 : 0))));
}

} // namespace ipu
