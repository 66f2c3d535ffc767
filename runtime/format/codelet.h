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

// Parameter of the Activation and ActivationGrad codelets.
enum class ActivationKind : int64_t { kRelu = 0, kSigmoid = 1, kTanh = 2 };
inline constexpr int64_t kActivationKindCount = 3;

}  // namespace ipu::format
