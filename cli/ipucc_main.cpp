// ipucc: the offline compiler driver.
#include <CLI/CLI.hpp>

#include "cli/build_identity.h"
#include "cli/cache_command.h"
#include "cli/compare_command.h"
#include "cli/compile_command.h"
#include "cli/diagnostics.h"
#include "cli/exit_codes.h"
#include "cli/tool_names.h"
#include "runtime/kernels/blas_core.h"

// What may escape is a bug (bad_alloc, a CLI11 misuse); std::terminate's report and abort end it.
// NOLINTNEXTLINE(bugprone-exception-escape)
int main(int argc, char** argv) {
  // Folded constants are computed by the kernels ipurun runs (compiler/driver/evaluate_constants.h).
  ipu::kernels::rerun_with_best_blas_kernels(argv);
  CLI::App app("ipucc: compile models for simulated IPUs", "ipucc");
  app.set_version_flag("--version", ipu::cli::version_string() +
                                        "\nOpenBLAS kernels: " + ipu::kernels::loaded_blas_core());
  app.require_subcommand(1);
  auto compile = ipu::cli::add_compile_command(app);
  auto cache = ipu::cli::add_cache_command(app);
  auto compare = ipu::cli::add_compare_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return ipu::cli::fail_usage(ipu::cli::kIpuccTool, app, e);
  }
  for (const auto& command : {compile, cache, compare}) {
    if (const int rc = command(); rc >= 0) return rc;
  }
  return ipu::cli::kExitUsage; // require_subcommand(1) lets none through
}
