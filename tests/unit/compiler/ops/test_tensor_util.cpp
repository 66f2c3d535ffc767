// strided_extent: the input range the outputs [first, last] of a strided read touch, checked
// against enumerating every index (permutations, broadcasts, negative strides, windows).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "compiler/ops/tensor_util.h"

namespace ipu::ir {
namespace {

std::pair<int64_t, int64_t> enumerated(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides,
                                       int64_t first, int64_t last) {
  std::pair<int64_t, int64_t> bounds{INT64_MAX, INT64_MIN};
  for (int64_t flat = first; flat <= last; ++flat) {
    int64_t rest = flat, offset = 0;
    for (size_t k = dims.size(); k-- > 0;) {
      offset += (rest % dims[k]) * strides[k];
      rest /= dims[k];
    }
    bounds = {std::min(bounds.first, offset), std::max(bounds.second, offset)};
  }
  return bounds;
}

TEST_CASE("strided_extent is the least and greatest offset of every range of outputs") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 400; ++trial) {
    const size_t rank = 1 + rng() % 4;
    std::vector<int64_t> dims, strides;
    int64_t elements = 1;
    for (size_t k = 0; k < rank; ++k) {
      dims.push_back(1 + static_cast<int64_t>(rng() % 5));
      strides.push_back(static_cast<int64_t>(rng() % 13) - 4); // negative (reversed), 0 (broadcast), positive
      elements *= dims.back();
    }
    const int64_t a = static_cast<int64_t>(rng() % static_cast<uint64_t>(elements));
    const int64_t b = static_cast<int64_t>(rng() % static_cast<uint64_t>(elements));
    const int64_t first = std::min(a, b), last = std::max(a, b);
    CAPTURE(trial);
    CHECK(strided_extent(dims, strides, first, last) == enumerated(dims, strides, first, last));
  }
  // A transpose's first row reads one column of the input, not all of it.
  CHECK(strided_extent({3, 4}, {1, 3}, 0, 3) == std::pair<int64_t, int64_t>{0, 9});
  CHECK(strided_extent({3, 4}, {1, 3}, 4, 5) == std::pair<int64_t, int64_t>{1, 4});
}

} // namespace
} // namespace ipu::ir
