// The Keras losses on float labels (codelets 72-74) against a plain double reference of Keras's
// definitions, their gradient against central differences of that reference, and their
// validators against parameters that would read or write out of range.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "runtime/kernels/kernel.h"
#include "tests/unit/runtime/kernels/kernel_test_support.h"

namespace {

using ipu::format::Codelet;
using ipu::format::LossKind;
using namespace ipu::kernels::testing;

constexpr int64_t M = 3, kCols = 4;
constexpr double kEps = 1e-7;

// Predictions of each kind's usual output: logits, probabilities (softmax rows, or independent
// sigmoids) and regression outputs.
const std::vector<float> kLogits = {0.3f, -1.2f, 2.0f, 0.5f, -0.7f, 0.1f,
                                    0.4f, -2.5f, 1.5f, 1.4f, -0.3f, 0.0f};
const std::vector<float> kSigmoids = {0.8f, 0.1f, 0.55f, 0.3f, 0.05f, 0.9f,
                                      0.6f, 0.4f, 0.7f,  0.2f, 0.35f, 0.95f};
const std::vector<float> kSoftLabels = {0.1f, 0.6f, 0.2f, 0.1f, 0, 0, 0, 1, 0.25f, 0.25f, 0.5f, 0};
const std::vector<float> kBinaryLabels = {1, 0, 0, 1, 0, 1, 1, 0.3f, 1, 1, 0, 0};
// No error sits on a kink of MAE (0) or Huber (±1, ±0.4).
const std::vector<float> kTargets = {0.9f,  -1.0f, 2.5f, 0.15f, -0.4f, 0.7f,
                                     -2.2f, 1.6f,  0.2f, 3.1f,  -0.8f, 0.45f};

struct DenseLossCase {
  const char* name;
  LossKind kind;
  bool from_logits;
  float delta;
  const std::vector<float>* predictions;
  const std::vector<float>* labels;
};

const DenseLossCase kCases[] = {
    {"categorical_crossentropy from logits", LossKind::kCategoricalCrossEntropy, true, 1, &kLogits,
     &kSoftLabels},
    {"categorical_crossentropy, unnormalised probabilities", LossKind::kCategoricalCrossEntropy, false, 1,
     &kSigmoids, &kSoftLabels},
    {"binary_crossentropy from logits", LossKind::kBinaryCrossEntropy, true, 1, &kLogits, &kBinaryLabels},
    {"binary_crossentropy", LossKind::kBinaryCrossEntropy, false, 1, &kSigmoids, &kBinaryLabels},
    {"mean_squared_error", LossKind::kMeanSquaredError, false, 1, &kLogits, &kTargets},
    {"mean_absolute_error", LossKind::kMeanAbsoluteError, false, 1, &kLogits, &kTargets},
    {"huber", LossKind::kHuber, false, 1, &kLogits, &kTargets},
    {"huber delta 0.4", LossKind::kHuber, false, 0.4f, &kLogits, &kTargets},
};

// Keras's definitions (keras/src/losses/losses.py, keras/src/backend/numpy/nn.py), element by
// element in double, mean over the batch ("sum_over_batch_size").
double reference_dense_loss(const DenseLossCase& c, const std::vector<double>& s) {
  const std::vector<float>& y = *c.labels;
  double total = 0;
  for (int64_t r = 0; r < M; ++r) {
    const double* sr = s.data() + r * kCols;
    const float* yr = y.data() + r * kCols;
    double row = 0;
    if (c.kind == LossKind::kCategoricalCrossEntropy) {
      double norm = 0;
      for (int64_t k = 0; k < kCols; ++k)
        norm += c.from_logits ? std::exp(sr[k]) : sr[k];
      for (int64_t k = 0; k < kCols; ++k) {
        const double p = c.from_logits ? std::exp(sr[k]) / norm : std::clamp(sr[k] / norm, kEps, 1 - kEps);
        row -= yr[k] * std::log(p);
      }
    } else {
      for (int64_t k = 0; k < kCols; ++k) {
        const double x = sr[k], t = yr[k];
        double e = 0;
        switch (c.kind) {
        case LossKind::kBinaryCrossEntropy: {
          const double p = c.from_logits ? 1 / (1 + std::exp(-x)) : std::clamp(x, kEps, 1 - kEps);
          e = -(t * std::log(p) + (1 - t) * std::log(1 - p));
          break;
        }
        case LossKind::kMeanSquaredError:
          e = (x - t) * (x - t);
          break;
        case LossKind::kMeanAbsoluteError:
          e = std::abs(x - t);
          break;
        default: {
          const double a = std::abs(x - t), d = c.delta;
          e = a <= d ? 0.5 * a * a : 0.5 * d * d + d * (a - d);
          break;
        }
        }
        row += e / kCols;
      }
    }
    total += row;
  }
  return total / M;
}

std::vector<double> widen(const std::vector<float>& v) {
  return {v.begin(), v.end()};
}

float run_dense_loss(const DenseLossCase& c, std::vector<float> s, std::vector<float> y) {
  float loss = -7.0f;
  run(Codelet::kDenseLoss, {s.data(), y.data(), &loss},
      {M, kCols, static_cast<int64_t>(c.kind), c.from_logits ? 1 : 0}, {c.delta});
  return loss;
}

TEST_CASE("kernels: DenseLoss computes each Keras loss") {
  for (const DenseLossCase& c : kCases) {
    INFO(c.name);
    const double want = reference_dense_loss(c, widen(*c.predictions));
    CHECK(run_dense_loss(c, *c.predictions, *c.labels) == doctest::Approx(want).epsilon(1e-6));
  }
}

TEST_CASE("kernels: DenseLossGrad matches central differences of the Keras loss, over two row ranges") {
  for (const DenseLossCase& c : kCases) {
    INFO(c.name);
    std::vector<float> s = *c.predictions, y = *c.labels;
    std::vector<float> ds(s.size(), -7.0f);
    const std::vector<int64_t> head = {M, kCols, static_cast<int64_t>(c.kind), c.from_logits ? 1 : 0};
    for (auto [begin, end] : {std::pair<int64_t, int64_t>{0, 2}, {2, M}}) {
      std::vector<int64_t> params = head;
      params.push_back(begin);
      params.push_back(end);
      run(Codelet::kDenseLossGrad, {s.data(), y.data(), ds.data()}, params, {c.delta});
    }
    const std::vector<double> base = widen(s);
    for (size_t i = 0; i < s.size(); ++i) {
      const double h = 1e-6;
      std::vector<double> plus = base, minus = base;
      plus[i] += h;
      minus[i] -= h;
      const double numeric = (reference_dense_loss(c, plus) - reference_dense_loss(c, minus)) / (2 * h);
      INFO("element " << i << ": got " << ds[i] << ", want " << numeric);
      CHECK(std::abs(ds[i] - numeric) <= 1e-6 + 1e-5 * std::abs(numeric));
    }
  }
}

TEST_CASE("kernels: DenseLoss clips probabilities at 1e-7 like Keras, with a zero gradient there") {
  const DenseLossCase c{"binary_crossentropy", LossKind::kBinaryCrossEntropy, false, 1, nullptr, nullptr};
  std::vector<float> s(M * kCols, 0.5f), y(M * kCols, 0.0f), ds(M * kCols, -7.0f);
  s[0] = 1.0f; // label 0: −log(1 − p) clipped to −log(1e-7)
  s[1] = 0.0f;
  y[1] = 1.0f; // label 1: −log(p) clipped likewise
  float loss = 0;
  run(Codelet::kDenseLoss, {s.data(), y.data(), &loss}, {M, kCols, static_cast<int64_t>(c.kind), 0}, {1.0f});
  // Keras clips in float32, where 1 − 1e-7 is 1 − 2^-23 (0.99999988): for p = 1, 1 − p is 1.19e-7.
  const double low = -std::log(static_cast<double>(1e-7f));
  const double high = -std::log(1.0 - static_cast<double>(1.0f - 1e-7f));
  const double want = (low + high + 10 * std::log(2.0)) / (M * kCols);
  CHECK(loss == doctest::Approx(want).epsilon(1e-5));
  run(Codelet::kDenseLossGrad, {s.data(), y.data(), ds.data()},
      {M, kCols, static_cast<int64_t>(c.kind), 0, 0, M}, {1.0f});
  CHECK(ds[0] == 0.0f);
  CHECK(ds[1] == 0.0f);
  CHECK(ds[2] == doctest::Approx(2.0 / (M * kCols)));
}

TEST_CASE("kernels: padded rows add nothing to DenseLoss, its gradient or DenseCorrect") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (LossKind kind : {LossKind::kCategoricalCrossEntropy, LossKind::kMeanSquaredError}) {
    std::vector<float> s = kLogits, y = kSoftLabels;
    std::fill(y.begin() + 2 * kCols, y.end(), nan); // the last row is padding
    float loss = 0, correct = 0;
    std::vector<float> ds(s.size(), -7.0f);
    const int64_t k = static_cast<int64_t>(kind);
    run(Codelet::kDenseLoss, {s.data(), y.data(), &loss}, {M, kCols, k, 1}, {1.0f});
    run(Codelet::kDenseLossGrad, {s.data(), y.data(), ds.data()}, {M, kCols, k, 1, 0, M}, {1.0f});
    // The mean still divides by all M rows: the first two rows' losses times 2/M.
    std::vector<float> s2(kLogits.begin(), kLogits.begin() + 2 * kCols),
        y2(kSoftLabels.begin(), kSoftLabels.begin() + 2 * kCols);
    float loss2 = 0;
    run(Codelet::kDenseLoss, {s2.data(), y2.data(), &loss2}, {2, kCols, k, 1}, {1.0f});
    CHECK(loss == doctest::Approx(loss2 * 2.0 / M).epsilon(1e-6));
    for (int64_t i = 2 * kCols; i < M * kCols; ++i)
      CHECK(ds[static_cast<size_t>(i)] == 0.0f);
    if (kind == LossKind::kCategoricalCrossEntropy) {
      run(Codelet::kDenseCorrect, {s.data(), y.data(), &correct}, {M, kCols, k, 1});
      CHECK(correct == 0.0f); // row 0: argmax 2 vs label 1; row 1: 2 vs 3; row 2 padded
    }
  }
}

