// binary16 conversions (runtime/base/half.h): round to nearest even at every boundary the format
// has, and stochastic rounding whose mean is the value.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "runtime/base/half.h"
#include "runtime/base/splitmix64.h"

namespace {

using ipu::float_to_half_bits;
using ipu::half_bits_to_float;
using ipu::round_to_half;
using ipu::round_to_half_stochastic;

TEST_CASE("half: every binary16 value converts to a float and back unchanged") {
  for (uint32_t bits = 0; bits <= 0xffffu; ++bits) {
    const auto h = static_cast<uint16_t>(bits);
    const float f = half_bits_to_float(h);
    if (std::isnan(f)) {
      CHECK((float_to_half_bits(f) & 0x7e00u) == 0x7e00u); // a quiet NaN
      continue;
    }
    CHECK(float_to_half_bits(f) == h);
  }
}

// round_to_half is written apart from the two conversions, for speed. It was checked by hand on
// all 2^32 floats (docs/executable_format.md, "FLOAT16"). Here, about 10 million: every sign,
// exponent and kept mantissa, each with the dropped bits that decide its rounding; floats from
// 2^-25 to 2^-14, where subnormal halves round; and every tie between subnormal halves.
TEST_CASE("half: round_to_half equals the conversion there and back") {
  const auto there_and_back = [](float value) { return half_bits_to_float(float_to_half_bits(value)); };
  uint64_t differ = 0;
  const auto check = [&](uint32_t bits) {
    const float value = std::bit_cast<float>(bits);
    if (std::bit_cast<uint32_t>(round_to_half(value)) != std::bit_cast<uint32_t>(there_and_back(value)))
      ++differ;
  };
  constexpr uint32_t kDroppedBits[] = {0x0000, 0x0001, 0x0fff, 0x1000, 0x1001, 0x1fff, 0x0a5a, 0x15a5};
  for (uint32_t kept = 0; kept < (1u << 19); ++kept) {
    for (uint32_t dropped : kDroppedBits)
      check((kept << 13) | dropped);
  }
  for (uint32_t bits = 0x33000000u; bits < 0x38800000u; bits += 31) { // 2^-25 to 2^-14
    check(bits);
    check(bits | 0x80000000u);
  }
  const float unit = std::ldexp(1.0f, -24);
  for (int k = 0; k < 1024; ++k) { // the ties between subnormal halves
    check(std::bit_cast<uint32_t>((static_cast<float>(k) + 0.5f) * unit));
    check(std::bit_cast<uint32_t>(-(static_cast<float>(k) + 0.5f) * unit));
  }
  CHECK(differ == 0);
}

TEST_CASE("half: known encodings") {
  CHECK(float_to_half_bits(1.0f) == 0x3c00);
  CHECK(float_to_half_bits(-2.0f) == 0xc000);
  CHECK(float_to_half_bits(65504.0f) == 0x7bff);
  CHECK(float_to_half_bits(0.0f) == 0x0000);
  CHECK(float_to_half_bits(-0.0f) == 0x8000);
  CHECK(float_to_half_bits(std::ldexp(1.0f, -14)) == 0x0400); // the smallest normal
  CHECK(float_to_half_bits(std::ldexp(1.0f, -24)) == 0x0001); // the smallest subnormal
  CHECK(half_bits_to_float(0x3555) == doctest::Approx(0.33325195f).epsilon(1e-9));
}

TEST_CASE("half: ties round to even, others to nearest") {
  // Between 1 and 1 + 2^-10: the tie goes to 1 (even), just above it to 1 + 2^-10.
  const float ulp = std::ldexp(1.0f, -10);
  CHECK(round_to_half(1.0f + ulp / 2) == 1.0f);
  CHECK(round_to_half(std::nextafter(1.0f + ulp / 2, 2.0f)) == 1.0f + ulp);
  CHECK(round_to_half(std::nextafter(1.0f + ulp / 2, 0.0f)) == 1.0f);
  // Between 1 + 2^-10 (odd) and 1 + 2^-9: the tie goes up to the even one.
  CHECK(round_to_half(1.0f + 1.5f * ulp) == 1.0f + 2 * ulp);
  CHECK(round_to_half(-(1.0f + 1.5f * ulp)) == -(1.0f + 2 * ulp));
  // A carry out of the mantissa moves to the next binade.
  CHECK(round_to_half(2.0f - ulp / 4) == 2.0f);
  CHECK(round_to_half(0.1f) == 0.0999755859375f);
}

TEST_CASE("half: overflow rounds to infinity from 65520, the tie above 65504") {
  CHECK(round_to_half(65504.0f) == 65504.0f);
  CHECK(round_to_half(65519.99f) == 65504.0f);
  CHECK(std::isinf(round_to_half(65520.0f)));
  CHECK(round_to_half(-70000.0f) == -std::numeric_limits<float>::infinity());
  CHECK(round_to_half(std::numeric_limits<float>::infinity()) == std::numeric_limits<float>::infinity());
  CHECK(round_to_half(-std::numeric_limits<float>::infinity()) == -std::numeric_limits<float>::infinity());
}

TEST_CASE("half: subnormals are kept and rounded to multiples of 2^-24") {
  const float unit = std::ldexp(1.0f, -24);
  CHECK(round_to_half(3 * unit) == 3 * unit);
  CHECK(round_to_half(2.5f * unit) == 2 * unit); // tie to even
  CHECK(round_to_half(3.5f * unit) == 4 * unit); // tie to even
  CHECK(round_to_half(0.5f * unit) == 0.0f);     // tie to even (zero)
  CHECK(round_to_half(0.51f * unit) == unit);
  CHECK(round_to_half(-1023.6f * unit) == -1024 * unit); // up into the smallest normal
  CHECK(round_to_half(std::ldexp(1.0f, -130)) == 0.0f);
  CHECK(std::signbit(round_to_half(-std::ldexp(1.0f, -130))));
}

TEST_CASE("half: NaN stays NaN of its sign") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  CHECK(std::isnan(round_to_half(nan)));
  CHECK(std::signbit(round_to_half(-nan)));
  CHECK(std::isnan(round_to_half_stochastic(nan, 0)));
}

