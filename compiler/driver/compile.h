// The compiler's entry point: model bytes + options → executable. Knows nothing of the
// command line or the cache; cli/ maps flags to CompileOptions and stores the result.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/frontend/onnx_import.h"
#include "compiler/passes/memory_plan.h"
#include "runtime/format/executable.pb.h"

namespace ipu::compiler {

enum class Mode { kTrain, kInfer };

struct CompileOptions {
  std::string model_path;  // for messages and the executable's model name; ".onnx" selects ONNX
  std::string arch = "mk2";
  std::optional<uint32_t> tiles_per_ipu;
  std::optional<uint64_t> bytes_per_tile;
  uint32_t batch_size = 32;
  uint32_t steps_per_execution = 1;  // micro-batch steps per execution
  uint32_t gradient_accumulation = 1;  // micro-batches per weight update
  uint32_t replicas = 1;
  uint32_t num_ipus = 16;  // IPUs of the target machine (an IPU-POD16)
  Mode mode = Mode::kTrain;
  std::optional<std::string> loss;       // overrides the spec's loss; required to train ONNX models
  std::optional<std::string> optimizer;  // "sgd"; ONNX models train with SGD when not given
  std::optional<float> learning_rate;  // overrides the spec's optimizer
  std::optional<float> momentum;
  std::vector<int> stage_assignment;   // overrides the spec's stages when non-empty
  std::string schedule = "grouped";    // pipeline schedule: grouped, interleaved, sequential
  bool recompute = false;              // pipelines: recompute activations instead of stashing them
  // ONNX graph inputs bound to values at compile time, by name (--constant-input NAME=FILE).
  std::map<std::string, frontend::ConstantInput> constant_inputs;
};

// Every option that changes the compiled program, as (name, canonical value) pairs, for the
// cache key. Options that only affect output paths or logging are deliberately absent. Training
// hyperparameters are keyed by the values the compile of model_text will use (the model's own
// unless overridden), and not at all in inference.
std::vector<std::pair<std::string, std::string>> codegen_options(const std::string& model_text,
                                                                 const CompileOptions& options);

struct CompileTimings {
  double frontend_seconds = 0;
  double passes_seconds = 0;
  double lowering_seconds = 0;
};

struct CompileResult {
  format::Executable executable;
  passes::MemoryPlan memory;
  CompileTimings timings;
  std::string ir_text;  // the IR after the training passes, for --dump-ir
};

// Errors: InvalidArgument (bad spec or options, every problem listed), Unsupported,
// ResourceExhausted (a tile overflows; the message has the per-tile report).
StatusOr<CompileResult> compile_model(const std::string& model_text, const CompileOptions& options);

}  // namespace ipu::compiler
