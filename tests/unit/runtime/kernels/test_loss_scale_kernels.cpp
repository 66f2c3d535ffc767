// Loss scaling's factor (codelet 110, runtime/kernels/loss_scale_kernels.cpp): the static scale the
// hyper-parameters hold, or its reciprocal; and its validator.
#include <doctest/doctest.h>

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
  run(Codelet::kLossScaleFactor, {hyper.data(), factor.data()}, {0});
  CHECK(factor[0] == 1024.0f);
  run(Codelet::kLossScaleFactor, {hyper.data(), factor.data()}, {1});
  CHECK(factor[0] == 0.0009765625f); // 2^-10: scaling by a power of two and back is exact
  hyper[HyperParameter::kLossScale] = 3.0f;
  run(Codelet::kLossScaleFactor, {hyper.data(), factor.data()}, {1});
  CHECK(factor[0] == 1.0f / 3.0f);

  CHECK(validate(Codelet::kLossScaleFactor, {kHyperParameterCount, 1}, {1}).ok());
  CHECK(!validate(Codelet::kLossScaleFactor, {kHyperParameterCount - 1, 1}, {1}).ok()); // not the slots
  CHECK(!validate(Codelet::kLossScaleFactor, {kHyperParameterCount, 2}, {1}).ok());     // one factor
  CHECK(!validate(Codelet::kLossScaleFactor, {kHyperParameterCount, 1}, {2}).ok());     // a flag
  CHECK(!validate(Codelet::kLossScaleFactor, {kHyperParameterCount, 1}, {}).ok());
}

} // namespace
