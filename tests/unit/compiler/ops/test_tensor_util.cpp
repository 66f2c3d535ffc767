// strided_extent: the input range the outputs [first, last] of a strided read touch, and
// strided_read_regions: the elements they read, both checked against enumerating every index
// (permutations, broadcasts, negative strides, windows, boxes).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "compiler/ops/tensor_util.h"

namespace ipu::ops {
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

// The offsets out[idx] reads for idx in [begin, end) inside the box [lo, hi).
std::set<int64_t> enumerated_reads(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides,
                                   int64_t offset, const std::vector<int64_t>& lo,
                                   const std::vector<int64_t>& hi, int64_t begin, int64_t end) {
  std::set<int64_t> reads;
  for (int64_t flat = begin; flat < end; ++flat) {
    int64_t rest = flat, at = offset;
    bool inside = true;
    for (size_t k = dims.size(); k-- > 0;) {
      const int64_t i = rest % dims[k];
      rest /= dims[k];
      inside = inside && lo[k] <= i && i < hi[k];
      at += i * strides[k];
    }
    if (inside) reads.insert(at);
  }
  return reads;
}

// Every element the regions cover, and how many times in all.
std::pair<std::set<int64_t>, int64_t> covered(const std::vector<lowering::Region>& regions) {
  std::set<int64_t> elements;
  int64_t count = 0;
  for (const lowering::Region& r : regions) {
    for (int64_t row = r.row_begin; row < r.row_end; ++row) {
      for (int64_t col = r.col_begin; col < r.col_end; ++col) {
        elements.insert(row * r.row_stride + col);
        ++count;
      }
    }
  }
  return {elements, count};
}

TEST_CASE("strided_read_regions covers exactly the elements a range of outputs reads, each once") {
  std::mt19937 rng(11);
  int exact = 0;
  for (int trial = 0; trial < 600; ++trial) {
    const size_t rank = 1 + rng() % 4;
    std::vector<int64_t> dims, strides, lo, hi;
    int64_t elements = 1;
    for (size_t k = 0; k < rank; ++k) {
      dims.push_back(1 + static_cast<int64_t>(rng() % 5));
      // Mostly a permutation's strides (no overlap); sometimes a broadcast or a reversed axis.
      const int kind = static_cast<int>(rng() % 8);
      strides.push_back(kind == 0 ? 0 : kind == 1 ? -1 : 1);
      lo.push_back(rng() % 4 == 0 ? 1 : 0);
      hi.push_back(dims.back() - (rng() % 4 == 0 ? 1 : 0));
      elements *= dims.back();
    }
    // Positive strides: a random permutation of the row-major strides of `dims`.
    std::vector<size_t> order(rank);
    for (size_t k = 0; k < rank; ++k)
      order[k] = k;
    std::shuffle(order.begin(), order.end(), rng);
    int64_t step = 1;
    for (size_t k : order) {
      strides[k] *= step;
      step *= dims[k];
    }
    const int64_t offset = step; // negative strides stay inside [0, 3·step)
    const int64_t a = static_cast<int64_t>(rng() % static_cast<uint64_t>(elements));
    const int64_t b = static_cast<int64_t>(rng() % static_cast<uint64_t>(elements));
    const int64_t begin = std::min(a, b), end = std::max(a, b) + 1;
    CAPTURE(trial);
    const std::set<int64_t> want = enumerated_reads(dims, strides, offset, lo, hi, begin, end);
    const auto regions = strided_read_regions(7, dims, strides, offset, lo, hi, 3 * step, begin, end, 64);
    for (const lowering::Region& r : regions)
      CHECK(r.tensor == 7);
    const auto [got, count] = covered(regions);
    // A superset always; exactly the reads, once each, unless it fell back to the span.
    CHECK(std::includes(got.begin(), got.end(), want.begin(), want.end()));
    if (regions.size() != 1 || regions[0].row_end - regions[0].row_begin != 1 ||
        count == static_cast<int64_t>(want.size())) {
      CHECK(got == want);
      CHECK(count == static_cast<int64_t>(want.size()));
      ++exact;
    }
  }
  CHECK(exact > 500);
}

TEST_CASE("strided_read_regions: a head split reads one block per head, a transpose one per range") {
  // [S=8, H=3, D=4] viewed as [H, S, D]: strides (D, H·D, 1). Head 1's rows 2..5 are one block
  // of 4 rows of D elements, H·D apart.
  auto regions = strided_read_regions(0, {3, 8, 4}, {4, 12, 1}, 0, {0, 0, 0}, {3, 8, 4}, 96, 40, 56, 64);
  REQUIRE(regions.size() == 1);
  CHECK(regions[0].row_end - regions[0].row_begin == 4);
  CHECK(regions[0].row_stride == 12);
  CHECK(regions[0].col_begin == 2 * 12 + 4);
  CHECK(regions[0].col_end - regions[0].col_begin == 4);
  // The transpose of a [6, 5] matrix: outputs 0..17 (its columns 0..2) are one block of 6 rows
  // and 3 columns, not the whole matrix; a partial column is a block of its own.
  regions = strided_read_regions(0, {5, 6}, {1, 5}, 0, {0, 0}, {5, 6}, 30, 0, 18, 64);
  REQUIRE(regions.size() == 1);
  CHECK(covered(regions).second == 18);
  CHECK(strided_read_regions(0, {5, 6}, {1, 5}, 0, {0, 0}, {5, 6}, 30, 0, 15, 64).size() == 2);
  // An all-fill range reads nothing.
  CHECK(strided_read_regions(0, {4}, {1}, 0, {2}, {4}, 4, 0, 2, 64).empty());
}

TEST_CASE("reduction_read_regions: a column sum reads its columns of every row, once") {
  // [6, 10] summed over rows: outputs 3..7 read columns 3..7 of all 6 rows, one block.
  const InputAccess columns{{10}, {1}, {6}, {10}};
  auto regions = reduction_read_regions(4, columns, 60, 3, 7);
  REQUIRE(regions.size() == 1);
  const auto [elements, count] = covered(regions);
  CHECK(count == 24);
  std::set<int64_t> want;
  for (int64_t row = 0; row < 6; ++row) {
    for (int64_t col = 3; col < 7; ++col)
      want.insert(row * 10 + col);
  }
  CHECK(elements == want);
  // [2, 3, 10] summed over its first two axes (one evenly strided axis of 6): the same block.
  CHECK(covered(reduction_read_regions(4, {{10}, {1}, {2, 3}, {30, 10}}, 60, 3, 7)).first == want);
  // [3, 4, 5] summed over axes 0 and 2 (not one axis): the range the reads span.
  regions = reduction_read_regions(4, {{4}, {5}, {3, 5}, {20, 1}}, 60, 1, 2);
  REQUIRE(regions.size() == 1);
  CHECK(regions[0].col_begin == 5);
  CHECK(regions[0].col_end == 50);
  // A row sum reads its rows whole.
  regions = reduction_read_regions(4, {{6}, {10}, {10}, {1}}, 60, 2, 4);
  REQUIRE(regions.size() == 1);
  CHECK(covered(regions).second == 20);
}

} // namespace
} // namespace ipu::ops
