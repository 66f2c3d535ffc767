// The Keras losses on float labels (format::LossKind), their gradient, the accuracy counts that
// go with them, and the other metrics (format::MetricKind). Predictions S and labels Y are [M, C]; the loss
// is Keras's "sum over batch size" reduction: the mean over the M rows of a row loss that sums (categorical
// cross-entropy) or averages (the element-wise losses) over the C columns. docs/training.md writes each out.
//
// A padded row (format::is_padded_float_label_row) adds 0 and gets a zero gradient; the mean
// still divides by M, and the host rescales by the real rows, as for SparseCrossEntropy.
#include <algorithm>
#include <cmath>

#include "runtime/kernels/validate_util.h"

namespace ipu::kernels {
namespace {

using format::FLOAT32;
using format::INT32;
using format::LossKind;
using format::MetricKind;

// Keras clips probabilities to [eps, 1 - eps] before taking their log. The gradient is zero
// where the clip is active (strictly outside the open interval, as SparseCrossEntropy does).
constexpr double kEpsilon = 1e-7f;
constexpr double kOneMinusEpsilon = 1.0f - 1e-7f;

double clip_probability(double p) {
  return std::clamp(p, kEpsilon, kOneMinusEpsilon);
}
bool inside_clip(double p) {
  return p > kEpsilon && p < kOneMinusEpsilon;
}

double log_sum_exp(const float* x, int64_t n) {
  const double max = *std::max_element(x, x + n);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i)
    sum += std::exp(static_cast<double>(x[i]) - max);
  return max + std::log(sum);
}

double sign(double x) {
  return static_cast<double>((x > 0.0) - (x < 0.0));
}

struct LossRow {
  LossKind kind;
  bool from_logits;
  double delta;
  int64_t C;
};

// The loss of one element of the element-wise kinds (binary cross-entropy, MSE, MAE, Huber).
double element_loss(const LossRow& r, double s, double y) {
  switch (r.kind) {
  case LossKind::kBinaryCrossEntropy:
    if (r.from_logits) return std::max(s, 0.0) - s * y + std::log1p(std::exp(-std::abs(s)));
    return -(y * std::log(clip_probability(s)) + (1.0 - y) * std::log(1.0 - clip_probability(s)));
  case LossKind::kMeanSquaredError:
    return (s - y) * (s - y);
  case LossKind::kMeanAbsoluteError:
    return std::abs(s - y);
  case LossKind::kHuber: {
    const double e = std::abs(s - y);
    return e <= r.delta ? 0.5 * e * e : r.delta * e - 0.5 * r.delta * r.delta;
  }
  case LossKind::kCategoricalCrossEntropy:
    break;
  }
  return 0.0;
}

// d element_loss / d s.
double element_gradient(const LossRow& r, double s, double y) {
  switch (r.kind) {
  case LossKind::kBinaryCrossEntropy:
    if (r.from_logits) return 1.0 / (1.0 + std::exp(-s)) - y;
    return inside_clip(s) ? -y / s + (1.0 - y) / (1.0 - s) : 0.0;
  case LossKind::kMeanSquaredError:
    return 2.0 * (s - y);
  case LossKind::kMeanAbsoluteError:
    return sign(s - y);
  case LossKind::kHuber: {
    const double e = s - y;
    return std::abs(e) <= r.delta ? e : r.delta * sign(e);
  }
  case LossKind::kCategoricalCrossEntropy:
    break;
  }
  return 0.0;
}

// The loss of one row: categorical cross-entropy −Σ_c y_c log p_c, with p the softmax of the
// logits, or the predictions normalised to sum 1 and clipped (Keras); else the mean element loss.
double row_loss(const LossRow& r, const float* s, const float* y) {
  double total = 0.0;
  if (r.kind != LossKind::kCategoricalCrossEntropy) {
    for (int64_t c = 0; c < r.C; ++c)
      total += element_loss(r, s[c], y[c]);
    return total / static_cast<double>(r.C);
  }
  if (r.from_logits) {
    const double lse = log_sum_exp(s, r.C);
    for (int64_t c = 0; c < r.C; ++c)
      total += static_cast<double>(y[c]) * (lse - static_cast<double>(s[c]));
    return total;
  }
  double sum = 0.0;
  for (int64_t c = 0; c < r.C; ++c)
    sum += s[c];
  for (int64_t c = 0; c < r.C; ++c)
    total -= static_cast<double>(y[c]) * std::log(clip_probability(s[c] / sum));
  return total;
}

// d row_loss / d s, times `scale`, into ds.
void row_gradient(const LossRow& r, const float* s, const float* y, double scale, float* ds) {
  if (r.kind != LossKind::kCategoricalCrossEntropy) {
    const double element_scale = scale / static_cast<double>(r.C);
    for (int64_t c = 0; c < r.C; ++c)
      ds[c] = static_cast<float>(element_gradient(r, s[c], y[c]) * element_scale);
    return;
  }
  double label_sum = 0.0;
  if (r.from_logits) {
    // d/ds_j = softmax_j · Σ_c y_c − y_j
    for (int64_t c = 0; c < r.C; ++c)
      label_sum += y[c];
    const double lse = log_sum_exp(s, r.C);
    for (int64_t c = 0; c < r.C; ++c)
      ds[c] = static_cast<float>((std::exp(s[c] - lse) * label_sum - y[c]) * scale);
    return;
  }
  // With q = s / Σs and u_c = [q_c inside the clip]: d/ds_j = (Σ_c y_c u_c − y_j u_j / q_j) / Σs.
  double sum = 0.0;
  for (int64_t c = 0; c < r.C; ++c)
    sum += s[c];
  for (int64_t c = 0; c < r.C; ++c) {
    if (inside_clip(s[c] / sum)) label_sum += y[c];
  }
  for (int64_t c = 0; c < r.C; ++c) {
    const double q = s[c] / sum;
    const double own = inside_clip(q) ? y[c] / q : 0.0;
    ds[c] = static_cast<float>((label_sum - own) / sum * scale);
  }
}

template <typename P> LossRow loss_row(const PreparedVertex& v, float delta) {
  return {static_cast<LossKind>(v.params[P::kKind]), v.params[P::kFromLogits] != 0, delta, v.params[P::kC]};
}

// DenseLoss: loss = (1/M) Σ_r row_loss(S[r], Y[r]), padded rows adding 0.
//   operands: S [M,C], Y [M,C], loss [1] (all f32);  params: format::params::DenseLoss;
//   fparams: format::fparams::DenseLoss
void run_dense_loss(const PreparedVertex& v) {
  using P = format::params::DenseLoss;
  const int64_t M = v.params[P::kM], C = v.params[P::kC];
  const LossRow r = loss_row<P>(v, v.fparams[format::fparams::DenseLoss::kDelta]);
  double total = 0.0;
  for (int64_t row = 0; row < M; ++row) {
    const float* y = v.f32(1) + row * C;
    if (format::is_padded_float_label_row(y)) continue;
    total += row_loss(r, v.f32(0) + row * C, y);
  }
  *v.f32(2) = static_cast<float>(total / static_cast<double>(M));
}

// DenseLossGrad: dS[r] = d loss / d S[r] for rows [row_begin, row_end); zero for a padded row.
//   operands: S [M,C], Y [M,C], dS [M,C] (all f32);  params: format::params::DenseLossGrad;
//   fparams: format::fparams::DenseLossGrad
void run_dense_loss_grad(const PreparedVertex& v) {
  using P = format::params::DenseLossGrad;
  const int64_t M = v.params[P::kM], C = v.params[P::kC];
  const LossRow r = loss_row<P>(v, v.fparams[format::fparams::DenseLossGrad::kDelta]);
  const double scale = 1.0 / static_cast<double>(M);
  for (int64_t row = v.params[P::kRowBegin]; row < v.params[P::kRowEnd]; ++row) {
    const float* y = v.f32(1) + row * C;
    float* ds = v.f32(2) + row * C;
    if (format::is_padded_float_label_row(y)) {
      std::fill(ds, ds + C, 0.0f);
      continue;
    }
    row_gradient(r, v.f32(0) + row * C, y, scale, ds);
  }
}

// DenseCorrect: the rows predicted correctly, Keras's accuracy for the loss: for categorical
// cross-entropy a row whose first maximal prediction is its first maximal label
// (categorical_accuracy); for binary cross-entropy the fraction of a row's elements whose
// prediction, thresholded at 0.5 (at 0 for logits, the same decision), equals the label
// (binary_accuracy). Padded rows count 0.
//   operands: S [M,C], Y [M,C], correct [1] (all f32);  params: format::params::DenseCorrect
void run_dense_correct(const PreparedVertex& v) {
  using P = format::params::DenseCorrect;
  const int64_t M = v.params[P::kM], C = v.params[P::kC];
  const bool binary = static_cast<LossKind>(v.params[P::kKind]) == LossKind::kBinaryCrossEntropy;
  const float threshold = v.params[P::kFromLogits] != 0 ? 0.0f : 0.5f;
  double correct = 0.0;
  for (int64_t row = 0; row < M; ++row) {
    const float* s = v.f32(0) + row * C;
    const float* y = v.f32(1) + row * C;
    if (format::is_padded_float_label_row(y)) continue;
    if (binary) {
      int64_t matches = 0;
      for (int64_t c = 0; c < C; ++c)
        matches += (s[c] > threshold ? 1.0f : 0.0f) == y[c];
      correct += static_cast<double>(matches) / static_cast<double>(C);
    } else {
      correct += (std::max_element(s, s + C) - s) == (std::max_element(y, y + C) - y);
    }
  }
  *v.f32(2) = static_cast<float>(correct);
}

// The checks the three share: three f32 operands, S and Y of [M, C], the kind and flag in range.
template <typename P>
Status validate_dense(const format::Vertex& v, const std::vector<OperandInfo>& ops, int fparams) {
  IPU_RETURN_IF_ERROR(expect_operands(v, ops, {FLOAT32, FLOAT32, FLOAT32}));
  IPU_RETURN_IF_ERROR(expect_param_count(v, P::kCount, fparams));
  IPU_RETURN_IF_ERROR(expect_elements({v.params(P::kM), v.params(P::kC)}, ops[0].elements, "predictions"));
  IPU_RETURN_IF_ERROR(expect_elements({v.params(P::kM), v.params(P::kC)}, ops[1].elements, "labels"));
  const int64_t kind = v.params(P::kKind);
  if (kind < 0 || kind >= format::kLossKindCount) return invalid_argument("unknown loss kind");
  if (v.params(P::kFromLogits) != 0 && v.params(P::kFromLogits) != 1)
    return invalid_argument("from_logits must be 0 or 1");
  if (v.operands(2) == v.operands(0) || v.operands(2) == v.operands(1))
    return invalid_argument("output aliases an input");
  return Status();
}

template <typename F> Status validate_delta(const format::Vertex& v) {
  const float delta = v.fparams(F::kDelta);
  if (!(delta > 0.0f) || !std::isfinite(delta)) return invalid_argument("Huber's delta must be positive");
  return Status();
}

Status validate_dense_loss(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  using F = format::fparams::DenseLoss;
  IPU_RETURN_IF_ERROR(validate_dense<format::params::DenseLoss>(v, ops, F::kCount));
  IPU_RETURN_IF_ERROR(validate_delta<F>(v));
  return expect_elements({1}, ops[2].elements, "loss");
}

Status validate_dense_loss_grad(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  using P = format::params::DenseLossGrad;
  using F = format::fparams::DenseLossGrad;
  IPU_RETURN_IF_ERROR(validate_dense<P>(v, ops, F::kCount));
  IPU_RETURN_IF_ERROR(validate_delta<F>(v));
  if (ops[2].elements != ops[0].elements)
    return invalid_argument("gradient size differs from the predictions");
  return expect_range(v.params(P::kRowBegin), v.params(P::kRowEnd), v.params(P::kM), "row");
}

Status validate_dense_correct(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  using P = format::params::DenseCorrect;
  IPU_RETURN_IF_ERROR(validate_dense<P>(v, ops, 0));
  const auto kind = static_cast<LossKind>(v.params(P::kKind));
  if (kind != LossKind::kCategoricalCrossEntropy && kind != LossKind::kBinaryCrossEntropy)
    return invalid_argument("accuracy is counted for the cross-entropies only");
  return expect_elements({1}, ops[2].elements, "correct");
}

// MetricSum: the sum over the rows of a metric; the host divides by the samples.
//   kSparseTopK: 1 where the label's score is among the k largest of its row (a score tied with
//     the k-th largest counts, as tf.math.in_top_k and Keras's sparse_top_k_categorical_accuracy);
//   kMeanSquaredError, kMeanAbsoluteError: the row's mean of (S − Y)² or |S − Y|.
// Padded rows (format::kPaddedRowLabel, or a NaN first label) add 0.
//   operands: S [M,C] f32, Y [M] i32 (top-k) or [M,C] f32, sum [1] f32;  params: format::params::MetricSum
void run_metric_sum(const PreparedVertex& v, KernelContext& context) {
  using P = format::params::MetricSum;
  const int64_t M = v.params[P::kM], C = v.params[P::kC], k = v.params[P::kK];
  const auto kind = static_cast<MetricKind>(v.params[P::kKind]);
  double sum = 0.0;
  for (int64_t row = 0; row < M; ++row) {
    const float* s = v.f32(0) + row * C;
    if (kind == MetricKind::kSparseTopK) {
      const int32_t label = v.i32(1)[row];
      if (label == format::kPaddedRowLabel) continue;
      if (label < 0 || label >= C) {
        context.fault = out_of_range("label", "labels", row, label, 0, C);
        return;
      }
      const int64_t greater = std::count_if(s, s + C, [&](float x) { return x > s[label]; });
      sum += greater < k ? 1.0 : 0.0;
      continue;
    }
    const float* y = v.f32(1) + row * C;
    if (format::is_padded_float_label_row(y)) continue;
    double row_sum = 0.0;
    for (int64_t c = 0; c < C; ++c) {
      const double e = static_cast<double>(s[c]) - y[c];
      row_sum += kind == MetricKind::kMeanSquaredError ? e * e : std::abs(e);
    }
    sum += row_sum / static_cast<double>(C);
  }
  *v.f32(2) = static_cast<float>(sum);
}

Status validate_metric_sum(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  using P = format::params::MetricSum;
  IPU_RETURN_IF_ERROR(expect_param_count(v, P::kCount, 0));
  const int64_t kind = v.params(P::kKind);
  if (kind < 0 || kind >= format::kMetricKindCount) return invalid_argument("unknown metric kind");
  const bool top_k = static_cast<MetricKind>(kind) == MetricKind::kSparseTopK;
  IPU_RETURN_IF_ERROR(expect_operands(v, ops, {FLOAT32, top_k ? INT32 : FLOAT32, FLOAT32}));
  IPU_RETURN_IF_ERROR(expect_elements({v.params(P::kM), v.params(P::kC)}, ops[0].elements, "predictions"));
  if (top_k) {
    IPU_RETURN_IF_ERROR(expect_elements({v.params(P::kM)}, ops[1].elements, "labels"));
    if (v.params(P::kK) < 1) return invalid_argument("top-k needs k >= 1");
  } else {
    IPU_RETURN_IF_ERROR(expect_elements({v.params(P::kM), v.params(P::kC)}, ops[1].elements, "labels"));
  }
  if (v.operands(2) == v.operands(0) || v.operands(2) == v.operands(1))
    return invalid_argument("output aliases an input");
  return expect_elements({1}, ops[2].elements, "sum");
}

} // namespace

const KernelDef& metric_sum_kernel() {
  static const KernelDef def{Codelet::kMetricSum, KernelEntry::fallible(run_metric_sum), validate_metric_sum};
  return def;
}

const KernelDef& dense_loss_kernel() {
  static const KernelDef def{Codelet::kDenseLoss, run_dense_loss, validate_dense_loss};
  return def;
}
const KernelDef& dense_loss_grad_kernel() {
  static const KernelDef def{
      Codelet::kDenseLossGrad,
      run_dense_loss_grad,
      validate_dense_loss_grad,
      {format::params::DenseLossGrad::kRowBegin, format::params::DenseLossGrad::kRowEnd}};
  return def;
}
const KernelDef& dense_correct_kernel() {
  static const KernelDef def{Codelet::kDenseCorrect, run_dense_correct, validate_dense_correct};
  return def;
}

} // namespace ipu::kernels
