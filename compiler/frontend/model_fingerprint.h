// A model's identity for the executable cache, in two parts: its structure, which shapes the
// compiled program and goes into the cache key, and its weight values, which only become the
// executable's initial tensor values and so are kept out of the key (docs/cache.md). Models that
// differ only in weights share one compiled program; the weights are swapped in on a hit.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "runtime/base/status.h"

namespace ipu::frontend {

struct ModelFingerprint {
  std::string structure_sha256;
  std::string weights_sha256;
};

// ONNX: the ModelProto with the values of its FLOAT initializers removed (names, dims and data
// types kept), serialized deterministically; the weights are those values. Initializers a
// converter may fold into constants (folded_float_inputs: BatchNormalization's statistics) keep
// their values: they shape the program. JSON spec: the parsed
// document re-serialized with sorted keys and no whitespace; a spec holds no weight values (its
// initializers are seeded functions of the structure), so its weights part is constant. Bytes
// that parse as neither are hashed whole as structure: the compile then reports the problem.
ModelFingerprint fingerprint_model(std::string_view text, const std::string& path);

// The model's initial weight values by tensor name, as raw little-endian float32 bytes: the
// values the ONNX importer gives the weights named after FLOAT initializers. Empty for a JSON
// spec. Errors: InvalidArgument (not an ONNX model), those of decoding an initializer.
StatusOr<std::map<std::string, std::string>> model_weights(std::string_view text, const std::string& path);

}  // namespace ipu::frontend
