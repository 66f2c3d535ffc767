// The compiler's entry point: a loaded model + options → executable. Knows nothing of the
// command line or the cache; compile_cache/ looks the result up and stores it, cli/ maps flags to
// CompileOptions.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compiler/frontend/loaded_model.h"
#include "compiler/frontend/onnx_import.h"
#include "compiler/lowering/memory_plan.h"
#include "compiler/lowering/memory_report.h"
#include "compiler/lowering/pipeline_schedule.h"
#include "compiler/lowering/precision.h"
#include "compiler/passes/training.h"
#include "compiler/target/target.h"
#include "runtime/format/executable.pb.h"
#include "runtime/format/hyper_parameters.h"
#include "runtime/format/optimizer_arguments.h"

namespace ipu::compiler {

enum class Mode { kTrain, kInfer };

struct CompileOptions {
  std::string model_path; // the model file: messages, the executable's model name; ".onnx" selects ONNX
  std::string arch = "mk2";
  std::optional<uint32_t> tiles_per_ipu;
  std::optional<uint64_t> bytes_per_tile;
  uint32_t batch_size = 32;
  // 0: from the model (with_model_defaults). Micro-batches per weight update, and micro-batch
  // steps per execution (a multiple of it).
  uint32_t gradient_accumulation = 0;
  uint32_t steps_per_execution = 0;
  uint32_t replicas = 1;
  uint32_t num_ipus = 16; // IPUs of the target machine (an IPU-POD16)
  Mode mode = Mode::kTrain;
  // Overrides the spec's loss; required to train an ONNX model that does not compute its own.
  std::optional<passes::LossKind> loss;
  // ONNX: the scalar graph output that is the loss to train on (docs/training.md, "Models whose
  // graph ends in their loss"); not given, an output computed by a SoftmaxCrossEntropyLoss or
  // NegativeLogLikelihoodLoss node is. Given with --loss: a usage error.
  std::optional<std::string> loss_output;
  // Overrides the spec's metrics: a comma-separated list (passes::parse_metric_list).
  std::optional<std::string> metrics;
  // ONNX models train with SGD when not given. One that differs from the spec's replaces it, with its Keras
  // defaults (the spec's arguments are not its own). The arguments override the optimizer's, by
  // format::optimizer_argument_specs' keys; each applies to the optimizers that table lists it for,
  // and is refused with any other.
  std::optional<passes::OptimizerKind> optimizer;
  std::optional<float> learning_rate;
  format::GivenOptimizerArguments optimizer_arguments;
  std::optional<float> global_clipnorm; // all; 0 turns the spec's clipping off
  // Loss scaling (docs/training.md), overriding the spec's LossScaleOptimizer; the scale, a
  // run-time value (the static scale's default).
  std::optional<passes::LossScalingMode> loss_scaling;
  std::optional<float> loss_scale;
  // Dynamic loss scaling's growth steps (Keras's dynamic_growth_steps); the initial scale is
  // loss_scale, both compiled into the scale's state.
  std::optional<int64_t> loss_scale_growth_steps;
  // A learning-rate schedule in format::parse_learning_rate_schedule's text form; replaces the
  // spec's learning rate or schedule. --learning-rate alone replaces a spec's schedule.
  std::optional<std::string> learning_rate_schedule;
  std::vector<int> stage_assignment; // overrides the spec's stages when non-empty
  // The layers or nodes where stages 1, 2, ... begin, in the model's order (PopTorch's BeginBlock
  // marks them so); with_model_defaults turns them into stage_assignment.
  std::vector<std::string> stage_starts;
  // N > 0: the compiler splits the model into N pipeline stages itself (overriding the spec's),
  // balancing their estimated cycles within each IPU's memory (docs/pipelining.md).
  uint32_t pipeline_stages = 0;
  lowering::Schedule schedule = lowering::Schedule::kGrouped;
  // Recompute activations for the backward pass instead of keeping them: a pipeline re-runs each
  // stage's forward from its stashed inputs; one stage keeps checkpoints (passes/recompute.h), cut
  // after the ops of these kinds or names, or by Chen et al.'s O(√n) schedule when none is given.
  bool recompute = false;
  std::vector<std::string> recompute_checkpoints;
  // poplibs' availableMemoryProportion: the share of a tile one convolution's or MatMul's working
  // set may take in their plans, in (0, 1].
  double available_memory_proportion = target::kDefaultAvailableMemoryProportion;
  // kFp16: inputs, weights, activations and activation gradients are IEEE half, with fp32 partial
  // sums, losses, metrics, weight gradients and optimizer state, the forward and backward at the
  // AMP unit's fp16 rates; kMixed (training only): as fp16, but the weights are fp32 masters that a
  // cast copies to fp16 each step (lowering/precision.h, docs/training.md). Training in fp16 or
  // mixed scales the loss dynamically (from 2^15) unless `loss_scaling` is given.
  lowering::Precision precision = lowering::Precision::kFp32;
  // ONNX graph inputs bound to values at compile time, by name (--constant-input NAME=FILE).
  std::map<std::string, frontend::ConstantInput> constant_inputs;
  // Graph passes (graph_pass_names) after which to keep the IR, or "all" (--dump-ir-after). Not a
  // cache key input: it changes no program.
  std::vector<std::string> dump_ir_after;
};

// A graph pass a compile runs (compiler/driver/graph_passes.cpp): its name, which --dump-ir-after
// takes, and the models and options it applies to.
struct GraphPassInfo {
  std::string_view name;
  std::string_view runs_when;
};

// Every graph pass, in the order a compile runs them.
std::vector<GraphPassInfo> graph_passes();

// One graph pass in a compile: whether it applied to the model and options, how long it took, and
// the IR after it when CompileOptions::dump_ir_after names it.
struct GraphPassRun {
  std::string name;
  bool ran = false;
  double seconds = 0;
  std::string ir_after;
};

// Options left at 0 take their values from the model, as Keras on IPU chooses them:
// gradient_accumulation the smallest that fills the pipeline (its stage count when training under
// the grouped or interleaved schedule, else 1; --pipeline-stages N counts as N stages),
// steps_per_execution one update (that count); and stage_starts become stage_assignment (names
// the model lacks stay stage_starts, which compile_model refuses).
// compile_model and codegen_options resolve them first, so a default and the same value given
// explicitly are one cache entry.
CompileOptions with_model_defaults(const frontend::LoadedModel& model, CompileOptions options);

// Every option that changes the compiled program, as (name, canonical value) pairs, for the
// cache key. Options that only affect output paths or logging are deliberately absent. The
// optimizer's hyper-parameter values and learning-rate schedule are run-time values (the
// executable's defaults, run_time_defaults), so only what they change of the program's structure
// is keyed (the optimizer, which hyper-parameters its update reads, Nesterov, centered, Adagrad's
// initial accumulator), and not at all in inference; the pipeline schedule only for a model with
// stages and recompute only when training (its checkpoints only on one stage), so options that
// cannot change the program do not make a second entry. pipeline_stages is keyed only when given,
// as available_memory_proportion only when it is not poplibs' default and the recompute
// checkpoints only when named, so keys without them are those of before they existed; the split
// pipeline_stages chooses is a function of what else is keyed.
std::vector<std::pair<std::string, std::string>> codegen_options(const frontend::LoadedModel& model,
                                                                 const CompileOptions& options);

// The hyper-parameter values and learning-rate schedule (text form, "" for constant) a training
// compile of `model` with `options` stores as the executable's defaults; nullopt in inference or
// when the compile would refuse the options. Not part of the cache key: a cached executable
// compiled with other values gets these (compile_cache::compile_through_cache).
struct RunTimeDefaults {
  format::HyperParameterValues values{};
  std::string learning_rate_schedule;
};
std::optional<RunTimeDefaults> run_time_defaults(const frontend::LoadedModel& model,
                                                 const CompileOptions& options);

struct CompileTimings {
  double frontend_seconds = 0;
  double passes_seconds = 0;
  double lowering_seconds = 0;
};

struct CompileResult {
  format::Executable executable;
  lowering::MemoryPlan memory;
  CompileTimings timings;
  std::string ir_text; // the IR after the graph passes, for --dump-ir
  std::vector<GraphPassRun> passes;
  // What the user should hear about how the compile went: the automatic pipeline splits whose
  // memory plan overflowed before the one taken, and why; a loss reading the logits behind a
  // Softmax or Sigmoid output.
  std::vector<std::string> notes;
};

// What `ipucc compile --report` draws: the program as lowered (compute sets, programs, their cycle
// estimates, the pipeline schedule) and where its memory goes.
struct CompileReport {
  format::Executable executable;
  lowering::MemoryReport memory;
  // False: fill `memory` only (what `ipucc compile --json` shows of a plan that does not fit),
  // not a copy of the executable.
  bool with_executable = true;
};

// Errors: BadOption (an option value, or one the model cannot take), InvalidArgument (a bad
// model, every problem listed), Unsupported,
// ResourceExhausted (a tile overflows; the message has the per-tile report). `model` is loaded
// from options.model_path. `report`, when given, is filled once the program is lowered and its
// memory planned: also when the compile then fails with ResourceExhausted, which is when a user
// most needs it.
StatusOr<CompileResult> compile_model(frontend::LoadedModel model, const CompileOptions& options,
                                      CompileReport* report = nullptr);

// compile_model of model bytes, loaded as options.model_path (the unit tests' models).
StatusOr<CompileResult> compile_model(const std::string& model_text, const CompileOptions& options,
                                      CompileReport* report = nullptr);

} // namespace ipu::compiler
