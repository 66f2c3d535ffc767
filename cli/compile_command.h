// `ipucc compile`: flags → CompileOptions → cache lookup or compile → cache entry / -o file.
#pragma once

#include <CLI/CLI.hpp>

namespace ipu::cli {

// Registers the subcommand; the returned callback runs it and gives the exit code.
std::function<int()> add_compile_command(CLI::App& app);

} // namespace ipu::cli