TEST_CASE("kernels: DenseCorrect counts Keras's categorical and binary accuracy") {
  std::vector<float> s = kLogits, onehot(M * kCols, 0.0f), correct(1);
  onehot[2] = 1;             // row 0: argmax of the logits is 2: correct
  onehot[kCols + 3] = 1;     // row 1: argmax 2: wrong
  onehot[2 * kCols + 0] = 1; // row 2: argmax 0 (1.5 > 1.4): correct
  run(Codelet::kDenseCorrect, {s.data(), onehot.data(), correct.data()},
      {M, kCols, static_cast<int64_t>(LossKind::kCategoricalCrossEntropy), 1});
  CHECK(correct[0] == 2.0f);
  // Binary: a prediction is 1 above 0.5 (above 0 for logits); a row scores the fraction of its
  // elements equal to their label, so the soft label 0.3 never matches.
  std::vector<float> y = kBinaryLabels;
  run(Codelet::kDenseCorrect, {const_cast<float*>(kSigmoids.data()), y.data(), correct.data()},
      {M, kCols, static_cast<int64_t>(LossKind::kBinaryCrossEntropy), 0});
  // row 0: 1,0,1,0 vs 1,0,0,1 → 2/4; row 1: 0,1,1,0 vs 0,1,1,0.3 → 3/4; row 2: 1,0,0,1 vs 1,1,0,0 → 2/4
  CHECK(correct[0] == doctest::Approx(1.75));
  run(Codelet::kDenseCorrect, {s.data(), y.data(), correct.data()},
      {M, kCols, static_cast<int64_t>(LossKind::kBinaryCrossEntropy), 1});
  // logits > 0: row 0: 1,0,1,1 vs 1,0,0,1 → 3/4; row 1: 0,1,1,0 → 3/4; row 2: 1,1,0,0 → 4/4
  CHECK(correct[0] == doctest::Approx(2.5));
}

