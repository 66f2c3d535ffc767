// `ipurun train`: Keras fit on the simulated device, with its callbacks, validation, checkpoints
// and, in a job of several instances (docs/distributed.md), one share of the replicas each.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "cli/run_flags.h"
#include "runtime/collectives/collectives.h"

namespace ipu::cli {

// Registers the subcommand and its flags (into `flags`, shared by every command).
CLI::App* add_train_command(CLI::App& app, RunFlags& flags);

// Every instance trains its replicas; only instance 0 (or the one process when `job` is null)
// reports and writes outputs, the others log progress into `instance_log` if --log-dir is given.
// The exit code.
int run_train(const RunFlags& f, collectives::Collectives* job, std::string& instance_log);

} // namespace ipu::cli
