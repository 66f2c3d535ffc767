// The kernels of batch normalization with batch statistics against plain double-precision loops,
// run as several vertices that split the work the way the compiler does (channels, samples and
// positions into parts), and their load-time validators.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "runtime/kernels/kernel.h"
#include "tests/unit/runtime/kernels/kernel_test_support.h"

namespace {

using ipu::format::Codelet;
using namespace ipu::kernels::testing;

constexpr int64_t N = 3, C = 2, S = 5;

void check_scalar_close(float got, double want) {
  INFO("got " << got << ", want " << want);
  CHECK(std::abs(got - want) <= 1e-5 + 1e-5 * std::abs(want));
}

// Mean and population variance of channel c, in double.
std::pair<double, double> moments(const std::vector<float>& x, int64_t c) {
  double sum = 0, squares = 0;
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t s = 0; s < S; ++s)
      sum += x[static_cast<size_t>((n * C + c) * S + s)];
  }
  const double mean = sum / static_cast<double>(N * S);
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t s = 0; s < S; ++s) {
      const double d = x[static_cast<size_t>((n * C + c) * S + s)] - mean;
      squares += d * d;
    }
  }
  return {mean, squares / static_cast<double>(N * S)};
}

TEST_CASE("kernels: BatchStatistics in parts and their combination give the batch's mean and variance") {
  auto x = values(static_cast<size_t>(N * C * S), 21);
  for (float& v : x)
    v += 100.0f; // a mean far from 0: E[x²] − E[x]² would lose the variance's digits
  // Samples [0, 2) and [2, 3), positions [0, 3) and [3, 5): 4 parts, the channels in two vertices.
  const int64_t parts = 4;
  std::vector<float> partials(static_cast<size_t>(parts * 3 * C), -7.0f), mean(C), var(C);
  int64_t part = 0;
  for (auto [nb, ne] : {std::pair<int64_t, int64_t>{0, 2}, {2, 3}}) {
    for (auto [sb, se] : {std::pair<int64_t, int64_t>{0, 3}, {3, 5}}) {
      for (auto [cb, ce] : {std::pair<int64_t, int64_t>{0, 1}, {1, 2}})
        run(Codelet::kBatchStatistics, {x.data(), partials.data()},
            {N, C, S, cb, ce, nb, ne, sb, se, parts, part});
      ++part;
    }
  }
  run(Codelet::kBatchStatisticsCombine, {partials.data(), mean.data(), var.data()}, {C, parts, 0, C});
  for (int64_t c = 0; c < C; ++c) {
    const auto [m, v] = moments(x, c);
    check_scalar_close(mean[static_cast<size_t>(c)], m);
    check_scalar_close(var[static_cast<size_t>(c)], v);
  }
  // With the running statistics and a mode of 0 (evaluate, predict), they are copied; with 1, not.
  std::vector<float> running_mean = {0.25f, -0.5f}, running_var = {2.0f, 3.0f}, flag = {0.0f};
  run(Codelet::kBatchStatisticsCombine,
      {partials.data(), mean.data(), var.data(), running_mean.data(), running_var.data(), flag.data()},
      {C, parts, 0, C});
  CHECK(mean == running_mean);
  CHECK(var == running_var);
  flag[0] = 1.0f;
  run(Codelet::kBatchStatisticsCombine,
      {partials.data(), mean.data(), var.data(), running_mean.data(), running_var.data(), flag.data()},
      {C, parts, 0, C});
  check_scalar_close(var[1], moments(x, 1).second);

  const auto xs = static_cast<uint64_t>(N * C * S), ps = static_cast<uint64_t>(parts * 3 * C);
  CHECK(validate(Codelet::kBatchStatistics, {xs, ps}, {N, C, S, 0, C, 0, N, 0, S, parts, 3}).ok());
  CHECK_FALSE(validate(Codelet::kBatchStatistics, {xs, ps}, {N, C, S, 0, C, 0, N, 0, S, parts, 4}).ok());
  CHECK_FALSE(validate(Codelet::kBatchStatistics, {xs, ps}, {N, C, S, 0, C, 0, N, 0, S + 1, parts, 0}).ok());
  CHECK_FALSE(validate(Codelet::kBatchStatistics, {xs, ps - 1}, {N, C, S, 0, C, 0, N, 0, S, parts, 0}).ok());
  CHECK(validate(Codelet::kBatchStatisticsCombine, {ps, 2, 2}, {C, parts, 0, C}).ok());
  CHECK(validate(Codelet::kBatchStatisticsCombine, {ps, 2, 2, 2, 2, 1}, {C, parts, 0, C}).ok());
  CHECK_FALSE(validate(Codelet::kBatchStatisticsCombine, {ps, 2, 2, 2, 2, 2}, {C, parts, 0, C}).ok());
  CHECK_FALSE(validate(Codelet::kBatchStatisticsCombine, {ps, 2, 2}, {C, parts, 0, C + 1}).ok());
}

