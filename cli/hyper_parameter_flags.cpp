#include "cli/hyper_parameter_flags.h"

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/diagnostics.h"
#include "cli/exit_codes.h"
#include "cli/resolve_executable.h"
#include "cli/run_common.h"
#include "runtime/format/hyper_parameters.h"
#include "runtime/format/optimizer_arguments.h"

namespace ipu::cli {
namespace {

// A flag that sets a run-time hyper-parameter (format::kHyperParameterNames) of an executable;
// `name` "" for --lr-schedule, which sets the schedule.
struct HyperParameterFlag {
  std::string flag;
  std::string_view name;
};

// In the order the flags list them: --learning-rate, the optimizer arguments the host streams
// (format::optimizer_argument_specs'), --loss-scale, --lr-schedule.
const std::vector<HyperParameterFlag>& hyper_parameter_flags() {
  static const std::vector<HyperParameterFlag> flags = [] {
    std::vector<HyperParameterFlag> list{{"--learning-rate", "learning_rate"}};
    for (const format::OptimizerArgumentSpec& spec : format::optimizer_argument_specs()) {
      if (format::hyper_parameter_slot(spec.key)) list.push_back({std::string(spec.flag), spec.key});
    }
    list.push_back({"--loss-scale", "loss_scale"});
    list.push_back({"--lr-schedule", ""});
    return list;
  }();
  return flags;
}

// The value the flags give the hyper-parameter `name`, if any.
std::optional<float> given_value(const CompileFlags& c, std::string_view name) {
  if (name == "learning_rate") return c.learning_rate;
  if (name == "loss_scale") return c.loss_scale;
  const auto number = c.optimizer_arguments.numbers.find(name);
  if (number == c.optimizer_arguments.numbers.end()) return std::nullopt;
  return number->second;
}

} // namespace

bool is_hyper_parameter_flag(const std::string& flag) {
  const std::vector<HyperParameterFlag>& flags = hyper_parameter_flags();
  return std::any_of(flags.begin(), flags.end(),
                     [&](const HyperParameterFlag& entry) { return entry.flag == flag; });
}

int apply_hyper_parameters(const RunFlags& f, session::Session& session) {
  const CompileFlags& c = f.compile;
  const format::Executable& exe = session.executable();
  const bool streams_loss_scale = std::find(exe.hyper_parameters().begin(), exe.hyper_parameters().end(),
                                            "loss_scale") != exe.hyper_parameters().end();
  for (const HyperParameterFlag& entry : hyper_parameter_flags()) {
    const std::optional<float> value = entry.name.empty() ? std::nullopt : given_value(c, entry.name);
    if (!value) continue;
    // A dynamic loss scale's first value is compiled in (and keyed), not streamed: with a model,
    // the compile took it.
    if (entry.name == "loss_scale" && !streams_loss_scale && names_a_model(f.executable)) continue;
    Status set = session.set_hyper_parameter(entry.name, *value);
    if (!set.ok()) return fail(ipurun_tool(), set.with_context(entry.flag), kExitUsage);
  }
  if (c.lr_schedule.empty()) return kExitOk;
  StatusOr<format::LearningRateSchedule> schedule = format::parse_learning_rate_schedule(c.lr_schedule);
  Status set = schedule.ok() ? session.set_learning_rate_schedule(*schedule) : schedule.status();
  return set.ok() ? kExitOk : fail(ipurun_tool(), set.with_context("--lr-schedule"), kExitUsage);
}

} // namespace ipu::cli
