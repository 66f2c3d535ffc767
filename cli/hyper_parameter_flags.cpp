#include "cli/hyper_parameter_flags.h"

#include <algorithm>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/diagnostics.h"
#include "cli/exit_codes.h"
#include "cli/resolve_executable.h"
#include "cli/run_common.h"

namespace ipu::cli {
namespace {

// Flag, and the hyper-parameter it sets ("" for --lr-schedule, which sets the schedule).
const std::vector<std::pair<std::string_view, std::string_view>> kHyperParameterFlags = {
    {"--learning-rate", "learning_rate"},
    {"--momentum", "momentum"},
    {"--dampening", "dampening"},
    {"--beta1", "beta_1"},
    {"--beta2", "beta_2"},
    {"--epsilon", "epsilon"},
    {"--weight-decay", "weight_decay"},
    {"--rho", "rho"},
    {"--loss-scale", "loss_scale"},
    {"--lr-schedule", ""}};

} // namespace

bool is_hyper_parameter_flag(const std::string& flag) {
  return std::any_of(kHyperParameterFlags.begin(), kHyperParameterFlags.end(),
                     [&](const auto& entry) { return entry.first == flag; });
}

int apply_hyper_parameters(const RunFlags& f, session::Session& session) {
  const CompileFlags& c = f.compile;
  const std::vector<std::optional<float>> values = {c.learning_rate, c.momentum, c.dampening,
                                                    c.beta_1,        c.beta_2,   c.epsilon,
                                                    c.weight_decay,  c.rho,      c.loss_scale};
  const format::Executable& exe = session.executable();
  const bool streams_loss_scale = std::find(exe.hyper_parameters().begin(), exe.hyper_parameters().end(),
                                            "loss_scale") != exe.hyper_parameters().end();
  for (size_t i = 0; i < values.size(); ++i) {
    if (!values[i]) continue;
    // A dynamic loss scale's first value is compiled in (and keyed), not streamed: with a model,
    // the compile took it.
    if (kHyperParameterFlags[i].second == "loss_scale" && !streams_loss_scale && names_a_model(f.executable))
      continue;
    Status set = session.set_hyper_parameter(kHyperParameterFlags[i].second, *values[i]);
    if (!set.ok())
      return fail(ipurun_tool(), set.with_context(std::string(kHyperParameterFlags[i].first)), kExitUsage);
  }
  if (c.lr_schedule.empty()) return kExitOk;
  StatusOr<format::LearningRateSchedule> schedule = format::parse_learning_rate_schedule(c.lr_schedule);
  Status set = schedule.ok() ? session.set_learning_rate_schedule(*schedule) : schedule.status();
  return set.ok() ? kExitOk : fail(ipurun_tool(), set.with_context("--lr-schedule"), kExitUsage);
}

} // namespace ipu::cli
