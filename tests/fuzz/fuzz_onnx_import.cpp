// libFuzzer target: untrusted bytes go through import_onnx as an ONNX model with micro-batch 2,
// for inference and for training (what `ipucc compile model.onnx` does first). It must return a
// Status for any input: no exception, crash or undefined behaviour.
//
// Seeds: tests/fuzz/corpus/onnx/ (small models written by tests/fuzz/make_onnx_corpus.py).
// Every tensor's data must be present in the input, so allocations stay bounded by its size.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "compiler/frontend/onnx_import.h"
#include "compiler/ops/op_table.h"

// The frontends' graphs run each op's shape rule: install the op table once, as the driver does.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ipu::ir::install_op_table(ipu::ops::op_definitions());
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  for (bool training : {false, true}) {
    auto imported = ipu::frontend::import_onnx(bytes, "fuzz.onnx", {2, {}, training, {}});
    (void)imported;
  }
  return 0;
}