TEST_CASE("kernels: the batch-norm gradients' sums in parts, the input gradient and the running update") {
  const float eps = 0.01f;
  auto x = values(static_cast<size_t>(N * C * S), 31), dy = values(static_cast<size_t>(N * C * S), 32);
  auto scale = values(C, 33);
  std::vector<float> mean(C), var(C);
  for (int64_t c = 0; c < C; ++c) {
    const auto [m, v] = moments(x, c);
    mean[static_cast<size_t>(c)] = static_cast<float>(m);
    var[static_cast<size_t>(c)] = static_cast<float>(v);
  }
  // Two parts over samples; summed here as the compiler's Reduce would.
  std::vector<float> ds_parts(2 * C), db_parts(2 * C);
  run(Codelet::kBatchNormGradStats,
      {x.data(), dy.data(), mean.data(), var.data(), ds_parts.data(), db_parts.data()},
      {N, C, S, 0, C, 0, 1, 0, S, 2, 0}, {eps});
  run(Codelet::kBatchNormGradStats,
      {x.data(), dy.data(), mean.data(), var.data(), ds_parts.data(), db_parts.data()},
      {N, C, S, 0, C, 1, N, 0, S, 2, 1}, {eps});
  std::vector<float> dscale(C), dbias(C);
  for (size_t c = 0; c < static_cast<size_t>(C); ++c) {
    dscale[c] = ds_parts[c] + ds_parts[C + c];
    dbias[c] = db_parts[c] + db_parts[C + c];
  }
  std::vector<float> dx(x.size());
  for (auto [b, e] : {std::pair<int64_t, int64_t>{0, 7}, {7, N * C * S}}) {
    run(Codelet::kBatchNormTrainGradInput,
        {x.data(), dy.data(), scale.data(), mean.data(), var.data(), dscale.data(), dbias.data(), dx.data()},
        {N, C, S, b, e}, {eps});
  }
  const double M = static_cast<double>(N * S);
  for (int64_t c = 0; c < C; ++c) {
    const size_t k = static_cast<size_t>(c);
    const double istd = 1.0 / std::sqrt(static_cast<double>(var[k]) + eps);
    double sum_dy = 0, sum_dy_xhat = 0;
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t s = 0; s < S; ++s) {
        const size_t i = static_cast<size_t>((n * C + c) * S + s);
        sum_dy += dy[i];
        sum_dy_xhat += dy[i] * (x[i] - mean[k]) * istd;
      }
    }
    check_scalar_close(dscale[k], sum_dy_xhat);
    check_scalar_close(dbias[k], sum_dy);
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t s = 0; s < S; ++s) {
        const size_t i = static_cast<size_t>((n * C + c) * S + s);
        const double x_hat = (x[i] - mean[k]) * istd;
        check_scalar_close(dx[i], scale[k] * istd * (dy[i] - sum_dy / M - x_hat * sum_dy_xhat / M));
      }
    }
  }
  // running = running·momentum + batch·(1 − momentum), the variance made unbiased (N·S/(N·S − 1)).
  std::vector<float> running_mean = {0.25f, -0.5f}, running_var = {2.0f, 3.0f};
  const float momentum = 0.9f;
  run(Codelet::kRunningStatistics, {running_mean.data(), running_var.data(), mean.data(), var.data()},
      {C, N * S, 0, C}, {momentum});
  check_scalar_close(running_mean[1], -0.5 * 0.9f + mean[1] * (1.0 - 0.9f));
  check_scalar_close(running_var[1], 3.0 * 0.9f + var[1] * M / (M - 1.0) * (1.0 - 0.9f));

  const auto xs = static_cast<uint64_t>(N * C * S), cs = static_cast<uint64_t>(C);
  CHECK(validate(Codelet::kRunningStatistics, {cs, cs, cs, cs}, {C, N * S, 0, C}, {momentum}).ok());
  CHECK_FALSE(validate(Codelet::kRunningStatistics, {cs, cs, cs, cs}, {C, 1, 0, C}, {momentum}).ok());
  CHECK(validate(Codelet::kBatchNormTrainGradInput, {xs, xs, cs, cs, cs, cs, cs, xs}, {N, C, S, 0, xs}, {eps})
            .ok());
  CHECK_FALSE(
      validate(Codelet::kBatchNormTrainGradInput, {xs, xs, cs, cs, cs, cs, cs, cs}, {N, C, S, 0, xs}, {eps})
          .ok());
  CHECK_FALSE(validate(Codelet::kBatchNormGradStats, {xs, xs, cs, cs, 2 * cs, cs},
                       {N, C, S, 0, C, 0, N, 0, S, 2, 0}, {eps})
                  .ok());
}

} // namespace
