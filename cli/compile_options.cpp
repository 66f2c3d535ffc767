#include "cli/compile_options.h"

#include <utility>

#include "cli/tensor_file.h"
#include "runtime/format/optimizer_arguments.h"

namespace ipu::cli {

StatusOr<compiler::CompileOptions> to_compile_options(const CompileFlags& f, const std::string& model_path,
                                                      const std::string& default_mode) {
  compiler::CompileOptions o;
  o.model_path = model_path;
  o.arch = f.arch;
  if (f.tiles_per_ipu) o.tiles_per_ipu = f.tiles_per_ipu;
  if (f.bytes_per_tile) o.bytes_per_tile = f.bytes_per_tile;
  o.batch_size = f.batch_size;
  o.steps_per_execution = f.steps_per_execution;
  o.gradient_accumulation = f.gradient_accumulation;
  o.replicas = f.replicas;
  o.num_ipus = f.num_ipus;
  const StatusOr<lowering::Schedule> schedule = lowering::parse_schedule(f.schedule);
  if (!schedule.ok()) return bad_option(schedule.status().message());
  o.schedule = *schedule;
  o.recompute = f.recompute;
  o.recompute_checkpoints = f.recompute_checkpoints;
  if (f.available_memory_proportion) o.available_memory_proportion = *f.available_memory_proportion;
  const std::optional<lowering::Precision> precision = lowering::parse_precision(f.precision);
  if (!precision) return bad_option("--precision must be fp32, fp16 or mixed, got '" + f.precision + "'");
  o.precision = *precision;
  const std::string& mode = f.mode.empty() ? default_mode : f.mode;
  o.mode = mode == "infer" ? compiler::Mode::kInfer : compiler::Mode::kTrain;
  if (!f.loss.empty()) {
    o.loss = passes::loss_kind(f.loss);
    if (!o.loss)
      return bad_option("--loss must be " + std::string(passes::loss_names()) + ", got '" + f.loss + "'");
  }
  if (!f.loss_output.empty()) o.loss_output = f.loss_output;
  if (!f.metrics.empty()) o.metrics = f.metrics;
  if (!f.optimizer.empty()) {
    o.optimizer = passes::optimizer_kind(f.optimizer);
    if (!o.optimizer) {
      return bad_option("--optimizer must be " + format::optimizer_names_text() + ", got '" + f.optimizer +
                        "'");
    }
  }
  o.learning_rate = f.learning_rate;
  o.optimizer_arguments = f.optimizer_arguments;
  o.global_clipnorm = f.global_clipnorm;
  if (!f.loss_scaling.empty()) {
    o.loss_scaling = passes::loss_scaling_mode(f.loss_scaling);
    if (!o.loss_scaling)
      return bad_option("--loss-scaling must be none, static or dynamic, got '" + f.loss_scaling + "'");
  }
  o.loss_scale = f.loss_scale;
  o.loss_scale_growth_steps = f.loss_scale_growth_steps;
  if (!f.lr_schedule.empty()) o.learning_rate_schedule = f.lr_schedule;
  o.stage_assignment = f.stage_assignment;
  o.stage_starts = f.stage_starts;
  o.pipeline_stages = f.pipeline_stages;
  for (const std::string& binding : f.constant_inputs) {
    // The flag's check guarantees NAME=FILE; a name never holds '=', a path may.
    const size_t eq = binding.find('=');
    const std::string name = binding.substr(0, eq);
    const std::string file = binding.substr(eq + 1);
    const std::string where = "--constant-input " + binding;
    if (o.constant_inputs.count(name))
      return invalid_argument(where + ": input '" + name + "' is bound twice");
    StatusOr<data::NpyArray> value = read_tensor_file(file);
    if (!value.ok()) {
      // A malformed file is the user's input, not a corrupt executable (DataLoss's exit code).
      const Status& s = value.status();
      const Status status = s.code() == StatusCode::kDataLoss ? invalid_argument(s.message()) : s;
      return status.with_context(where);
    }
    o.constant_inputs[name] = frontend::ConstantInput{std::move(*value), file};
  }
  return o;
}

std::string model_defaults_note(const CompileFlags& flags, const std::string& model_path,
                                const format::ExecutableSummary& exe) {
  const uint32_t K = exe.pipeline().gradient_accumulation();
  if (flags.gradient_accumulation != 0 || K <= 1) return "";
  std::string note = model_path + ": " + std::to_string(exe.pipeline().num_stages()) +
                     " pipeline stages: --gradient-accumulation defaults to " + std::to_string(K) +
                     ", the fewest micro-batches that fill the " + exe.pipeline().schedule() + " pipeline";
  if (flags.steps_per_execution == 0)
    note += ", and --steps-per-execution to " + std::to_string(exe.steps_per_execution()) + ", one update";
  return note;
}

} // namespace ipu::cli
