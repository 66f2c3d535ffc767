// The loss codelets (ids 70-71) against a plain reference of ONNX NegativeLogLikelihoodLoss and
// its derivative, and their validators against parameters that would read or write out of range.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "runtime/format/tensor_kinds.h"
#include "runtime/kernels/kernel.h"
#include "tests/unit/runtime/kernels/kernel_test_support.h"

namespace {

using ipu::format::Codelet;
using ipu::format::LossReduction;
using namespace ipu::kernels::testing;

struct NllLossCase {
  int64_t N = 2, C = 3, D = 2;
  LossReduction reduction = LossReduction::kMean;
  std::optional<int64_t> ignore_index;
  bool weighted = false;

  std::vector<int64_t> params(int64_t begin, int64_t end) const {
    return {N,
            C,
            D,
            static_cast<int64_t>(reduction),
            ignore_index ? 1 : 0,
            ignore_index.value_or(0),
            weighted ? 1 : 0,
            begin,
            end};
  }
};

const std::vector<float> kInput = {-0.1f, -1.2f, -2.3f, -0.4f, -0.5f, -1.6f,  // n = 0: [C=3, D=2]
                                   -0.7f, -0.8f, -1.9f, -1.0f, -2.1f, -0.2f}; // n = 1
const std::vector<float> kWeights = {0.5f, 2.0f, 1.5f};

// ONNX's definition, position by position: loss_p = −x[n, t, d]·w[t], 0 where t is ignored.
std::vector<double> reference_loss(const NllLossCase& c, const std::vector<double>& x,
                                   const std::vector<float>& t) {
  std::vector<double> losses;
  double total = 0, weight_total = 0;
  for (int64_t n = 0; n < c.N; ++n) {
    for (int64_t d = 0; d < c.D; ++d) {
      const auto cls = static_cast<int64_t>(t[static_cast<size_t>(n * c.D + d)]);
      double loss = 0;
      if (!(c.ignore_index && cls == *c.ignore_index)) {
        const double w = c.weighted ? kWeights[static_cast<size_t>(cls)] : 1.0;
        loss = -x[static_cast<size_t>((n * c.C + cls) * c.D + d)] * w;
        weight_total += w;
      }
      losses.push_back(loss);
      total += loss;
    }
  }
  if (c.reduction == LossReduction::kSum) return {total};
  if (c.reduction == LossReduction::kMean) return {total / weight_total};
  return losses;
}

std::vector<float> run_loss(const NllLossCase& c, std::vector<float> t) {
  std::vector<float> x = kInput, w = kWeights;
  std::vector<float> y(c.reduction == LossReduction::kNone ? static_cast<size_t>(c.N * c.D) : 1, -7.0f);
  std::vector<void*> operands = {x.data(), t.data(), y.data()};
  if (c.weighted) operands.push_back(w.data());
  if (c.reduction == LossReduction::kNone) {
    // Two vertices, as a split over tiles gives.
    run(Codelet::kNllLoss, operands, c.params(0, 1));
    run(Codelet::kNllLoss, operands, c.params(1, c.N * c.D));
  } else {
    run(Codelet::kNllLoss, operands, c.params(0, c.N * c.D));
  }
  return y;
}

// The reference loss of kInput + h·e_i, for central differences.
std::vector<double> perturbed_loss(const NllLossCase& c, const std::vector<float>& t, size_t i, double h) {
  std::vector<double> x(kInput.begin(), kInput.end());
  x[i] += h;
  return reference_loss(c, x, t);
}

void check_nll_close(const std::vector<float>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": got " << got[i] << ", want " << want[i]);
    CHECK(std::abs(got[i] - want[i]) <= 1e-5 * (1 + std::abs(want[i])));
  }
}

std::vector<NllLossCase> all_cases() {
  std::vector<NllLossCase> cases;
  for (auto reduction : {LossReduction::kNone, LossReduction::kSum, LossReduction::kMean}) {
    for (bool weighted : {false, true}) {
      for (std::optional<int64_t> ii :
           {std::optional<int64_t>(), std::optional<int64_t>(2), std::optional<int64_t>(-1)}) {
        NllLossCase c;
        c.reduction = reduction;
        c.weighted = weighted;
        c.ignore_index = ii;
        cases.push_back(c);
      }
    }
  }
  return cases;
}

TEST_CASE("loss kernels: NllLoss matches the reference for every reduction, weights and ignore_index") {
  const std::vector<float> targets = {0, 2, 1, -1};
  for (const NllLossCase& c : all_cases()) {
    CAPTURE(static_cast<int>(c.reduction));
    CAPTURE(c.weighted);
    CAPTURE(c.ignore_index.value_or(99));
    // A target of -1 is only valid as the ignore index; elsewhere use class 1.
    std::vector<float> t = targets;
    if (c.ignore_index != -1) t[3] = 1;
    check_nll_close(run_loss(c, t), reference_loss(c, std::vector<double>(kInput.begin(), kInput.end()), t));
  }
}

