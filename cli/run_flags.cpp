#include "cli/run_flags.h"

namespace ipu::cli {

void add_run_flags(CLI::App* cmd, RunFlags& f) {
  cmd->add_option(
         "executable", f.executable,
         "Executable file, cache key (prefix of >= 8 hex digits), or model (.onnx or .json) to look up in "
         "the cache and compile on a miss")
      ->required();
  cmd->add_option("--data", f.data,
                  "The samples: synthetic[:N] (a seeded stand-in for MNIST) | mnist:DIR[:test] | "
                  "npy:FEATURES.npy[,LABELS.npy]; required (predict: or --input)");
  add_cache_use_flags(cmd, f.cache);
  for (const CLI::Option* option : add_compile_flags(cmd, f.compile, " (when EXECUTABLE is a model)")) {
    f.compile_options.push_back(option);
  }
  cmd->add_option("--threads", f.threads, "Bound on TBB worker threads (0 = all cores)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1024));
  CLI::Option* stochastic = cmd->add_flag("--stochastic-rounding", f.stochastic_rounding,
                                          "Round values written to fp16 tensors stochastically instead of to "
                                          "nearest (--precision fp16 or mixed)");
  cmd->add_option("--rounding-seed", f.rounding_seed, "Seed of --stochastic-rounding (default 0)")
      ->needs(stochastic);
  cmd->add_option("--weights", f.weights, "Start from the weights of this checkpoint directory");
  cmd->add_option("--progress", f.progress, "auto | bar | plain | none")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "bar", "plain", "none"}));
  cmd->add_flag("--json", f.json, "Print one JSON object (docs/json.md)");
  cmd->add_option("--trace", f.trace,
                  "Write the host time of every program and compute set run into FILE.json, Chrome "
                  "trace events that Perfetto's UI and chrome://tracing open (docs/trace.md)");
}

} // namespace ipu::cli