TEST_CASE("kernels: the DenseLoss validators reject what would read or write out of range") {
  const uint64_t n = M * kCols;
  const auto kind = static_cast<int64_t>(LossKind::kHuber);
  CHECK(validate(Codelet::kDenseLoss, {n, n, 1}, {M, kCols, kind, 0}, {1.0f}).ok());
  CHECK(!validate(Codelet::kDenseLoss, {n, n - 1, 1}, {M, kCols, kind, 0}, {1.0f}).ok()); // short labels
  CHECK(!validate(Codelet::kDenseLoss, {n, n, 2}, {M, kCols, kind, 0}, {1.0f}).ok());     // loss not [1]
  CHECK(!validate(Codelet::kDenseLoss, {n, n, 1}, {M, kCols, 5, 0}, {1.0f}).ok());        // unknown kind
  CHECK(!validate(Codelet::kDenseLoss, {n, n, 1}, {M, kCols, kind, 2}, {1.0f}).ok());     // from_logits 2
  CHECK(!validate(Codelet::kDenseLoss, {n, n, 1}, {M, kCols, kind, 0}, {0.0f}).ok());     // delta 0
  CHECK(!validate(Codelet::kDenseLoss, {n, n, 1}, {M, kCols, kind, 0}).ok());             // no delta
  CHECK(validate(Codelet::kDenseLossGrad, {n, n, n}, {M, kCols, kind, 0, 1, M}, {1.0f}).ok());
  CHECK(!validate(Codelet::kDenseLossGrad, {n, n, n}, {M, kCols, kind, 0, 1, M + 1}, {1.0f}).ok());
  CHECK(!validate(Codelet::kDenseLossGrad, {n, n, n - 1}, {M, kCols, kind, 0, 0, M}, {1.0f}).ok());
  const auto cce = static_cast<int64_t>(LossKind::kCategoricalCrossEntropy);
  CHECK(validate(Codelet::kDenseCorrect, {n, n, 1}, {M, kCols, cce, 1}).ok());
  CHECK(!validate(Codelet::kDenseCorrect, {n, n, 1}, {M, kCols, kind, 0}).ok()); // Huber counts no accuracy
}

