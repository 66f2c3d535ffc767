#include "runtime/format/executable_summary.h"

#include <algorithm>

namespace ipu::format {

ExecutableSummary summarize(const Executable& exe) {
  ExecutableSummary summary;
  summary.set_model_name(exe.model_name());
  summary.set_mode(exe.mode());
  *summary.mutable_target() = exe.target();
  summary.set_batch_size(exe.batch_size());
  summary.set_steps_per_execution(exe.steps_per_execution());
  *summary.mutable_pipeline() = exe.pipeline();
  *summary.mutable_estimates() = exe.estimates();
  *summary.mutable_manifest() = exe.manifest();
  for (const NamedProgram& program : exe.programs()) {
    ProgramSummary* p = summary.add_programs();
    p->set_name(program.name());
    p->set_cycles_per_step(program.cycles_per_step());
    *p->mutable_breakdown_per_step() = program.breakdown_per_step();
  }
  summary.set_compute_set_count(static_cast<uint32_t>(exe.compute_sets_size()));
  summary.set_folded_onnx_nodes(exe.folded_onnx_nodes());
  if (const std::optional<HyperParameterValues> defaults = hyper_parameter_defaults(exe))
    summary.mutable_hyper_parameter_defaults()->Add(defaults->begin(), defaults->end());
  summary.set_learning_rate_schedule(exe.learning_rate_schedule());
  return summary;
}

std::optional<HyperParameterValues> hyper_parameter_defaults(const ExecutableSummary& summary) {
  HyperParameterValues values{};
  if (summary.hyper_parameter_defaults_size() != static_cast<int>(values.size())) return std::nullopt;
  std::copy(summary.hyper_parameter_defaults().begin(), summary.hyper_parameter_defaults().end(),
            values.begin());
  return values;
}

} // namespace ipu::format
