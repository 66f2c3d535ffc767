// LAMB (codelets 103-104, runtime/kernels/lamb_kernels.cpp) against the paper's equations in
// double (You et al. 2019, Algorithm 2, φ the identity), with the norms computed directly and the
// hyper-parameters read from their operand (runtime/format/host_contract.h); and their validators.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "runtime/kernels/kernel.h"
#include "tests/unit/runtime/kernels/kernel_test_support.h"

namespace {

using ipu::format::Codelet;
using namespace ipu::kernels::testing;

TEST_CASE("kernels: LambMoments updates the moments and writes u = m̂/(√v̂ + ε) + wd·W into G") {
  const size_t n = 12;
  const std::vector<float> w = values(n, 1), g0 = values(n, 2);
  const float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-6f, decay = 0.01f, scale = 0.5f;
  // The learning rate is LambApply's: LambMoments must not need it.
  auto h = hyper({{H::kBeta1, beta1}, {H::kBeta2, beta2}, {H::kEpsilon, eps}, {H::kWeightDecay, decay}});
  std::vector<float> g = g0, m = values(n, 3), v = values(n, 4), step = {4.0f};
  for (float& x : v)
    x = std::abs(x);
  const std::vector<float> m0 = m, v0 = v;
  // Two vertices, as a split over tiles gives.
  for (auto [begin, end] : {std::pair<int64_t, int64_t>{0, 5}, {5, 12}}) {
    run(Codelet::kLambMoments,
        {const_cast<float*>(w.data()), g.data(), m.data(), v.data(), step.data(), h.data()}, {begin, end},
        {scale});
  }
  const double t = 5.0;
  for (size_t i = 0; i < n; ++i) {
    const double grad = static_cast<double>(scale) * g0[i];
    const double want_m = beta1 * static_cast<double>(m0[i]) + (1 - static_cast<double>(beta1)) * grad;
    const double want_v = beta2 * static_cast<double>(v0[i]) + (1 - static_cast<double>(beta2)) * grad * grad;
    const double m_hat = want_m / (1 - std::pow(static_cast<double>(beta1), t));
    const double v_hat = want_v / (1 - std::pow(static_cast<double>(beta2), t));
    const double u = m_hat / (std::sqrt(v_hat) + eps) + decay * static_cast<double>(w[i]);
    CAPTURE(i);
    CHECK(m[i] == doctest::Approx(want_m).epsilon(1e-6));
    CHECK(v[i] == doctest::Approx(want_v).epsilon(1e-6));
    CHECK(g[i] == doctest::Approx(u).epsilon(1e-5));
  }
  CHECK(step[0] == 4.0f); // StepCount, not LambMoments, advances the step

  const uint64_t hn = ipu::format::kHyperParameterCount;
  CHECK(validate(Codelet::kLambMoments, {n, n, n, n, 1, hn}, {0, 12}, {scale}).ok());
  CHECK(!validate(Codelet::kLambMoments, {n, n, n, n, 1, hn}, {0, 13}, {scale}).ok());
  CHECK(!validate(Codelet::kLambMoments, {n, n, n - 1, n, 1, hn}, {0, 12}, {scale}).ok());
  CHECK(!validate(Codelet::kLambMoments, {n, n, n, n, 2, hn}, {0, 12}, {scale}).ok());
  CHECK(!validate(Codelet::kLambMoments, {n, n, n, n, 1, hn - 1}, {0, 12}, {scale}).ok());
  // Format version 2's layout: no hyper-parameters, and the values as float params.
  CHECK(!validate(Codelet::kLambMoments, {n, n, n, n, 1}, {0, 12}, {beta1, beta2, eps, decay, scale}).ok());
  CHECK(
      !validate(Codelet::kLambMoments, {n, n, n, n, 1, hn}, {0, 12}, {beta1, beta2, eps, decay, scale}).ok());
}

TEST_CASE("kernels: LambApply steps W by lr·‖W‖/‖u‖·u, 1 when a norm is 0, and clears an accumulator") {
  const size_t n = 6;
  const std::vector<float> w0 = values(n, 5), u0 = values(n, 6);
  double w_sq = 0, u_sq = 0;
  for (size_t i = 0; i < n; ++i) {
    w_sq += static_cast<double>(w0[i]) * w0[i];
    u_sq += static_cast<double>(u0[i]) * u0[i];
  }
  std::vector<float> w = w0, u = u0, wn = {static_cast<float>(w_sq)}, un = {static_cast<float>(u_sq)};
  const float lr = 0.01f;
  // The learning rate alone: the other slots are LambMoments'.
  auto h = hyper({{H::kLearningRate, lr}});
  run(Codelet::kLambApply, {w.data(), u.data(), wn.data(), un.data(), h.data()}, {0, 6, 0});
  const double ratio = std::sqrt(static_cast<double>(wn[0])) / std::sqrt(static_cast<double>(un[0]));
  for (size_t i = 0; i < n; ++i) {
    CHECK(w[i] == doctest::Approx(w0[i] - lr * ratio * u0[i]).epsilon(1e-6));
    CHECK(u[i] == u0[i]);
  }
  // A zero weight (as a zero-initialised bias) takes the plain step lr·u; the update is cleared.
  std::vector<float> zero(n, 0.0f), zero_norm = {0.0f};
  u = u0;
  run(Codelet::kLambApply, {zero.data(), u.data(), zero_norm.data(), un.data(), h.data()}, {0, 6, 1});
  for (size_t i = 0; i < n; ++i) {
    CHECK(zero[i] == -lr * u0[i]);
    CHECK(u[i] == 0.0f);
  }
  // A zero update leaves the weight as it is.
  w = w0;
  std::vector<float> still(n, 0.0f);
  run(Codelet::kLambApply, {w.data(), still.data(), wn.data(), zero_norm.data(), h.data()}, {0, 6, 0});
  CHECK(w == w0);

  const uint64_t hn = ipu::format::kHyperParameterCount;
  CHECK(validate(Codelet::kLambApply, {n, n, 1, 1, hn}, {0, 6, 1}).ok());
  CHECK(!validate(Codelet::kLambApply, {n, n, 1, 1, hn}, {0, 7, 1}).ok());
  CHECK(!validate(Codelet::kLambApply, {n, n - 1, 1, 1, hn}, {0, 6, 1}).ok());
  CHECK(!validate(Codelet::kLambApply, {n, n, 2, 1, hn}, {0, 6, 1}).ok());
  CHECK(!validate(Codelet::kLambApply, {n, n, 1, 1, hn}, {0, 6}).ok());
  CHECK(!validate(Codelet::kLambApply, {n, n, 1, 1, 1}, {0, 6, 1}).ok());
  // Format version 2's layout: no hyper-parameters, and the learning rate as a float param.
  CHECK(!validate(Codelet::kLambApply, {n, n, 1, 1}, {0, 6, 1}, {lr}).ok());
  CHECK(!validate(Codelet::kLambApply, {n, n, 1, 1, hn}, {0, 6, 1}, {lr}).ok());
}

} // namespace
