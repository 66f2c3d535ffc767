// `ipurun predict`: Keras predict over --data, or the model's inputs from files (--input), the
// predictions to --output or --output-dir.
#pragma once

#include <CLI/CLI.hpp>

#include "cli/run_flags.h"
#include "runtime/collectives/collectives.h"

namespace ipu::cli {

// Registers the subcommand and its flags (into `flags`, shared by every command).
CLI::App* add_predict_command(CLI::App& app, RunFlags& flags);

// The exit code.
int run_predict(const RunFlags& f, collectives::Collectives* job);

} // namespace ipu::cli
