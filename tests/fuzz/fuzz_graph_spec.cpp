// libFuzzer target: an untrusted JSON graph spec goes through parse_graph_spec and, when it
// parses, build_forward_graph with micro-batch 2 (what `ipucc compile` does first). Both must
// return a Status for any input: no exception, crash or undefined behaviour.
//
// Seeds: tests/fuzz/corpus/graph_spec/ (the models/ specs and small variants). A JSON dictionary
// (graph_spec.dict) speeds up the search.
//
// The spec bounds kernels at 2^28 weights (1 GiB to initialise), legal but slow under
// libFuzzer, so specs with larger kernels than small_enough allows are only parsed here (the
// bounds themselves are covered by tests/unit/compiler/frontend).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "compiler/frontend/graph_spec.h"
#include "compiler/ops/op_table.h"

namespace {

// Keeps every weight matrix small: input elements <= 4096 and units <= 1024 bound every fan_in
// by 4096, so no kernel exceeds 4M floats.
bool small_enough(const ipu::frontend::ModelSpec& spec) {
  double elements = 1;
  for (int64_t d : spec.input.shape)
    elements *= static_cast<double>(d);
  if (elements > 4096) return false;
  for (const auto& layer : spec.layers) {
    if (layer.units > 1024) return false;
  }
  return true;
}

} // namespace

// The frontends' graphs run each op's shape rule: install the op table once, as the driver does.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ipu::ir::install_op_table(ipu::ops::op_definitions());
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto spec = ipu::frontend::parse_graph_spec(text, "fuzz.json");
  if (!spec.ok()) {
    // A malformed spec is invalid; a well-formed one asking for a loss, optimizer or dtype ipucc
    // does not implement is unsupported. Nothing else.
    const ipu::StatusCode code = spec.status().code();
    if (code != ipu::StatusCode::kInvalidArgument && code != ipu::StatusCode::kUnsupported) std::abort();
    return 0;
  }
  // A parsed spec is internally consistent.
  if (spec->layers.empty() || spec->stages.size() != spec->layers.size() || spec->num_stages < 1)
    std::abort();
  for (int stage : spec->stages) {
    if (stage < 0 || stage >= spec->num_stages) std::abort();
  }
  if (!small_enough(*spec)) return 0;
  auto graph = ipu::frontend::build_forward_graph(*spec, 2);
  if (!graph.ok() && graph.status().code() != ipu::StatusCode::kInvalidArgument) std::abort();
  return 0;
}