TEST_CASE("loss kernels: NllLossGrad is the derivative of the reference loss") {
  const std::vector<float> t = {0, 2, 1, 2};
  for (const NllLossCase& base : all_cases()) {
    NllLossCase c = base;
    if (c.ignore_index == -1) continue; // no target is -1 here
    CAPTURE(static_cast<int>(c.reduction));
    CAPTURE(c.weighted);
    CAPTURE(c.ignore_index.value_or(99));
    const bool none = c.reduction == LossReduction::kNone;
    std::vector<float> dy = none ? std::vector<float>{0.3f, -1.1f, 0.7f, 2.0f} : std::vector<float>{1.7f};
    std::vector<float> targets = t, w = kWeights, dx(kInput.size(), -7.0f);
    std::vector<void*> operands = {targets.data(), dy.data(), dx.data()};
    if (c.weighted) operands.push_back(w.data());
    run(Codelet::kNllLossGrad, operands, c.params(0, 1));
    run(Codelet::kNllLossGrad, operands, c.params(1, c.N));
    // d(Σ dy·loss)/dx by central differences (the loss is linear in x, so h may be large).
    const double h = 0.5;
    std::vector<double> want(kInput.size());
    for (size_t i = 0; i < kInput.size(); ++i) {
      const std::vector<double> plus = perturbed_loss(c, t, i, h), minus = perturbed_loss(c, t, i, -h);
      for (size_t k = 0; k < plus.size(); ++k)
        want[i] += dy[k] * (plus[k] - minus[k]) / (2 * h);
    }
    check_nll_close(dx, want);
  }
}

// The first target outside [0, C) that is not the ignore index, as NllLoss and NllLossGrad report it.
ipu::kernels::KernelFault loss_fault(const NllLossCase& c, Codelet codelet, std::vector<float> targets) {
  std::vector<float> x = kInput, w = kWeights, y(12), dy(4, 1.0f), dx(12);
  std::vector<void*> operands = codelet == Codelet::kNllLoss
                                    ? std::vector<void*>{x.data(), targets.data(), y.data()}
                                    : std::vector<void*>{targets.data(), dy.data(), dx.data()};
  if (c.weighted) operands.push_back(w.data());
  const int64_t end = codelet == Codelet::kNllLoss ? c.N * c.D : c.N;
  return run_for_fault(vertex(codelet, operands, c.params(0, end)));
}

TEST_CASE("loss kernels: NllLoss and NllLossGrad report a target out of range, never read with it") {
  for (const NllLossCase& c : all_cases()) {
    CAPTURE(static_cast<int>(c.reduction));
    CAPTURE(c.weighted);
    CAPTURE(c.ignore_index.value_or(99));
    for (Codelet codelet : {Codelet::kNllLoss, Codelet::kNllLossGrad}) {
      CAPTURE(static_cast<int>(codelet));
      for (float bad : {3.0f, -2.0f, 1e30f, std::numeric_limits<float>::quiet_NaN()}) {
        CAPTURE(bad);
        const ipu::kernels::KernelFault fault = loss_fault(c, codelet, {0, bad, 1, 5});
        REQUIRE(fault);
        CHECK(fault.element == 1);
        CHECK(fault.low == 0);
        CHECK(fault.high == c.C);
        CHECK(fault.ignore_index == c.ignore_index);
      }
      // The ignore index is valid wherever it lies.
      if (c.ignore_index) CHECK(!loss_fault(c, codelet, {0, static_cast<float>(*c.ignore_index), 1, 2}));
    }
  }
  NllLossCase c;
  c.ignore_index = -100;
  CHECK(describe(loss_fault(c, Codelet::kNllLoss, {0, 1, 7, 2})) ==
        "target 7 at targets[2] is outside [0, 3) and is not the ignore_index -100");
}

TEST_CASE("loss kernels: validators reject inconsistent sizes and partial reductions") {
  NllLossCase c;
  c.reduction = LossReduction::kNone;
  CHECK(validate(Codelet::kNllLoss, {12, 4, 4}, c.params(0, 4)).ok());
  CHECK(!validate(Codelet::kNllLoss, {12, 4, 4}, c.params(0, 5)).ok());
  CHECK(!validate(Codelet::kNllLoss, {11, 4, 4}, c.params(0, 4)).ok());
  CHECK(!validate(Codelet::kNllLoss, {12, 4, 1}, c.params(0, 4)).ok());
  c.weighted = true;
  CHECK(validate(Codelet::kNllLoss, {12, 4, 4, 3}, c.params(0, 4)).ok());
  CHECK(!validate(Codelet::kNllLoss, {12, 4, 4}, c.params(0, 4)).ok());
  CHECK(!validate(Codelet::kNllLoss, {12, 4, 4, 2}, c.params(0, 4)).ok());
  c.weighted = false;
  c.reduction = LossReduction::kMean;
  CHECK(validate(Codelet::kNllLoss, {12, 4, 1}, c.params(0, 4)).ok());
  CHECK(!validate(Codelet::kNllLoss, {12, 4, 1}, c.params(1, 4)).ok());
  std::vector<int64_t> bad = c.params(0, 4);
  bad[3] = 3;
  CHECK(!validate(Codelet::kNllLoss, {12, 4, 1}, bad).ok());

  CHECK(validate(Codelet::kNllLossGrad, {4, 1, 12}, c.params(0, 2)).ok());
  CHECK(!validate(Codelet::kNllLossGrad, {4, 1, 12}, c.params(0, 3)).ok());
  CHECK(!validate(Codelet::kNllLossGrad, {4, 4, 12}, c.params(0, 2)).ok());
  CHECK(!validate(Codelet::kNllLossGrad, {4, 1, 10}, c.params(0, 2)).ok());
}

} // namespace
