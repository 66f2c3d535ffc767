// ipurun: loads an executable and trains, evaluates or predicts on the simulated device. One file
// per command (train_command.cpp, evaluate_command.cpp, predict_command.cpp); this one joins the
// job of instances, if any, and writes what every command may leave (--trace, the instance log).
#include <CLI/CLI.hpp>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/build_identity.h"
#include "cli/diagnostics.h"
#include "cli/evaluate_command.h"
#include "cli/exit_codes.h"
#include "cli/instances.h"
#include "cli/measured_trace.h"
#include "cli/predict_command.h"
#include "cli/run_common.h"
#include "cli/run_flags.h"
#include "cli/train_command.h"
#include "runtime/base/output_file.h"
#include "runtime/kernels/blas_core.h"

namespace ipu::cli {
namespace {

// --trace: checked before any work, like every output; written once the command has run, also
// when it failed part-way (what ran is what a user diagnosing it wants to see).
int check_trace_output(const RunFlags& f) {
  if (f.trace.empty()) return kExitOk;
  if (f.trace.size() < 5 || f.trace.compare(f.trace.size() - 5, 5, ".json") != 0) {
    print_error(ipurun_tool(),
                "--trace " + f.trace + ": the file name must end in .json (Chrome trace events)");
    return kExitUsage;
  }
  Status writable = check_output_file(f.trace);
  return writable.ok() ? kExitOk : fail(ipurun_tool(), writable, kExitIoError);
}

int write_trace(const RunFlags& f, const MeasuredTrace& trace, int code) {
  if (!trace.ran()) return code;
  Status written = write_output_file(f.trace, trace.document().dump() + "\n");
  if (written.ok()) return code;
  print_error(ipurun_tool(), written.message());
  return code == kExitOk ? kExitIoError : code;
}

// In a job of several instances, instance `rank` (> 0) writes its progress, and how it ended, to
// DIR/instance-RANK.log (--log-dir).
void write_instance_log(const std::string& dir, int rank, std::string& log, int code) {
  if (code != kExitOk) log += "exited with " + std::to_string(code) + " (see its error on stderr)\n";
  std::error_code ignored; // a directory that cannot be made fails the write, which says so
  std::filesystem::create_directory(dir, ignored);
  const std::string path = dir + "/instance-" + std::to_string(rank) + ".log";
  Status logged = write_output_file(path, log);
  if (!logged.ok()) print_warning(ipurun_tool(), logged.message());
}

} // namespace
} // namespace ipu::cli

// What may escape is a bug (bad_alloc, a CLI11 misuse); std::terminate's report and abort end it.
// NOLINTNEXTLINE(bugprone-exception-escape)
int main(int argc, char** argv) {
  using namespace ipu::cli;
  ipu::kernels::rerun_with_best_blas_kernels(argv);
  CLI::App app("ipurun: train, evaluate and predict with ipucc executables on a simulated IPU", "ipurun");
  app.set_version_flag("--version",
                       version_string() + "\nOpenBLAS kernels: " + ipu::kernels::loaded_blas_core());
  app.require_subcommand(1);
  RunFlags flags;
  CLI::App* train = add_train_command(app, flags);
  CLI::App* evaluate = add_evaluate_command(app, flags);
  add_predict_command(app, flags);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return fail_usage(ipurun_tool(), app, e);
  }
  flags.command = train->parsed() ? "train" : evaluate->parsed() ? "evaluate" : "predict";
  // predict checks once it knows the model's inputs (run_predict): a model without any needs none.
  if (flags.data.empty() && flags.command != "predict") {
    print_error(ipurun_tool(), flags.command + " needs --data: the samples to " + flags.command + " on");
    return kExitUsage;
  }
  if (flags.instances > 0) {
    if (inside_mpi_job()) {
      print_error(ipurun_tool(),
                  "--instances starts mpirun itself; under mpirun, its -np sets the instances");
      return kExitUsage;
    }
    // The same command line for every instance, without --instances.
    std::vector<std::string> arguments;
    for (int i = 1; i < argc; ++i) {
      const std::string word = argv[i];
      if (word == "--instances") {
        ++i;
      } else if (word.rfind("--instances=", 0) != 0) {
        arguments.push_back(word);
      }
    }
    return launch_instances(ipurun_tool(), flags.instances, arguments);
  }
  auto job = join_instances(std::chrono::seconds(flags.collective_timeout));
  if (!job.ok()) return fail(ipurun_tool(), job.status());
  ipu::collectives::Collectives* collectives = job->get();
  const bool several = collectives != nullptr && collectives->size() > 1;
  if (several) name_ipurun_instance(collectives->rank());
  // One trace per job: the first instance's (the others run the same program on other replicas).
  MeasuredTrace trace;
  const bool traced = !flags.trace.empty() && (collectives == nullptr || collectives->rank() == 0);
  if (traced) flags.observer = &trace;
  std::string instance_log;
  int code = traced ? check_trace_output(flags) : kExitOk;
  if (code == kExitOk) {
    code = flags.command == "train"      ? run_train(flags, collectives, instance_log)
           : flags.command == "evaluate" ? run_evaluate(flags, collectives)
                                         : run_predict(flags, collectives);
  }
  if (traced) code = write_trace(flags, trace, code);
  if (several && collectives->rank() > 0 && !flags.log_dir.empty())
    write_instance_log(flags.log_dir, collectives->rank(), instance_log, code);
  // An instance that cannot go on ends the job, so no other waits for it in a collective.
  if (several && code != kExitOk) collectives->abort(code);
  return code;
}
