// Row-wise codelets over [M, C] score matrices: softmax, losses, metrics, column sums.
#include <algorithm>
#include <cmath>

#include "runtime/kernels/validate_util.h"
#include "runtime/kernels/vector_math.h"

namespace ipu::kernels {
namespace {

using format::FLOAT32;
using format::INT32;

// Keras clips probabilities to [eps, 1 - eps] before taking the log.
constexpr float kProbabilityEpsilon = 1e-7f;

// log(sum(exp(x))) computed stably.
float log_sum_exp(const float* x, int64_t n) {
  float max = *std::max_element(x, x + n);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i)
    sum += std::exp(static_cast<double>(x[i] - max));
  return max + static_cast<float>(std::log(sum));
}

// The first operand is [M, columns]; `columns` is the index of its column count (C or N).
template <typename P>
Status validate_rows(const format::Vertex& v, const std::vector<OperandInfo>& ops,
                     std::initializer_list<format::DType> dtypes, int columns) {
  IPU_RETURN_IF_ERROR(expect_operands(v, ops, dtypes));
  IPU_RETURN_IF_ERROR(expect_param_count(v, P::kCount, 0));
  return expect_elements({v.params(P::kM), v.params(columns)}, ops[0].elements, "scores");
}

// Softmax: Y[r,:] = softmax(X[r,:]) for rows [row_begin, row_end).
//   operands: X [M,C], Y [M,C];  params: format::params::Softmax
void run_softmax(const PreparedVertex& v) {
  using P = format::params::Softmax;
  const int64_t C = v.params[P::kC];
  for (int64_t r = v.params[P::kRowBegin]; r < v.params[P::kRowEnd]; ++r) {
    const float* x = v.f32(0) + r * C;
    float* y = v.f32(1) + r * C;
    float lse = log_sum_exp(x, C);
    for (int64_t c = 0; c < C; ++c)
      y[c] = x[c] - lse;
    libm_exp(y, y, C); // std::exp's bits, vectorised
  }
}

Status validate_softmax(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  using P = format::params::Softmax;
  IPU_RETURN_IF_ERROR(validate_rows<P>(v, ops, {FLOAT32, FLOAT32}, P::kC));
  if (ops[1].elements != ops[0].elements) return invalid_argument("output size differs from the input");
  return expect_range(v.params(P::kRowBegin), v.params(P::kRowEnd), v.params(P::kM), "row");
}

// SoftmaxGrad: dX = Y ⊙ (dY − Σ_c dY·Y) per row.
//   operands: Y, dY, dX [M,C];  params: format::params::SoftmaxGrad
void run_softmax_grad(const PreparedVertex& v) {
  using P = format::params::SoftmaxGrad;
  const int64_t C = v.params[P::kC];
  for (int64_t r = v.params[P::kRowBegin]; r < v.params[P::kRowEnd]; ++r) {
    const float* y = v.f32(0) + r * C;
    const float* dy = v.f32(1) + r * C;
    float* dx = v.f32(2) + r * C;
    float dot = 0.0f;
    for (int64_t c = 0; c < C; ++c)
      dot += dy[c] * y[c];
    for (int64_t c = 0; c < C; ++c)
      dx[c] = y[c] * (dy[c] - dot);
  }
}

Status validate_softmax_grad(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  using P = format::params::SoftmaxGrad;
  IPU_RETURN_IF_ERROR(validate_rows<P>(v, ops, {FLOAT32, FLOAT32, FLOAT32}, P::kC));
  if (ops[1].elements != ops[0].elements || ops[2].elements != ops[0].elements) {
    return invalid_argument("operand sizes differ");
  }
  return expect_range(v.params(P::kRowBegin), v.params(P::kRowEnd), v.params(P::kM), "row");
}

// The host checks a data set's labels before they reach the device; a label out of range here
// came another way (a hand-written executable) and is a fault all the same.
bool label_in_range(int32_t label, int64_t classes) {
  return label >= 0 && label < classes;
}

KernelFault label_fault(const int32_t* labels, int64_t row, int64_t classes) {
  return out_of_range("label", "labels", row, labels[row], 0, classes);
}

// SparseCrossEntropy: loss = mean_r −log p_r[label_r], p = softmax(scores) if from_logits else
// the clipped scores; a padded row (format::kPaddedRowLabel) adds 0.
//   operands: scores [M,C] f32, labels [M] i32, loss [1] f32;  params: format::params::SparseCrossEntropy
void run_sparse_cross_entropy(const PreparedVertex& v, KernelContext& context) {
  using P = format::params::SparseCrossEntropy;
  const int64_t M = v.params[P::kM], C = v.params[P::kC];
  const bool from_logits = v.params[P::kFromLogits] != 0;
  const int32_t* labels = v.i32(1);
  double total = 0.0;
  for (int64_t r = 0; r < M; ++r) {
    const float* s = v.f32(0) + r * C;
    if (labels[r] == format::kPaddedRowLabel) continue;
    if (!label_in_range(labels[r], C)) {
      context.fault = label_fault(labels, r, C);
      return;
    }
    if (from_logits) {
      total += static_cast<double>(log_sum_exp(s, C) - s[labels[r]]);
    } else {
      total -= std::log(
          static_cast<double>(std::clamp(s[labels[r]], kProbabilityEpsilon, 1.0f - kProbabilityEpsilon)));
    }
  }
  *v.f32(2) = static_cast<float>(total / static_cast<double>(M));
}

Status validate_sparse_cross_entropy(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  using P = format::params::SparseCrossEntropy;
  IPU_RETURN_IF_ERROR(validate_rows<P>(v, ops, {FLOAT32, INT32, FLOAT32}, P::kC));
  IPU_RETURN_IF_ERROR(expect_elements({v.params(P::kM)}, ops[1].elements, "labels"));
  return expect_elements({1}, ops[2].elements, "loss");
}

// SparseCrossEntropyGrad: d(mean loss)/d scores for rows [row_begin, row_end); zero for a padded
// row.
//   operands: scores [M,C] f32, labels [M] i32, dScores [M,C] f32
//   params:   format::params::SparseCrossEntropyGrad
void run_sparse_cross_entropy_grad(const PreparedVertex& v, KernelContext& context) {
  using P = format::params::SparseCrossEntropyGrad;
  const int64_t M = v.params[P::kM], C = v.params[P::kC];
  const bool from_logits = v.params[P::kFromLogits] != 0;
  const float scale = 1.0f / static_cast<float>(M);
  const int32_t* labels = v.i32(1);
  for (int64_t r = v.params[P::kRowBegin]; r < v.params[P::kRowEnd]; ++r) {
    const float* s = v.f32(0) + r * C;
    float* ds = v.f32(2) + r * C;
    const int32_t label = labels[r];
    if (label == format::kPaddedRowLabel) {
      std::fill(ds, ds + C, 0.0f);
      continue;
    }
    if (!label_in_range(label, C)) {
      context.fault = label_fault(labels, r, C);
      return;
    }
    if (from_logits) {
      float lse = log_sum_exp(s, C);
      for (int64_t c = 0; c < C; ++c)
        ds[c] = std::exp(s[c] - lse) * scale;
      ds[label] -= scale;
    } else {
      std::fill(ds, ds + C, 0.0f);
      float p = s[label];
      if (p > kProbabilityEpsilon && p < 1.0f - kProbabilityEpsilon) ds[label] = -scale / p;
    }
  }
}

Status validate_sparse_cross_entropy_grad(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  using P = format::params::SparseCrossEntropyGrad;
  IPU_RETURN_IF_ERROR(validate_rows<P>(v, ops, {FLOAT32, INT32, FLOAT32}, P::kC));
  IPU_RETURN_IF_ERROR(expect_elements({v.params(P::kM)}, ops[1].elements, "labels"));
  if (ops[2].elements != ops[0].elements) return invalid_argument("gradient size differs from the scores");
  return expect_range(v.params(P::kRowBegin), v.params(P::kRowEnd), v.params(P::kM), "row");
}

// CountCorrect: number of rows whose first maximal score is at the label (never a padded row).
//   operands: scores [M,C] f32, labels [M] i32, correct [1] f32;  params: format::params::CountCorrect
void run_count_correct(const PreparedVertex& v, KernelContext& context) {
  using P = format::params::CountCorrect;
  const int64_t M = v.params[P::kM], C = v.params[P::kC];
  const int32_t* labels = v.i32(1);
  int64_t correct = 0;
  for (int64_t r = 0; r < M; ++r) {
    if (labels[r] == format::kPaddedRowLabel) continue;
    if (!label_in_range(labels[r], C)) {
      context.fault = label_fault(labels, r, C);
      return;
    }
    const float* s = v.f32(0) + r * C;
    correct += (std::max_element(s, s + C) - s) == labels[r];
  }
  *v.f32(2) = static_cast<float>(correct);
}

Status validate_count_correct(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  using P = format::params::CountCorrect;
  IPU_RETURN_IF_ERROR(validate_rows<P>(v, ops, {FLOAT32, INT32, FLOAT32}, P::kC));
  IPU_RETURN_IF_ERROR(expect_elements({v.params(P::kM)}, ops[1].elements, "labels"));
  return expect_elements({1}, ops[2].elements, "correct");
}

// ColumnSum: y[c] = Σ_r X[r,c] for columns [col_begin, col_end) (bias gradients).
//   operands: X [M,N], y [N];  params: format::params::ColumnSum
void run_column_sum(const PreparedVertex& v) {
  using P = format::params::ColumnSum;
  const int64_t M = v.params[P::kM], N = v.params[P::kN], begin = v.params[P::kColBegin],
                end = v.params[P::kColEnd];
  float* y = v.f32(1);
  std::fill(y + begin, y + end, 0.0f);
  for (int64_t r = 0; r < M; ++r) {
    const float* x = v.f32(0) + r * N;
    for (int64_t c = begin; c < end; ++c)
      y[c] += x[c];
  }
}

Status validate_column_sum(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  using P = format::params::ColumnSum;
  IPU_RETURN_IF_ERROR(validate_rows<P>(v, ops, {FLOAT32, FLOAT32}, P::kN));
  IPU_RETURN_IF_ERROR(expect_elements({v.params(P::kN)}, ops[1].elements, "y"));
  return expect_range(v.params(P::kColBegin), v.params(P::kColEnd), v.params(P::kN), "column");
}

} // namespace

