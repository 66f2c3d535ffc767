// `ipurun evaluate`: Keras evaluate, the loss and metrics of the executable over --data.
#pragma once

#include <CLI/CLI.hpp>

#include "cli/run_flags.h"
#include "runtime/collectives/collectives.h"

namespace ipu::cli {

// Registers the subcommand and its flags (into `flags`, shared by every command).
CLI::App* add_evaluate_command(CLI::App& app, RunFlags& flags);

// The exit code.
int run_evaluate(const RunFlags& f, collectives::Collectives* job);

} // namespace ipu::cli
