// libFuzzer target: untrusted bytes go through LoadedModel and its fingerprint for the cache key
// (what every `ipucc compile` and `ipurun MODEL` computes before anything else), read as
// an ONNX model and as a JSON spec. It must return for any input, with no crash or undefined
// behaviour, and it must be deterministic: a key that changed between two identical runs would be
// a cache that never hits (or, worse, hits for the wrong model).
//
// Seeds: tests/fuzz/corpus/onnx/ and tests/fuzz/corpus/graph_spec/.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "compiler/frontend/loaded_model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  for (const char* path : {"fuzz.onnx", "fuzz.json"}) {
    const ipu::frontend::LoadedModel model = ipu::frontend::LoadedModel::parse(bytes, path);
    const ipu::frontend::ModelFingerprint& first = model.fingerprint();
    const ipu::frontend::ModelFingerprint again =
        ipu::frontend::LoadedModel::parse(bytes, path).fingerprint();
    if (first.structure_sha256 != again.structure_sha256 || first.weights_sha256 != again.weights_sha256)
      std::abort();
    auto weights = model.weights();
    (void)weights;
  }
  return 0;
}
