#include "compiler/driver/compile.h"

#include <chrono>
#include <optional>
#include <utility>

#include "compiler/driver/compile_internal.h"
#include "compiler/lowering/memory_report.h"
#include "compiler/ops/op_table.h"
#include "runtime/format/executable_file.h"

namespace ipu::compiler {

StatusOr<CompileResult> compile_model(const std::string& model_text, const CompileOptions& options,
                                      CompileReport* report) {
  return compile_model(frontend::LoadedModel::parse(model_text, options.model_path), options, report);
}

StatusOr<CompileResult> compile_model(frontend::LoadedModel loaded, const CompileOptions& given,
                                      CompileReport* report) {
  ir::install_op_table(
      ops::op_definitions()); // every graph the frontends and passes build runs the ops' rules
  if (!given.stage_starts.empty()) {
    if (given.pipeline_stages > 0)
      return bad_option("--pipeline-stages chooses the stages: give it or --stage-starts, not both");
    if (given.stage_assignment.empty()) {
      IPU_RETURN_IF_ERROR(
          stage_assignment_from_starts(loaded, given.stage_starts).status().with_context(given.model_path));
    }
  }
  CompileOptions options = with_model_defaults(loaded, given);
  IPU_RETURN_IF_ERROR(validate_options(options));
  IPU_ASSIGN_OR_RETURN(target::TargetSpec target, target::target_preset(options.arch));
  IPU_RETURN_IF_ERROR(target::override_target(target, options.tiles_per_ipu, options.bytes_per_tile));
  target.available_memory_proportion = options.available_memory_proportion;
  if (options.num_ipus == 0 || options.num_ipus > 1024) return bad_option("--num-ipus must be in [1, 1024]");

  CompileResult result;
  auto start = std::chrono::steady_clock::now();
  std::optional<MeasuredChain> chain;
  if (options.pipeline_stages > 0) {
    IPU_ASSIGN_OR_RETURN(chain, measure_chain(loaded, options, target));
  }
  double choosing_seconds = seconds_since(start);
  // With an automatic split the memory plan judges the choice: a split that overflows gives way
  // to the next best without its overflowing stages. Each try loads the model anew.
  std::vector<std::string> first_units;
  LoweredModel lowered;
  auto lower_loaded = [&](StatusOr<Model> model) -> Status {
    if (!model.ok()) return model.status();
    result.timings.frontend_seconds += seconds_since(start);
    IPU_ASSIGN_OR_RETURN(lowered, lower_model(std::move(*model), options, target));
    result.timings.passes_seconds += lowered.passes_seconds;
    result.timings.lowering_seconds += lowered.lowering_seconds;
    return Status();
  };
  if (!chain) {
    start = std::chrono::steady_clock::now();
    IPU_RETURN_IF_ERROR(lower_loaded(load_model(std::move(loaded), options, target.bytes_per_tile)));
  }
  for (int attempt = 1; chain; ++attempt) {
    start = std::chrono::steady_clock::now();
    StatusOr<ChosenStages> chosen = choose_stages(*chain, options.model_path);
    if (!chosen.ok()) {
      if (result.notes.empty()) return chosen.status();
      return Status(chosen.status().code(), chosen.status().message() + " (" + result.notes.back() + ")");
    }
    options.stage_assignment = chosen->assignment;
    first_units = chosen->first_units;
    choosing_seconds += seconds_since(start);
    start = std::chrono::steady_clock::now();
    IPU_RETURN_IF_ERROR(lower_loaded(load_model(std::as_const(loaded), options, target.bytes_per_tile)));
    if (lowered.lowered.memory.overflowing.empty() || attempt == kMaxSplitAttempts) break;
    result.notes.push_back(refuse_overflowing_stages(*chain, *chosen, lowered.lowered.memory, target));
  }
  // The automatic split's measuring compile is lowering work too.
  result.timings.lowering_seconds += choosing_seconds;
  const frontend::ForwardGraph& forward = lowered.forward;
  result.ir_text = forward.graph.to_string();
  result.passes = std::move(lowered.passes);
  const auto stages = static_cast<uint32_t>(forward.num_stages);

  result.executable = std::move(lowered.lowered.executable);
  result.memory = std::move(lowered.lowered.memory);
  format::Executable& exe = result.executable;
  exe.set_format_version(format::kFormatVersion);
  exe.set_model_name(forward.name);
  exe.set_source_onnx(forward.source_onnx);
  exe.set_folded_onnx_nodes(static_cast<uint32_t>(forward.folded_nodes));
  if (!forward.folding_note.empty()) result.notes.push_back(forward.folding_note);
  exe.set_mode(options.mode == Mode::kTrain ? "train" : "infer");
  for (const std::string& name : lowered.hyper_parameters)
    exe.add_hyper_parameters(name);
  exe.set_learning_rate_schedule(lowered.learning_rate_schedule);
  exe.set_loss_counts_padding(lowered.loss_counts_padding);
  // Class indices count the scores' classes; float labels are num_classes per sample, as the labels
  // stream carries them (a loss the graph computes may read them in any shape).
  const auto& scores_shape = forward.graph.value(forward.scores()).type.shape;
  exe.set_num_classes(scores_shape.size() == 2 ? static_cast<uint32_t>(scores_shape[1]) : 0);
  for (int labels : forward.graph.values_with_role(ir::Role::kLabel)) {
    const ir::TensorType& type = forward.graph.value(labels).type;
    if (type.dtype == ir::DType::kFloat32)
      exe.set_num_classes(static_cast<uint32_t>(type.elements() / type.shape[0]));
  }
  format::PipelineInfo* pipeline = exe.mutable_pipeline();
  pipeline->set_num_stages(stages);
  pipeline->set_gradient_accumulation(options.gradient_accumulation);
  pipeline->set_replicas(options.replicas);
  pipeline->set_schedule(stages > 1 ? lowering::schedule_name(options.schedule) : "none");
  for (uint32_t s = 0; s < stages; ++s)
    pipeline->add_stage_ipu(s);
  for (const std::string& unit : first_units)
    pipeline->add_stage_first_unit(unit);
  // The memory plan covers one replica's IPUs, one per stage, as lower_model planned it.
  target.num_ipus = stages;
  if (report) {
    if (report->with_executable) report->executable = exe;
    report->memory = lowering::report_memory(exe, result.memory, target);
  }
  if (!result.memory.overflowing.empty()) {
    std::string message = lowering::describe_overflow(result.memory, target, 3);
    if (!result.notes.empty()) {
      message += "\n(the automatic split tried " + std::to_string(result.notes.size() + 1) +
                 " splits, this one last; before it, " + result.notes.front() + ")";
    }
    return resource_exhausted(message).with_context(options.model_path);
  }
  if (!lowered.loss_note.empty()) result.notes.push_back(std::move(lowered.loss_note));
  for (std::string& note : result.notes)
    note = options.model_path + ": " + note;
  return result;
}

} // namespace ipu::compiler