TEST_CASE("half: stochastic rounding picks a neighbour with the right probability") {
  const float ulp = std::ldexp(1.0f, -10);
  const float value = 1.0f + 0.25f * ulp; // a quarter of the way from 1 to the next half
  CHECK(round_to_half_stochastic(value, 0) == 1.0f + ulp);
  CHECK(round_to_half_stochastic(value, 0x3fffffffu) == 1.0f + ulp);
  CHECK(round_to_half_stochastic(value, 0x40000000u) == 1.0f);
  CHECK(round_to_half_stochastic(-value, 0) == -(1.0f + ulp));
  // binary16 values are left alone, whatever the random number.
  CHECK(round_to_half_stochastic(1.0f, 0) == 1.0f);
  CHECK(round_to_half_stochastic(65504.0f, 0) == 65504.0f);
  CHECK(std::isinf(round_to_half_stochastic(65536.0f, 0xffffffffu)));
  CHECK(round_to_half_stochastic(65520.0f, 0x7fffffffu) == std::numeric_limits<float>::infinity());
  CHECK(round_to_half_stochastic(65520.0f, 0x80000000u) == 65504.0f);
  const float unit = std::ldexp(1.0f, -24);
  CHECK(round_to_half_stochastic(0.75f * unit, 0xbfffffffu) == unit);
  CHECK(round_to_half_stochastic(0.75f * unit, 0xc0000000u) == 0.0f);
}

TEST_CASE("half: stochastic rounding has no bias where nearest rounding has one") {
  // 10^6 values a third of the way between neighbours: nearest rounding always rounds down,
  // stochastic rounding's mean error is 0 within a few standard errors (σ ≈ 0.47 ulp / 1000).
  const float ulp = std::ldexp(1.0f, -10);
  double stochastic_error = 0, nearest_error = 0;
  constexpr int kCount = 1000000;
  for (int i = 0; i < kCount; ++i) {
    const float value = 1.0f + static_cast<float>(i % 512) * ulp + ulp / 3;
    const auto random = static_cast<uint32_t>(ipu::splitmix64(7, static_cast<uint64_t>(i)) >> 32);
    stochastic_error += static_cast<double>(round_to_half_stochastic(value, random)) - value;
    nearest_error += static_cast<double>(round_to_half(value)) - value;
  }
  CHECK(std::abs(stochastic_error / kCount) < 0.005 * ulp);
  CHECK(nearest_error / kCount == doctest::Approx(-ulp / 3).epsilon(1e-3));
}

} // namespace
