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

// Parameter of the Activation and ActivationGrad codelets.
enum class ActivationKind : int64_t { kRelu = 0, kSigmoid = 1, kTanh = 2 };
inline constexpr int64_t kActivationKindCount = 3;

} // namespace ipu::format