const KernelDef& softmax_kernel() {
  static const KernelDef def{Codelet::kSoftmax,
                             run_softmax,
                             validate_softmax,
                             {format::params::Softmax::kRowBegin, format::params::Softmax::kRowEnd}};
  return def;
}
const KernelDef& softmax_grad_kernel() {
  static const KernelDef def{Codelet::kSoftmaxGrad,
                             run_softmax_grad,
                             validate_softmax_grad,
                             {format::params::SoftmaxGrad::kRowBegin, format::params::SoftmaxGrad::kRowEnd}};
  return def;
}
const KernelDef& sparse_cross_entropy_kernel() {
  static const KernelDef def{Codelet::kSparseCrossEntropy, KernelEntry::fallible(run_sparse_cross_entropy),
                             validate_sparse_cross_entropy};
  return def;
}
const KernelDef& sparse_cross_entropy_grad_kernel() {
  static const KernelDef def{
      Codelet::kSparseCrossEntropyGrad,
      KernelEntry::fallible(run_sparse_cross_entropy_grad),
      validate_sparse_cross_entropy_grad,
      {format::params::SparseCrossEntropyGrad::kRowBegin, format::params::SparseCrossEntropyGrad::kRowEnd}};
  return def;
}
const KernelDef& count_correct_kernel() {
  static const KernelDef def{Codelet::kCountCorrect, KernelEntry::fallible(run_count_correct),
                             validate_count_correct};
  return def;
}
const KernelDef& column_sum_kernel() {
  static const KernelDef def{Codelet::kColumnSum,
                             run_column_sum,
                             validate_column_sum,
                             {format::params::ColumnSum::kColBegin, format::params::ColumnSum::kColEnd}};
  return def;
}

} // namespace ipu::kernels