TEST_CASE(
    "kernels: MetricSum sums top-k hits (ties count, as tf.math.in_top_k) and squared or absolute errors") {
  using ipu::format::MetricKind;
  // Row 0: 0.3, -1.2, 2.0, 0.5; row 1: -0.7, 0.1, 0.4, -2.5; row 2: 1.5, 1.4, -0.3, 0.0.
  std::vector<float> s = kLogits, sum(1);
  std::vector<int32_t> labels = {0, 1, 3};
  const auto top_k = static_cast<int64_t>(MetricKind::kSparseTopK);
  // k = 2: row 0's label 0 (third largest) misses; row 1's label 1 is second: hit; row 2's label 3
  // (0.0) is third: miss.
  run(Codelet::kMetricSum, {s.data(), labels.data(), sum.data()}, {M, kCols, top_k, 2});
  CHECK(sum[0] == 1.0f);
  run(Codelet::kMetricSum, {s.data(), labels.data(), sum.data()}, {M, kCols, top_k, 3});
  CHECK(sum[0] == 3.0f);
  // A score tied with the k-th largest is in the top k.
  std::vector<float> tied = {1, 1, 1, 0};
  std::vector<int32_t> third = {2};
  run(Codelet::kMetricSum, {tied.data(), third.data(), sum.data()}, {1, kCols, top_k, 1});
  CHECK(sum[0] == 1.0f);
  // Padded rows add nothing; a label out of range is a fault.
  labels[2] = ipu::format::kPaddedRowLabel;
  run(Codelet::kMetricSum, {s.data(), labels.data(), sum.data()}, {M, kCols, top_k, 3});
  CHECK(sum[0] == 2.0f);
  labels[1] = 4;
  CHECK(run_for_fault(
      vertex(Codelet::kMetricSum, {s.data(), labels.data(), sum.data()}, {M, kCols, top_k, 3})));

  std::vector<float> y = kTargets;
  for (MetricKind kind : {MetricKind::kMeanSquaredError, MetricKind::kMeanAbsoluteError}) {
    double want = 0;
    for (int64_t r = 0; r < M; ++r) {
      double row = 0;
      for (int64_t c = 0; c < kCols; ++c) {
        const double e = static_cast<double>(s[static_cast<size_t>(r * kCols + c)]) -
                         y[static_cast<size_t>(r * kCols + c)];
        row += kind == MetricKind::kMeanSquaredError ? e * e : std::abs(e);
      }
      want += row / kCols;
    }
    run(Codelet::kMetricSum, {s.data(), y.data(), sum.data()}, {M, kCols, static_cast<int64_t>(kind), 0});
    CHECK(sum[0] == doctest::Approx(want).epsilon(1e-6));
  }
  const uint64_t n = M * kCols;
  CHECK(validate(Codelet::kMetricSum, {n, n, 1},
                 {M, kCols, static_cast<int64_t>(MetricKind::kMeanAbsoluteError), 0})
            .ok());
  CHECK(!validate(Codelet::kMetricSum, {n, n, 1}, {M, kCols, 3, 0}).ok());     // unknown kind
  CHECK(!validate(Codelet::kMetricSum, {n, n - 1, 1}, {M, kCols, 1, 0}).ok()); // short labels
  // Top-k reads int32 labels, so float ones of any size are refused.
  CHECK(!validate(Codelet::kMetricSum, {n, M, 1}, {M, kCols, top_k, 2}).ok());
}

} // namespace
