// Codelet ids and the small enums their parameters use: part of the executable format, written
// by the compiler and run by runtime/kernels.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace ipu::format {

enum class Codelet : uint32_t {
#define CODELET(name, id, text) name = id,
#include "runtime/format/codelets.def"
#undef CODELET
};

std::string_view codelet_name(Codelet codelet);
std::optional<Codelet> codelet_from_id(uint32_t id);

// The label the host gives the rows it pads the last execution of an evaluation with: the
// SparseCrossEntropy codelet counts such a row as a loss of 0 (its mean still divides by all M
// rows, so the host rescales by the real rows), CountCorrect never counts it, and
// SparseCrossEntropyGrad gives it a zero gradient. Labels from data are checked to be in [0, C).
inline constexpr int32_t kPaddedRowLabel = -1;

// The float-label losses (DenseLoss, DenseLossGrad, DenseCorrect) mark a padded row the same way
// with a NaN as the first label of the row: data labels are checked to be finite on the host.
// Such a row adds 0 to the loss (its mean still divides by all M rows), is never counted
// correct, and gets a zero gradient.
inline bool is_padded_float_label_row(const float* row_labels) {
  return row_labels[0] != row_labels[0];
}

// Parameter of the DenseLoss, DenseLossGrad and DenseCorrect codelets: the Keras losses on float
// labels [M, C] (docs/training.md has their equations).
enum class LossKind : int64_t {
  kCategoricalCrossEntropy = 0,
  kBinaryCrossEntropy = 1,
  kMeanSquaredError = 2,
  kMeanAbsoluteError = 3,
  kHuber = 4,
};
inline constexpr int64_t kLossKindCount = 5;

// Parameter of the MetricSum codelet: the metrics besides accuracy, each summed over the rows
// (the host divides by the samples). Top-k reads class indices (int32 [M]), the errors float
// labels [M, C].
enum class MetricKind : int64_t {
  kSparseTopK = 0,
  kMeanSquaredError = 1,
  kMeanAbsoluteError = 2,
};
inline constexpr int64_t kMetricKindCount = 3;

// Parameter of the Activation and ActivationGrad codelets.
enum class ActivationKind : int64_t { kRelu = 0, kSigmoid = 1, kTanh = 2 };
inline constexpr int64_t kActivationKindCount = 3;

} // namespace ipu::format
