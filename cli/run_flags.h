// ipurun's flags: one struct for every command, filled by CLI11 (the options every command takes:
// add_run_flags; each command's own: add_train_command and its siblings).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "cli/compile_flags.h"
#include "cli/fit_callbacks.h"
#include "runtime/engine/run_observer.h"

namespace ipu::cli {

struct RunFlags {
  std::string executable;
  std::string data; // required (or, to predict, --input): no silent synthetic default
  CacheUseFlags cache;
  // Only when `executable` names a model (.onnx or .json).
  CompileFlags compile;
  std::vector<const CLI::Option*> compile_options;
  std::string command;
  int threads = 0;
  // How values written to fp16 tensors round: nearest even, or stochastically from this seed.
  bool stochastic_rounding = false;
  uint64_t rounding_seed = 0;
  bool json = false;
  std::string progress = "auto";
  std::string weights;
  std::string trace; // --trace FILE.json
  // Told the host time of what the engine runs when --trace is given (main owns it).
  engine::RunObserver* observer = nullptr;
  // train
  int epochs = 1;
  int initial_epoch = 0;
  int64_t steps_per_epoch = 0;
  bool shuffle = false;
  uint64_t seed = 0;
  std::string history;
  std::string save_weights;
  std::string export_onnx;
  std::string step_log;
  std::string validation_data;
  double validation_split = 0; // 0: none
  CallbackFlags callbacks;
  int instances = 0; // --instances: launch this many through mpirun (0: as started)
  // --collective-timeout: what a step's collectives wait for a peer; far longer than any step, far
  // shorter than a user waits to learn that an instance hangs.
  int collective_timeout = 120;
  std::string log_dir;
  // predict
  std::vector<std::string> inputs;
  std::string output;
  std::string output_dir;
};

// EXECUTABLE, --data, the cache's flags, the compile's (for a model) and the run's own
// (--threads, --weights, --progress, --json, --trace...), on the subcommand `cmd`.
void add_run_flags(CLI::App* cmd, RunFlags& f);

} // namespace ipu::cli
