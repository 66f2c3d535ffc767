#include "cli/evaluate_command.h"

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/diagnostics.h"
#include "cli/exit_codes.h"
#include "cli/progress_bar.h"
#include "cli/run_common.h"

namespace ipu::cli {

CLI::App* add_evaluate_command(CLI::App& app, RunFlags& flags) {
  CLI::App* evaluate = app.add_subcommand("evaluate", "Evaluate loss and accuracy (Keras evaluate)");
  add_run_flags(evaluate, flags);
  return evaluate;
}

int run_evaluate(const RunFlags& f, collectives::Collectives* job) {
  Loaded loaded;
  if (int code = load(f, loaded, job)) return code;
  auto result = loaded.session->evaluate(loaded.data,
                                         make_progress_printer(progress_style(f), ProgressOf::kEvaluation));
  if (!result.ok()) return fail(ipurun_tool(), with_origin(result.status(), loaded.origin));
  if (f.json) {
    nlohmann::json out = run_json("evaluate", loaded);
    out["data"] = loaded.data.source;
    out["loss"] = result->loss;
    add_metrics(out, result->metrics);
    out["samples"] = result->samples;
    out["seconds"] = result->seconds;
    out["samples_per_second"] = static_cast<double>(result->samples) / result->seconds;
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    std::string metrics;
    for (const auto& m : result->metrics)
      metrics += " - " + m.name + ": " + format_metric(m.value);
    std::printf("loss: %.4f%s (%lld samples)\n", result->loss, metrics.c_str(),
                static_cast<long long>(result->samples));
  }
  return kExitOk;
}

} // namespace ipu::cli
