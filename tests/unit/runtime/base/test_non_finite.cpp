// all_finite and first_non_finite (runtime/base/non_finite.h) against std::isfinite, element by
// element, with the NaN or infinity at every position of a few blocks.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "runtime/base/non_finite.h"

namespace {

TEST_CASE("non_finite: the first NaN or infinity at any position, or none") {
  const float specials[] = {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            -std::numeric_limits<float>::quiet_NaN()};
  // Past two blocks of 4096, so a hit in the second block and in a partial last block is seen.
  std::vector<float> values(9000);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = (i % 2 == 0 ? 1.0f : -1.0f) * std::numeric_limits<float>::max() / static_cast<float>(i + 1);
  values[17] = 0.0f;
  values[18] = -0.0f;
  values[19] = std::numeric_limits<float>::denorm_min();
  CHECK(ipu::all_finite(values));
  CHECK(!ipu::first_non_finite(values));
  CHECK(ipu::all_finite({}));

  for (const size_t at : {size_t{0}, size_t{5}, size_t{4095}, size_t{4096}, size_t{8191}, size_t{8999}}) {
    for (const float special : specials) {
      std::vector<float> hit = values;
      hit[at] = special;
      CHECK(!ipu::all_finite(hit));
      CHECK(ipu::first_non_finite(hit) == at);
      if (at + 1 < hit.size()) {
        hit.back() = special; // a later one does not move the first
        CHECK(ipu::first_non_finite(hit) == at);
      }
      CHECK(ipu::all_finite(std::span<const float>(hit).first(at)));
    }
  }
}

} // namespace
