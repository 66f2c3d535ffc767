// `ipucc compare A B`: what changed between two compiles. Each of A and B is an executable file
// or a cache key; the comparison sets side by side each program's cycles per step, the memory
// estimates, and every op whose cycles, exchange or tiles differ (cli/op_costs.h), the largest
// change first.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <nlohmann/json.hpp>

#include "runtime/base/status.h"
#include "runtime/format/executable.pb.h"

namespace ipu::cli {

// Registers the subcommand; the returned callback runs it (-1 when it was not the one parsed).
std::function<int()> add_compare_command(CLI::App& app);

// The comparison as `--json` prints it (docs/json.md), without the document header.
StatusOr<nlohmann::json> compare_executables(const format::Executable& a, const format::Executable& b);

} // namespace ipu::cli
