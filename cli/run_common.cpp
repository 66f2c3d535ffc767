#include "cli/run_common.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "cli/diagnostics.h"
#include "cli/exit_codes.h"
#include "cli/hyper_parameter_flags.h"
#include "cli/json_output.h"
#include "cli/resolve_executable.h"
#include "cli/run_io.h"
#include "cli/run_model.h"
#include "cli/tool_names.h"
#include "runtime/base/output_file.h"
#include "runtime/session/checkpoint.h"

namespace ipu::cli {
namespace {

std::string& tool_name() {
  static std::string name = kIpurunTool;
  return name;
}

// Compile flags only mean something with a model (train also sets the hyper-parameter ones on
// any executable); a bad cache size limit is a usage error before anything runs. Returns the
// exit code of the problem, else 0 with `max_size` set.
int check_usage(const RunFlags& f, uint64_t& max_size) {
  if (!names_a_model(f.executable)) {
    for (const CLI::Option* option : f.compile_options) {
      if (f.command == "train" && is_hyper_parameter_flag(option->get_name())) continue;
      if (option->count() > 0) {
        print_error(ipurun_tool(),
                    option->get_name() + " applies only when EXECUTABLE is a model (.onnx or .json)");
        return kExitUsage;
      }
    }
    return kExitOk;
  }
  if (f.cache.no_cache) return kExitOk;
  StatusOr<uint64_t> limit = cache_max_size(f.cache);
  if (!limit.ok()) {
    print_error(ipurun_tool(), limit.status().message());
    return kExitUsage;
  }
  max_size = *limit;
  StatusOr<std::string> remote = remote_cache_url(f.cache);
  if (!remote.ok()) {
    print_error(ipurun_tool(), remote.status().message());
    return kExitUsage;
  }
  return kExitOk;
}

// The executable of a file, a cache key, or a model (from the cache or compiled into it).
StatusOr<ResolvedExecutable> resolve(const RunFlags& f, uint64_t max_size) {
  if (!names_a_model(f.executable)) return resolve_executable(f.executable, f.cache.cache_dir);
  // Predicting needs no training program; training and evaluating need the train executable.
  const std::string default_mode = f.command == "predict" ? "infer" : "train";
  IPU_ASSIGN_OR_RETURN(ResolvedExecutable resolved,
                       executable_for_model(f.executable, f.compile, f.cache, max_size, default_mode,
                                            [](const std::string& w) { print_warning(ipurun_tool(), w); }));
  if (!resolved.note.empty()) print_note(ipurun_tool(), resolved.note);
  // Say which happened, on stderr so --json output stays one document.
  const compile_cache::CacheOutcome outcome = *resolved.cache; // executable_for_model always sets it
  if (outcome == compile_cache::CacheOutcome::kHit) {
    std::fprintf(stderr, "%s: cache hit %s\n", ipurun_tool(), resolved.key.substr(0, 16).c_str());
  } else if (outcome == compile_cache::CacheOutcome::kRemoteHit) {
    std::fprintf(stderr, "%s: remote cache hit %s (not compiled)\n", ipurun_tool(),
                 resolved.key.substr(0, 16).c_str());
  } else {
    std::fprintf(stderr, "%s: cache %s %s, compiled in %.2f s\n", ipurun_tool(),
                 compile_cache::cache_outcome_name(outcome).c_str(), resolved.key.substr(0, 16).c_str(),
                 resolved.compile_seconds);
  }
  return resolved;
}

} // namespace

const char* ipurun_tool() {
  return tool_name().c_str();
}

void name_ipurun_instance(int rank) {
  tool_name() = std::string(kIpurunTool) + ": instance " + std::to_string(rank);
}

int load(const RunFlags& f, Loaded& out, collectives::Collectives* job) {
  uint64_t max_size = 0;
  if (int code = check_usage(f, max_size)) return code;
  // Several instances given a model: instance 0 finds or compiles it first, and the others then
  // find its entry in the cache, so one compiles (an instance that fails ends the job).
  const bool first_compiles = job != nullptr && job->size() > 1 && names_a_model(f.executable);
  if (first_compiles && job->rank() != 0) {
    if (Status waited = job->barrier(collectives::Wait::kUnbounded); !waited.ok())
      return fail(ipurun_tool(), waited);
  }
  auto resolved = resolve(f, max_size);
  if (!resolved.ok()) return fail(ipurun_tool(), resolved.status());
  if (first_compiles && job->rank() == 0) {
    if (Status waited = job->barrier(collectives::Wait::kUnbounded); !waited.ok())
      return fail(ipurun_tool(), waited);
  }
  out.origin = resolved->origin;
  out.key = resolved->key;
  out.cache = resolved->cache;
  auto session = session::Session::create(
      std::move(resolved->loaded),
      engine::EngineOptions{f.threads, job, {f.stochastic_rounding, f.rounding_seed}, f.observer});
  if (!session.ok()) return fail(ipurun_tool(), session.status().with_context(out.origin));
  out.session = std::move(*session);
  if (!f.weights.empty()) {
    std::vector<std::string> not_loaded;
    Status loaded = out.session->load_weights(f.weights, &not_loaded);
    if (!loaded.ok()) return fail(ipurun_tool(), loaded, input_exit_code(loaded));
    if (!not_loaded.empty()) {
      std::string names;
      for (size_t i = 0; i < std::min<size_t>(3, not_loaded.size()); ++i)
        names += (i ? ", " : "") + not_loaded[i];
      if (not_loaded.size() > 3) names += " and " + std::to_string(not_loaded.size() - 3) + " more";
      print_warning(ipurun_tool(),
                    f.weights + ": " + std::to_string(not_loaded.size()) +
                        " tensor(s) of the checkpoint are not in the executable and were not loaded (" +
                        names +
                        "): a checkpoint of another optimizer leaves this one's state where it starts");
    }
  }
  // predict reads --input itself (run_predict_inputs); a model without inputs needs no data.
  if (!f.inputs.empty() || f.data.empty()) return kExitOk;
  auto data = data::open_dataset(f.data);
  if (!data.ok()) return fail(ipurun_tool(), data.status(), input_exit_code(data.status()));
  if (!data->note.empty()) print_note(ipurun_tool(), data->note);
  out.data = std::move(*data);
  return kExitOk;
}

Status with_origin(const Status& status, const std::string& origin) {
  const StatusCode code = status.code();
  const bool in_executable = code == StatusCode::kFailedPrecondition || code == StatusCode::kDataLoss ||
                             code == StatusCode::kOutOfRange || code == StatusCode::kNonFinite;
  return in_executable ? status.with_context(origin) : status;
}

nlohmann::json run_json(const char* command, const Loaded& loaded) {
  nlohmann::json out = json_document(kIpurunTool, command);
  out["executable"] = loaded.origin;
  out["key"] = loaded.key.empty() ? nlohmann::json() : nlohmann::json(loaded.key);
  out["cache"] =
      loaded.cache ? nlohmann::json(compile_cache::cache_outcome_name(*loaded.cache)) : nlohmann::json();
  return out;
}

void add_metrics(nlohmann::json& out, const std::vector<session::MetricValue>& metrics,
                 const std::string& prefix) {
  for (const session::MetricValue& m : metrics)
    out[prefix + m.name] = m.value;
}

int write_json_file(const std::string& path, const nlohmann::json& value) {
  Status s = write_output_file(path, value.dump(1) + "\n");
  return s.ok() ? kExitOk : fail(ipurun_tool(), s, kExitIoError);
}

int check_outputs(const RunFlags& f) {
  if (!f.output.empty()) {
    Status named = check_output_extension(f.output);
    if (!named.ok()) return fail(ipurun_tool(), named, kExitUsage);
  }
  if (!f.save_weights.empty()) {
    Status destination = session::check_checkpoint_destination(f.save_weights);
    if (!destination.ok()) return fail(ipurun_tool(), destination, kExitIoError);
  }
  for (const std::string* path : {&f.history, &f.step_log, &f.export_onnx, &f.output}) {
    if (path->empty()) continue;
    Status writable = check_output_file(*path);
    if (!writable.ok()) return fail(ipurun_tool(), writable, kExitIoError);
  }
  if (!f.output_dir.empty()) {
    std::error_code ec;
    const auto status = std::filesystem::status(f.output_dir, ec);
    Status writable = std::filesystem::exists(status) ? (std::filesystem::is_directory(status)
                                                             ? Status()
                                                             : io_error(f.output_dir + ": not a directory"))
                                                      : check_output_parent(f.output_dir);
    if (!writable.ok()) return fail(ipurun_tool(), writable, kExitIoError);
  }
  return kExitOk;
}

ProgressStyle progress_style(const RunFlags& f) {
  if (f.progress == "none") return ProgressStyle::kNone;
  if (f.progress == "plain") return ProgressStyle::kPlain;
  if (f.progress == "bar") return ProgressStyle::kBar;
  return default_progress_style();
}

} // namespace ipu::cli
