// Clipping by global norm (codelets 100-102, runtime/kernels/clip_kernels.cpp) against the norm
// and torch.nn.utils.clip_grad_norm_'s factor computed directly in double; and their validators.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "runtime/kernels/kernel.h"
#include "tests/unit/runtime/kernels/kernel_test_support.h"

namespace {

using ipu::format::Codelet;
using namespace ipu::kernels::testing;

TEST_CASE("kernels: SumOfSquares writes each slice's sum of scaled squares into its share") {
  const std::vector<float> x = values(10, 3);
  std::vector<float> partials(3, 99.0f);
  const float scale = 0.25f;
  run(Codelet::kSumOfSquares, {const_cast<float*>(x.data()), partials.data()}, {0, 4, 0}, {scale});
  run(Codelet::kSumOfSquares, {const_cast<float*>(x.data()), partials.data()}, {4, 10, 2}, {scale});
  auto reference = [&](size_t begin, size_t end) {
    double sum = 0;
    for (size_t i = begin; i < end; ++i)
      sum += (0.25 * x[i]) * (0.25 * x[i]);
    return sum;
  };
  CHECK(partials[0] == doctest::Approx(reference(0, 4)).epsilon(1e-7));
  CHECK(partials[1] == 99.0f); // a share no vertex owns is left alone
  CHECK(partials[2] == doctest::Approx(reference(4, 10)).epsilon(1e-7));

  CHECK(validate(Codelet::kSumOfSquares, {10, 3}, {4, 10, 2}, {scale}).ok());
  CHECK(!validate(Codelet::kSumOfSquares, {10, 3}, {4, 11, 2}, {scale}).ok()); // past the input
  CHECK(!validate(Codelet::kSumOfSquares, {10, 3}, {4, 10, 3}, {scale}).ok()); // past the partials
  CHECK(!validate(Codelet::kSumOfSquares, {10, 3}, {4, 10, -1}, {scale}).ok());
  CHECK(!validate(Codelet::kSumOfSquares, {10, 3}, {4, 10, 2}).ok()); // no scale
}

TEST_CASE("kernels: SumOfSquares of scale 0, the finite check, is +0 or the in-order sum's NaN") {
  std::vector<float> x = values(9000, 5);
  x[3] = -0.0f;
  x[4] = -std::numeric_limits<float>::max();
  std::vector<float> partials(1, 99.0f);
  auto check = [&](const std::vector<float>& input) {
    run(Codelet::kSumOfSquares, {const_cast<float*>(input.data()), partials.data()}, {0, 9000, 0}, {0.0f});
    return partials[0];
  };
  const float finite = check(x);
  CHECK(finite == 0.0f);
  CHECK(!std::signbit(finite));

  // The NaN every non-finite element makes, as the in-order sum in double makes it.
  auto in_order = [](const std::vector<float>& input) {
    double sum = 0.0;
    for (float value : input) {
      const double scaled = static_cast<double>(0.0f * value);
      sum += scaled * scaled;
    }
    return static_cast<float>(sum);
  };
  for (const float special : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                              std::numeric_limits<float>::quiet_NaN()}) {
    for (const size_t at : {size_t{0}, size_t{4500}, size_t{8999}}) {
      std::vector<float> hit = x;
      hit[at] = special;
      const float checked = check(hit);
      const float reference = in_order(hit);
      CHECK(std::isnan(checked));
      CHECK(std::bit_cast<uint32_t>(checked) == std::bit_cast<uint32_t>(reference));
    }
  }
}

TEST_CASE("kernels: ClipFactor is torch's min(1, clip / (norm + 1e-6)) over every stage's share") {
  std::vector<float> squares = {9.0f, 16.0f}; // norm 5
  std::vector<float> factor = {-1.0f};
  run(Codelet::kClipFactor, {squares.data(), factor.data()}, {2}, {2.5f});
  CHECK(factor[0] == static_cast<float>(2.5 / (5.0 + 1e-6)));
  run(Codelet::kClipFactor, {squares.data(), factor.data()}, {2}, {5.0f});
  CHECK(factor[0] < 1.0f); // the ε keeps a norm equal to the clip just below 1, as torch's does
  CHECK(factor[0] == static_cast<float>(5.0 / (5.0 + 1e-6)));
  run(Codelet::kClipFactor, {squares.data(), factor.data()}, {2}, {6.0f});
  CHECK(factor[0] == 1.0f); // below the clip: unchanged
  std::vector<float> zero = {0.0f};
  run(Codelet::kClipFactor, {zero.data(), factor.data()}, {1}, {1.0f});
  CHECK(factor[0] == 1.0f); // a zero gradient divides by ε, not by 0

  CHECK(validate(Codelet::kClipFactor, {2, 1}, {2}, {1.0f}).ok());
  CHECK(!validate(Codelet::kClipFactor, {2, 1}, {3}, {1.0f}).ok()); // stages differ from the operand
  CHECK(!validate(Codelet::kClipFactor, {2, 2}, {2}, {1.0f}).ok()); // the factor is a scalar
  CHECK(!validate(Codelet::kClipFactor, {2, 1}, {2}, {0.0f}).ok()); // the clip must be positive
  CHECK(!validate(Codelet::kClipFactor, {2, 1}, {2}, {-1.0f}).ok());
}

TEST_CASE("kernels: ScaleInPlace multiplies its range by the factor") {
  std::vector<float> x = values(8, 5);
  const std::vector<float> before = x;
  std::vector<float> factor = {0.375f};
  run(Codelet::kScaleInPlace, {x.data(), factor.data()}, {2, 6});
  for (size_t i = 0; i < x.size(); ++i)
    CHECK(x[i] == (i >= 2 && i < 6 ? before[i] * 0.375f : before[i]));

  CHECK(validate(Codelet::kScaleInPlace, {8, 1}, {0, 8}).ok());
  CHECK(!validate(Codelet::kScaleInPlace, {8, 1}, {0, 9}).ok());
  CHECK(!validate(Codelet::kScaleInPlace, {8, 2}, {0, 8}).ok());
  CHECK(!validate(Codelet::kScaleInPlace, {8, 1}, {0, 8, 1}).ok());
}

} // namespace
