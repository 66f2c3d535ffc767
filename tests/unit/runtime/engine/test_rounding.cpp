// The engine's rounding of a tensor to binary16 (runtime/engine/rounding.h): each vectorised loop
// this CPU runs gives each element the bits of the scalar round_to_half (which test_half.cpp
// checks against the conversions), at every alignment and length a range can have.
#include <doctest/doctest.h>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/base/half.h"
#include "runtime/base/splitmix64.h"
#include "runtime/engine/rounding.h"

namespace {

// Floats where rounding decides: each sign, exponent and kept mantissa with chosen dropped bits,
// and random bit patterns (NaNs, infinities and subnormals among them).
std::vector<float> hard_cases() {
  std::vector<float> values;
  constexpr uint32_t kDroppedBits[] = {0x0000, 0x0001, 0x0fff, 0x1000, 0x1001, 0x1fff};
  for (uint32_t kept = 0; kept < (1u << 19); kept += 3) {
    for (uint32_t dropped : kDroppedBits)
      values.push_back(std::bit_cast<float>((kept << 13) | dropped));
  }
  for (uint64_t i = 0; i < 100000; ++i)
    values.push_back(std::bit_cast<float>(static_cast<uint32_t>(ipu::splitmix64(11, i))));
  return values;
}

TEST_CASE("rounding: a range rounds to nearest as round_to_half rounds each element") {
  const std::vector<float> input = hard_cases();
  std::vector<uint32_t> expected(input.size());
  for (size_t i = 0; i < input.size(); ++i)
    expected[i] = std::bit_cast<uint32_t>(ipu::round_to_half(input[i]));
  // The engine's entry point (the widest loop), then each loop this CPU runs.
  std::vector<std::pair<std::string, std::function<void(float*, uint64_t, uint64_t)>>> rounders{
      {"round_to_half", [](float* data, uint64_t begin, uint64_t end) {
         ipu::engine::round_to_half(data, begin, end, nullptr);
       }}};
  for (const ipu::engine::NearestRoundingLoop& loop : ipu::engine::nearest_rounding_loops()) {
    rounders.emplace_back(loop.isa, [round = loop.round](float* data, uint64_t begin, uint64_t end) {
      round(data + begin, end - begin);
    });
  }
  // Ranges that start and end off any vector boundary, and ranges shorter than one vector.
  struct Range {
    uint64_t begin, end;
  };
  for (const auto& rounder : rounders) {
    for (const Range range :
         {Range{0, input.size()}, Range{3, input.size() - 5}, Range{17, 18}, Range{1, 16}, Range{29, 29}}) {
      const uint64_t begin = range.begin, end = range.end;
      std::vector<float> data = input;
      rounder.second(data.data(), begin, end);
      size_t differ = 0;
      for (size_t i = 0; i < data.size(); ++i) {
        const uint32_t want = i >= begin && i < end ? expected[i] : std::bit_cast<uint32_t>(input[i]);
        if (std::bit_cast<uint32_t>(data[i]) != want) ++differ;
      }
      CHECK_MESSAGE(differ == 0, rounder.first << ", range [" << begin << ", " << end << ")");
    }
  }
}

} // namespace
