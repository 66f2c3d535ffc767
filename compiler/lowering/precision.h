// The precision a compile lowers its float values in (docs/training.md, "Precision"), and its
// names on the command line and in cache keys.
#pragma once

#include <optional>
#include <string>

namespace ipu::lowering {

// The dtype of the graph's float values in the executable, as Keras's mixed_float16 policy and
// Graphcore's AMP. kFp16: inputs, weights, constants, activations and the backward's values
// (activation gradients) are FLOAT16; losses, metrics, labels, weight gradients
// (ir::Value::keeps_float32), optimizer state, accumulators, what the clip and update phases
// compute and the lowering's partial sums (add_temporary) stay FLOAT32. kMixed: as kFp16, but the
// weights stay FLOAT32 (masters) and the forward reads their fp16 copies
// (passes/mixed_precision.h). The forward and backward are costed at the fp16 rates. A value the
// model declares float16 (ir::Value::declared_half) is FLOAT16 under any precision.
enum class Precision { kFp32, kFp16, kMixed };

// "fp32", "fp16" or "mixed"; nullopt for any other.
std::optional<Precision> parse_precision(const std::string& name);
const char* precision_name(Precision precision);

} // namespace ipu::lowering
