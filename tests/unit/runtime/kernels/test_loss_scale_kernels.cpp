// Loss scaling's codelets (runtime/kernels/loss_scale_kernels.cpp): the factor (110), the static
// scale the hyper-parameters hold or the dynamic state's, or its reciprocal; dynamic scaling's
// update of the scale (111), Keras's schedule; the zeroing of a skipped update's accumulators (112);
// and their validators.
#include <doctest/doctest.h>

#include <limits>
#include <vector>

#include "runtime/format/host_contract.h"
#include "runtime/kernels/kernel.h"
#include "tests/unit/runtime/kernels/kernel_test_support.h"

namespace {

using ipu::format::Codelet;
using ipu::format::HyperParameter;
using ipu::format::kHyperParameterCount;
using namespace ipu::kernels::testing;

TEST_CASE("kernels: LossScaleFactor reads the static loss scale, or its exact reciprocal") {
  std::vector<float> hyper(kHyperParameterCount, 7.0f);
  hyper[HyperParameter::kLossScale] = 1024.0f;
  std::vector<float> factor = {-1.0f};
  run(Codelet::kLossScaleFactor, {hyper.data(), factor.data()}, {0, 0});
  CHECK(factor[0] == 1024.0f);
  run(Codelet::kLossScaleFactor, {hyper.data(), factor.data()}, {1, 0});
  CHECK(factor[0] == 0.0009765625f); // 2^-10: scaling by a power of two and back is exact
  hyper[HyperParameter::kLossScale] = 3.0f;
  run(Codelet::kLossScaleFactor, {hyper.data(), factor.data()}, {1, 0});
  CHECK(factor[0] == 1.0f / 3.0f);

  CHECK(validate(Codelet::kLossScaleFactor, {kHyperParameterCount, 1}, {1, 0}).ok());
  CHECK(!validate(Codelet::kLossScaleFactor, {kHyperParameterCount - 1, 1}, {1, 0}).ok()); // not the slots
  CHECK(!validate(Codelet::kLossScaleFactor, {kHyperParameterCount, 2}, {1, 0}).ok());     // one factor
  CHECK(!validate(Codelet::kLossScaleFactor, {kHyperParameterCount, 1}, {2, 0}).ok());     // a flag
  CHECK(!validate(Codelet::kLossScaleFactor, {kHyperParameterCount, 1}, {1}).ok());
  CHECK(!validate(Codelet::kLossScaleFactor, {2, 1}, {1, 0}).ok()); // the state is not the slots
}

TEST_CASE("kernels: LossScaleFactor reads the dynamic scale from its state") {
  std::vector<float> state = {4096.0f, 17.0f};
  std::vector<float> factor = {-1.0f};
  run(Codelet::kLossScaleFactor, {state.data(), factor.data()}, {0, 1});
  CHECK(factor[0] == 4096.0f);
  run(Codelet::kLossScaleFactor, {state.data(), factor.data()}, {1, 1});
  CHECK(factor[0] == 1.0f / 4096.0f);
  CHECK(validate(Codelet::kLossScaleFactor, {2, 1}, {0, 1}).ok());
  CHECK(!validate(Codelet::kLossScaleFactor, {kHyperParameterCount, 1}, {0, 1}).ok());
}

// One LossScaleUpdate; returns {finite, report[0], report[1]}.
std::vector<float> update(std::vector<float>& state, std::vector<float> checks, int64_t growth_steps) {
  std::vector<float> finite = {-1.0f}, report = {-1.0f, -1.0f};
  run(Codelet::kLossScaleUpdate, {state.data(), finite.data(), report.data(), checks.data()},
      {growth_steps, static_cast<int64_t>(checks.size())});
  return {finite[0], report[0], report[1]};
}

TEST_CASE("kernels: LossScaleUpdate follows Keras's dynamic schedule") {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> state = {8.0f, 0.0f};
  // Finite: the counter counts up to growth_steps, then the scale doubles and the counter restarts.
  CHECK(update(state, {0.0f, 0.0f}, 3) == std::vector<float>{1.0f, 8.0f, 0.0f});
  CHECK(state == std::vector<float>{8.0f, 1.0f});
  CHECK(update(state, {0.0f, 0.0f}, 3) == std::vector<float>{1.0f, 8.0f, 0.0f});
  CHECK(state == std::vector<float>{8.0f, 2.0f});
  CHECK(update(state, {0.0f, 0.0f}, 3) == std::vector<float>{1.0f, 8.0f, 0.0f});
  CHECK(state == std::vector<float>{16.0f, 0.0f});
  // Not finite on any one stage: skipped, the scale halves and the counter restarts.
  CHECK(update(state, {0.0f, 0.0f}, 3)[0] == 1.0f);
  CHECK(update(state, {0.0f, nan}, 3) == std::vector<float>{0.0f, 16.0f, 1.0f});
  CHECK(state == std::vector<float>{8.0f, 0.0f});
  CHECK(update(state, {inf, 0.0f}, 3) == std::vector<float>{0.0f, 8.0f, 1.0f});
  CHECK(state == std::vector<float>{4.0f, 0.0f});
  // Never below 1.
  state = {1.5f, 2.0f};
  CHECK(update(state, {nan}, 3)[0] == 0.0f);
  CHECK(state == std::vector<float>{1.0f, 0.0f});
  CHECK(update(state, {nan}, 3)[0] == 0.0f);
  CHECK(state == std::vector<float>{1.0f, 0.0f});
  // A double that overflows keeps the scale, and still restarts the counter.
  state = {3.0e38f, 0.0f};
  CHECK(update(state, {0.0f}, 1) == std::vector<float>{1.0f, 3.0e38f, 0.0f});
  CHECK(state == std::vector<float>{3.0e38f, 0.0f});

  CHECK(validate(Codelet::kLossScaleUpdate, {2, 1, 2, 3}, {2000, 3}).ok());
  CHECK(!validate(Codelet::kLossScaleUpdate, {2, 1, 2, 3}, {2000, 2}).ok()); // the checks' count
  CHECK(!validate(Codelet::kLossScaleUpdate, {2, 1, 2, 3}, {0, 3}).ok());    // growth steps >= 1
  CHECK(!validate(Codelet::kLossScaleUpdate, {2, 1, 2, 3}, {int64_t{1} << 25, 3}).ok());
  CHECK(!validate(Codelet::kLossScaleUpdate, {3, 1, 2, 3}, {2000, 3}).ok()); // the state
  CHECK(!validate(Codelet::kLossScaleUpdate, {2, 1, 2}, {2000, 1}).ok());
}

TEST_CASE("kernels: ZeroInPlace zeroes its range, infinities and NaNs too") {
  std::vector<float> x = {1.0f, std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN(), 4.0f};
  run(Codelet::kZeroInPlace, {x.data()}, {1, 3});
  CHECK(x[0] == 1.0f);
  CHECK(x[1] == 0.0f);
  CHECK(x[2] == 0.0f);
  CHECK(x[3] == 4.0f);
  CHECK(validate(Codelet::kZeroInPlace, {4}, {0, 4}).ok());
  CHECK(!validate(Codelet::kZeroInPlace, {4}, {0, 5}).ok());
}

} // namespace
