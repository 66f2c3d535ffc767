// The compile driver's parts, shared by its files and by nothing outside compiler/driver (its
// interface is compile.h): options.cpp checks the options and applies them to the model's
// optimizer; pipeline.cpp loads a model and lowers it after the graph passes (graph_passes.cpp,
// a named list); auto_split.cpp is --pipeline-stages's measuring compile and choice of stages;
// cache_key.cpp says which options make an executable differ (codegen_options); compile.cpp
// assembles the executable.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/driver/compile.h"
#include "compiler/frontend/loaded_model.h"
#include "compiler/lowering/lower_graph.h"
#include "compiler/lowering/stage_partition.h"
#include "compiler/passes/training.h"

namespace ipu::compiler {

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// cache_key.cpp
// The shortest decimal that reads back as exactly this float (0.01, not 0x1.47ae14p-7): one text
// per value, so equal values give equal keys, and the one a person would write (cache explain).
std::string float_key(float value);

// As float_key, for a double.
std::string double_key(double value);

// options.cpp
// The options' own checks, before any model is read.
Status validate_options(const CompileOptions& o);

// 'a', 'b'
std::string quoted_names(const std::vector<std::string>& names);

// The graph output a training compile of `loaded` takes as its loss: --loss-output, else the one
// output an ONNX loss node computes; empty when the loss (--loss, the spec's) is added on the
// model's output.
StatusOr<std::string> graph_loss_output(const frontend::LoadedModel& loaded, const CompileOptions& options);

// The model's optimizer with the options' changes; refuses a flag the resulting optimizer has no
// use for (--momentum with Adam, --beta1 with SGD) rather than ignoring it, and Nesterov momentum
// without momentum or with dampening (as torch.optim.SGD does).
StatusOr<passes::OptimizerConfig> with_overrides(passes::OptimizerConfig optimizer,
                                                 const CompileOptions& options);

// pipeline.cpp
// A frontend's forward graph with the training configuration that goes with it.
struct Model {
  frontend::ForwardGraph forward;
  passes::LossConfig loss;
  std::vector<passes::MetricConfig> metrics;
  passes::OptimizerConfig optimizer;
  // Training on a loss the graph computes: its output, the name of what it scores (an ONNX loss
  // node's input 0, "" if another op computes it) and the metrics asked for (nullopt: defaults).
  std::string loss_output;
  std::string loss_scores;
  std::optional<std::vector<passes::MetricConfig>> metrics_asked;
};

// `Loaded` is LoadedModel (consumed: the compile) or const LoadedModel& (copied: the automatic
// pipeline split's measuring compile).
template <typename Loaded>
StatusOr<Model> load_model(Loaded&& loaded, const CompileOptions& options, uint64_t bytes_per_tile);
extern template StatusOr<Model> load_model(frontend::LoadedModel&& loaded, const CompileOptions& options,
                                           uint64_t bytes_per_tile);
extern template StatusOr<Model> load_model(const frontend::LoadedModel& loaded, const CompileOptions& options,
                                           uint64_t bytes_per_tile);

// A model after the graph passes, and its lowering.
struct LoweredModel {
  frontend::ForwardGraph forward;
  lowering::LoweringResult lowered;
  std::vector<GraphPassRun> passes;
  std::vector<std::string> hyper_parameters; // training: the slots the optimizer's update reads
  std::string learning_rate_schedule;
  bool loss_counts_padding = false; // format::Executable's
  std::string loss_note;            // how the loss reads a squashed output, for the notes
  double passes_seconds = 0;
  double lowering_seconds = 0;
};

// The graph passes on `model` (run_graph_passes), then its lowering onto `target`;
// `measure_unit_memory` for the automatic split's measuring compile.
StatusOr<LoweredModel> lower_model(Model model, const CompileOptions& options, target::TargetSpec target,
                                   bool measure_unit_memory = false);

// graph_passes.cpp
// What the graph passes make of a model besides its graph: its interface for the lowering, and
// what the executable records of its training.
struct GraphPassesResult {
  lowering::GraphInterface io;
  std::vector<GraphPassRun> runs;            // every pass, in order, whether it ran or not
  std::vector<std::string> hyper_parameters; // training: the slots the optimizer's update reads
  std::string learning_rate_schedule;
  bool loss_counts_padding = false; // format::Executable's
  std::string loss_note;            // how the loss reads a squashed output, for the notes
};

// The graph passes (graph_pass_names) on `model`, each that applies to it and `options`, in order;
// the IR after those options.dump_ir_after names is kept in their runs.
StatusOr<GraphPassesResult> run_graph_passes(Model& model, const CompileOptions& options, uint32_t stages);

// auto_split.cpp
// Splits the automatic split may try before it gives up: each is a whole compile.
constexpr int kMaxSplitAttempts = 4;

// The automatic split's chain, measured: the problem lowering::partition_stages solves, and
// the layers or nodes each of its units groups.
struct MeasuredChain {
  lowering::StagePartitionProblem problem;
  std::vector<std::string> units;  // the model's layers or nodes
  std::vector<size_t> group_begin; // per unit of the chain, its first layer or node
};

// --pipeline-stages N: lowers the model with every layer (or group of layers) a stage of its own
// on an IPU of its own, which gives each its cycles per micro-batch (forward and backward when
// training, from the same estimates the compile reports), what it holds on each tile and for how
// long (lowering::UnitMemory), and each cut the bytes crossing it (the values copied between
// stages, and in training the gradients copied back, each over one IPU-Link as the program's
// copies are estimated). The stash and receive-buffer depths come from the compile's own
// schedule.
StatusOr<MeasuredChain> measure_chain(const frontend::LoadedModel& loaded, const CompileOptions& options,
                                      const target::TargetSpec& target);

// A split of the chain as the compile takes it: the stage of each layer or node.
struct ChosenStages {
  lowering::StagePartition partition;
  std::vector<int> assignment;          // stage of each layer or node
  std::vector<std::string> first_units; // of each stage
};

// The best split of `chain` (lowering::partition_stages) as the compile takes it.
StatusOr<ChosenStages> choose_stages(const MeasuredChain& chain, const std::string& model_path);

// After the memory plan of `chosen` overflowed: refuses its overflowing stages in `chain` (so the
// next choice holds none of them whole) and says why, for the notes.
std::string refuse_overflowing_stages(MeasuredChain& chain, const ChosenStages& chosen,
                                      const lowering::MemoryPlan& plan, const target::TargetSpec& target);

// --stage-starts: the stage of each layer or node of the model, a new stage beginning at each
// name given (stage_units order, as --stage-assignment counts them).
StatusOr<std::vector<int>> stage_assignment_from_starts(const frontend::LoadedModel& model,
                                                        const std::vector<std::string>& starts);

} // namespace ipu::compiler
