// ipurun: loads an executable and trains, evaluates or predicts on the simulated device.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "cli/build_identity.h"
#include "cli/compile_flags.h"
#include "cli/diagnostics.h"
#include "cli/exit_codes.h"
#include "cli/fit_callbacks.h"
#include "cli/instances.h"
#include "cli/json_output.h"
#include "cli/measured_trace.h"
#include "cli/onnx_export.h"
#include "cli/progress_bar.h"
#include "cli/resolve_executable.h"
#include "cli/run_io.h"
#include "cli/run_model.h"
#include "cli/tool_names.h"
#include "compile_cache/cache_outcome.h"
#include "runtime/base/file_io.h"
#include "runtime/base/output_file.h"
#include "runtime/base/printable.h"
#include "runtime/data/dataset.h"
#include "runtime/data/npy.h"
#include "runtime/format/verifier.h"
#include "runtime/session/checkpoint.h"
#include "runtime/session/session.h"

namespace ipu::cli {
namespace {

// "ipurun", or "ipurun: instance I" in a job of several instances, so every message says whose it is.
std::string g_tool_name = kIpurunTool;
const char* g_tool = g_tool_name.c_str();

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

ProgressStyle progress_style(const RunFlags& f) {
  if (f.progress == "none") return ProgressStyle::kNone;
  if (f.progress == "plain") return ProgressStyle::kPlain;
  if (f.progress == "bar") return ProgressStyle::kBar;
  return default_progress_style();
}

// Each metric of the executable under its name (docs/json.md): "accuracy" where the loss has one
// and the metrics ask for it, "sparse_top_k_categorical_accuracy", "mse", "mae"; validation's with
// Keras's "val_" before each name.
void add_metrics(nlohmann::json& out, const std::vector<session::MetricValue>& metrics,
                 const std::string& prefix = "") {
  for (const session::MetricValue& m : metrics)
    out[prefix + m.name] = m.value;
}

nlohmann::json epoch_json(const session::EpochResult& r) {
  nlohmann::json out = {{"epoch", r.epoch}, {"loss", r.loss}};
  out["learning_rate"] = std::isnan(r.learning_rate) ? nlohmann::json() : nlohmann::json(r.learning_rate);
  if (!std::isnan(r.loss_scale)) out["loss_scale"] = r.loss_scale;
  if (r.skipped_updates >= 0) out["skipped_updates"] = r.skipped_updates;
  add_metrics(out, r.metrics);
  out["steps"] = r.steps;
  out["samples"] = r.samples;
  out["seconds"] = r.seconds;
  out["samples_per_second"] = static_cast<double>(r.samples) / r.seconds;
  if (r.validation) {
    out["val_loss"] = r.validation->loss;
    add_metrics(out, r.validation->metrics, "val_");
    out["val_samples"] = r.validation->samples;
    out["val_seconds"] = r.validation->seconds;
  }
  return out;
}

struct Loaded {
  std::unique_ptr<session::Session> session;
  std::string origin;
  std::string key;
  std::optional<compile_cache::CacheOutcome> cache;
  data::Dataset data;
};

// The hyper-parameter flags ipurun train applies at run time to any executable (the optimizer's
// run-time values, docs/training.md), beside what they mean to a compile of a model.
const std::vector<std::pair<std::string_view, std::string_view>> kHyperParameterFlags = {
    {"--learning-rate", "learning_rate"},
    {"--momentum", "momentum"},
    {"--dampening", "dampening"},
    {"--beta1", "beta_1"},
    {"--beta2", "beta_2"},
    {"--epsilon", "epsilon"},
    {"--weight-decay", "weight_decay"},
    {"--rho", "rho"},
    {"--loss-scale", "loss_scale"},
    {"--lr-schedule", ""}};

bool is_hyper_parameter_flag(const std::string& flag) {
  return std::any_of(kHyperParameterFlags.begin(), kHyperParameterFlags.end(),
                     [&](const auto& entry) { return entry.first == flag; });
}

// The hyper-parameter flags given to train, set on the session: a flag the executable's optimizer
// does not read is a usage error naming it. --learning-rate before --lr-schedule, which may start
// from it.
int apply_hyper_parameters(const RunFlags& f, session::Session& session) {
  const CompileFlags& c = f.compile;
  const std::vector<std::optional<float>> values = {
      c.learning_rate > 0 ? std::optional<float>(c.learning_rate) : std::nullopt,
      c.momentum >= 0 ? std::optional<float>(c.momentum) : std::nullopt,
      c.dampening,
      c.beta_1,
      c.beta_2,
      c.epsilon,
      c.weight_decay,
      c.rho,
      c.loss_scale};
  const format::Executable& exe = session.executable();
  const bool streams_loss_scale = std::find(exe.hyper_parameters().begin(), exe.hyper_parameters().end(),
                                            "loss_scale") != exe.hyper_parameters().end();
  for (size_t i = 0; i < values.size(); ++i) {
    if (!values[i]) continue;
    // A dynamic loss scale's first value is compiled in (and keyed), not streamed: with a model,
    // the compile took it.
    if (kHyperParameterFlags[i].second == "loss_scale" && !streams_loss_scale && names_a_model(f.executable))
      continue;
    Status set = session.set_hyper_parameter(kHyperParameterFlags[i].second, *values[i]);
    if (!set.ok())
      return fail(g_tool, set.with_context(std::string(kHyperParameterFlags[i].first)), kExitUsage);
  }
  if (c.lr_schedule.empty()) return kExitOk;
  StatusOr<format::LearningRateSchedule> schedule = format::parse_learning_rate_schedule(c.lr_schedule);
  Status set = schedule.ok() ? session.set_learning_rate_schedule(*schedule) : schedule.status();
  return set.ok() ? kExitOk : fail(g_tool, set.with_context("--lr-schedule"), kExitUsage);
}

// Compile flags only mean something with a model (train also sets the hyper-parameter ones on
// any executable); a bad cache size limit is a usage error before anything runs. Returns the
// exit code of the problem, else 0 with `max_size` set.
int check_usage(const RunFlags& f, uint64_t& max_size) {
  if (!names_a_model(f.executable)) {
    for (const CLI::Option* option : f.compile_options) {
      if (f.command == "train" && is_hyper_parameter_flag(option->get_name())) continue;
      if (option->count() > 0) {
        print_error(g_tool, option->get_name() + " applies only when EXECUTABLE is a model (.onnx or .json)");
        return kExitUsage;
      }
    }
    return kExitOk;
  }
  if (f.cache.no_cache) return kExitOk;
  StatusOr<uint64_t> limit = cache_max_size(f.cache);
  if (!limit.ok()) {
    print_error(g_tool, limit.status().message());
    return kExitUsage;
  }
  max_size = *limit;
  StatusOr<std::string> remote = remote_cache_url(f.cache);
  if (!remote.ok()) {
    print_error(g_tool, remote.status().message());
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
                                            [](const std::string& w) { print_warning(g_tool, w); }));
  if (!resolved.note.empty()) print_note(g_tool, resolved.note);
  // Say which happened, on stderr so --json output stays one document.
  const compile_cache::CacheOutcome outcome = *resolved.cache; // executable_for_model always sets it
  if (outcome == compile_cache::CacheOutcome::kHit) {
    std::fprintf(stderr, "%s: cache hit %s\n", g_tool, resolved.key.substr(0, 16).c_str());
  } else if (outcome == compile_cache::CacheOutcome::kRemoteHit) {
    std::fprintf(stderr, "%s: remote cache hit %s (not compiled)\n", g_tool,
                 resolved.key.substr(0, 16).c_str());
  } else {
    std::fprintf(stderr, "%s: cache %s %s, compiled in %.2f s\n", g_tool,
                 compile_cache::cache_outcome_name(outcome).c_str(), resolved.key.substr(0, 16).c_str(),
                 resolved.compile_seconds);
  }
  return resolved;
}

// Executable, weights and data: everything a command needs, with exit codes on failure.
int load(const RunFlags& f, Loaded& out, collectives::Collectives* job) {
  uint64_t max_size = 0;
  if (int code = check_usage(f, max_size)) return code;
  // Several instances given a model: instance 0 finds or compiles it first, and the others then
  // find its entry in the cache, so one compiles (an instance that fails ends the job).
  const bool first_compiles = job != nullptr && job->size() > 1 && names_a_model(f.executable);
  if (first_compiles && job->rank() != 0) {
    if (Status waited = job->barrier(collectives::Wait::kUnbounded); !waited.ok())
      return fail(g_tool, waited);
  }
  auto resolved = resolve(f, max_size);
  if (!resolved.ok()) return fail(g_tool, resolved.status());
  if (first_compiles && job->rank() == 0) {
    if (Status waited = job->barrier(collectives::Wait::kUnbounded); !waited.ok())
      return fail(g_tool, waited);
  }
  out.origin = resolved->origin;
  out.key = resolved->key;
  out.cache = resolved->cache;
  auto session = session::Session::create(
      std::move(resolved->executable),
      engine::EngineOptions{f.threads, job, {f.stochastic_rounding, f.rounding_seed}, f.observer});
  if (!session.ok()) return fail(g_tool, session.status().with_context(out.origin));
  out.session = std::move(*session);
  if (!f.weights.empty()) {
    std::vector<std::string> not_loaded;
    Status loaded = out.session->load_weights(f.weights, &not_loaded);
    if (!loaded.ok()) return fail(g_tool, loaded, input_exit_code(loaded));
    if (!not_loaded.empty()) {
      std::string names;
      for (size_t i = 0; i < std::min<size_t>(3, not_loaded.size()); ++i)
        names += (i ? ", " : "") + not_loaded[i];
      if (not_loaded.size() > 3) names += " and " + std::to_string(not_loaded.size() - 3) + " more";
      print_warning(
          g_tool, f.weights + ": " + std::to_string(not_loaded.size()) +
                      " tensor(s) of the checkpoint are not in the executable and were not loaded (" + names +
                      "): a checkpoint of another optimizer leaves this one's state where it starts");
    }
  }
  // predict reads --input itself (run_predict_inputs); a model without inputs needs no data.
  if (!f.inputs.empty() || f.data.empty()) return kExitOk;
  auto data = data::open_dataset(f.data);
  if (!data.ok()) return fail(g_tool, data.status(), input_exit_code(data.status()));
  if (!data->note.empty()) print_note(g_tool, data->note);
  out.data = std::move(*data);
  return kExitOk;
}

// Errors about the executable itself (a program it lacks) and data faults met while running it
// (which name one of its nodes) name it; errors the host finds in the data name the data.
Status with_origin(const Status& status, const std::string& origin) {
  const StatusCode code = status.code();
  const bool in_executable = code == StatusCode::kFailedPrecondition || code == StatusCode::kDataLoss ||
                             code == StatusCode::kOutOfRange || code == StatusCode::kNonFinite;
  return in_executable ? status.with_context(origin) : status;
}

// Where the executable came from: its cache key (null for a file) and, for a model, whether
// how the cache had it (compile_cache::cache_outcome_name; null otherwise).
void add_cache_fields(nlohmann::json& out, const Loaded& loaded) {
  out["key"] = loaded.key.empty() ? nlohmann::json() : nlohmann::json(loaded.key);
  out["cache"] =
      loaded.cache ? nlohmann::json(compile_cache::cache_outcome_name(*loaded.cache)) : nlohmann::json();
}

int write_json_file(const std::string& path, const nlohmann::json& value) {
  Status s = write_output_file(path, value.dump(1) + "\n");
  return s.ok() ? kExitOk : fail(g_tool, s, kExitIoError);
}

// Every output path the flags name is checked before any work (compiling, training), so a typo
// costs milliseconds and never a run's results (runtime/base/output_file.h has the rule).
int check_outputs(const RunFlags& f) {
  if (!f.output.empty()) {
    Status named = check_output_extension(f.output);
    if (!named.ok()) return fail(g_tool, named, kExitUsage);
  }
  if (!f.save_weights.empty()) {
    Status destination = session::check_checkpoint_destination(f.save_weights);
    if (!destination.ok()) return fail(g_tool, destination, kExitIoError);
  }
  for (const std::string* path : {&f.history, &f.step_log, &f.export_onnx, &f.output}) {
    if (path->empty()) continue;
    Status writable = check_output_file(*path);
    if (!writable.ok()) return fail(g_tool, writable, kExitIoError);
  }
  if (!f.output_dir.empty()) {
    std::error_code ec;
    const auto status = std::filesystem::status(f.output_dir, ec);
    Status writable = std::filesystem::exists(status) ? (std::filesystem::is_directory(status)
                                                             ? Status()
                                                             : io_error(f.output_dir + ": not a directory"))
                                                      : check_output_parent(f.output_dir);
    if (!writable.ok()) return fail(g_tool, writable, kExitIoError);
  }
  return kExitOk;
}

// Keras on IPU trains whole executions of whole batches: say once which samples an epoch leaves
// out, so a user does not wonder why 60,000 samples train as 59,904.
void note_samples_left_out(const session::Session& session, const data::Dataset& data) {
  const int64_t steps = session.default_steps_per_epoch(data);
  const int64_t used = steps * session.samples_per_step();
  const int64_t total = static_cast<int64_t>(data.num_samples);
  if (steps == 0 || used == total) return;
  print_note(g_tool, data.source + ": each epoch trains on " + std::to_string(used) + " of its " +
                         std::to_string(total) + " samples (" + std::to_string(steps) +
                         " steps: whole executions of whole batches); the last " +
                         std::to_string(total - used) + " of each epoch's order are left out" +
                         " (with --shuffle, different ones each epoch)");
}

// In a job of several instances (docs/distributed.md) every instance trains its replicas; only
// instance 0 reports and writes outputs, the others log progress to --log-dir if given.
int run_train(const RunFlags& f, collectives::Collectives* job, std::string& instance_log) {
  const bool reporter = job == nullptr || job->rank() == 0;
  if (f.initial_epoch >= f.epochs) {
    print_error(g_tool, "--initial-epoch " + std::to_string(f.initial_epoch) +
                            " leaves no epoch to train: --epochs " + std::to_string(f.epochs) +
                            " is the number of the last epoch, as Keras counts it");
    return kExitUsage;
  }
  auto parsed_callbacks = FitCallbacks::from_flags(f.callbacks);
  if (!parsed_callbacks.ok()) return fail(g_tool, parsed_callbacks.status(), kExitUsage);
  FitCallbacks callbacks = std::move(*parsed_callbacks);
  if (reporter) {
    if (int code = check_outputs(f)) return code;
    Status writable = callbacks.check_outputs();
    if (!writable.ok()) return fail(g_tool, writable, kExitIoError);
  }
  Loaded loaded;
  if (int code = load(f, loaded, job)) return code;
  if (int code = apply_hyper_parameters(f, *loaded.session)) return code;
  if (!f.export_onnx.empty()) {
    Status exportable = check_exportable(loaded.session->executable());
    if (!exportable.ok()) return fail(g_tool, exportable.with_context(loaded.origin), kExitUsage);
  }
  // Validation data: another data set, or the last samples of this one (before any shuffle).
  std::optional<data::Dataset> validation;
  if (!f.validation_data.empty()) {
    auto opened = data::open_dataset(f.validation_data);
    if (!opened.ok()) return fail(g_tool, opened.status(), input_exit_code(opened.status()));
    if (!opened->note.empty()) print_note(g_tool, opened->note);
    validation = std::move(*opened);
  } else if (f.validation_split > 0) {
    auto split = data::split_off_validation(loaded.data, f.validation_split);
    if (!split.ok()) return fail(g_tool, split.status(), kExitUsage);
    validation = std::move(*split);
  }
  if (Status bound = callbacks.bind(loaded.session->metric_names(), validation.has_value()); !bound.ok())
    return fail(g_tool, bound, kExitUsage);
  if (Status rate = callbacks.check_learning_rate(*loaded.session); !rate.ok())
    return fail(g_tool, rate, kExitUsage);
  if (f.steps_per_epoch == 0 && reporter) note_samples_left_out(*loaded.session, loaded.data);
  session::FitOptions options;
  options.epochs = f.epochs;
  options.initial_epoch = f.initial_epoch;
  if (f.steps_per_epoch > 0) options.steps_per_epoch = f.steps_per_epoch;
  options.shuffle = f.shuffle;
  options.seed = f.seed;
  if (validation) options.validation = &*validation;
  if (callbacks.any()) options.on_epoch_end = callbacks.epoch_end(*loaded.session, reporter);
  session::StepLog step_log;
  const session::ProgressFn progress = reporter
                                           ? make_progress_printer(progress_style(f), ProgressOf::kEpochs)
                                       : f.log_dir.empty() ? nullptr
                                                           : make_progress_log(instance_log);
  auto results = loaded.session->fit(loaded.data, options, progress,
                                     f.step_log.empty() || !reporter ? nullptr : &step_log);
  if (!results.ok()) {
    Status failed = with_origin(results.status(), loaded.origin);
    // Weights that went non-finite are worth nothing: the last checkpoint stays as it was.
    if (failed.code() == StatusCode::kNonFinite && !f.save_weights.empty()) {
      failed = Status(failed.code(), failed.message() + "; nothing was written to " + f.save_weights);
    }
    return fail(g_tool, failed);
  }
  if (Status restored = callbacks.finish(*loaded.session); !restored.ok()) return fail(g_tool, restored);
  if (!reporter) return kExitOk;
  if (auto note = callbacks.early_stopping_note()) print_note(g_tool, *note);

  // The trained weights are the most valuable output: write them before anything else can fail.
  if (!f.save_weights.empty()) {
    Status saved = loaded.session->save_weights(f.save_weights);
    if (!saved.ok()) return fail(g_tool, saved, kExitIoError);
  }
  if (!f.export_onnx.empty()) {
    Status exported =
        export_onnx(loaded.session->executable(), loaded.session->named_weights(), f.export_onnx);
    if (!exported.ok()) {
      // A damaged stored model is a bad executable (check_exportable ran before training).
      return fail(g_tool, exported,
                  exported.code() == StatusCode::kIoError ? kExitIoError : kExitBadExecutable);
    }
  }
  nlohmann::json epochs = nlohmann::json::array();
  for (const auto& r : *results)
    epochs.push_back(epoch_json(r));
  if (!f.history.empty()) {
    nlohmann::json history = json_document(kIpurunTool, "history");
    history["loss"] = nlohmann::json::array();
    history["learning_rate"] = nlohmann::json::array();
    for (const auto& m : results->front().metrics)
      history[m.name] = nlohmann::json::array();
    for (const auto& r : *results) {
      history["loss"].push_back(r.loss);
      for (const auto& m : r.metrics)
        history[m.name].push_back(m.value);
      history["learning_rate"].push_back(epoch_json(r)["learning_rate"]);
      if (!std::isnan(r.loss_scale)) history["loss_scale"].push_back(r.loss_scale);
      if (r.skipped_updates >= 0) history["skipped_updates"].push_back(r.skipped_updates);
      if (r.validation) {
        history["val_loss"].push_back(r.validation->loss);
        for (const auto& m : r.validation->metrics)
          history["val_" + m.name].push_back(m.value);
      }
    }
    history["epochs"] = epochs;
    if (int code = write_json_file(f.history, history)) return code;
  }
  if (!f.step_log.empty()) {
    nlohmann::json log = json_document(kIpurunTool, "step_log");
    log["losses"] = step_log.losses;
    log["learning_rates"] = step_log.learning_rates;
    if (!step_log.loss_scales.empty()) log["loss_scales"] = step_log.loss_scales;
    if (!step_log.skipped.empty()) log["skipped"] = step_log.skipped;
    if (int code = write_json_file(f.step_log, log)) return code;
  }
  if (f.json) {
    nlohmann::json out = json_document(kIpurunTool, "train");
    out["executable"] = loaded.origin;
    add_cache_fields(out, loaded);
    out["data"] = loaded.data.source;
    out["batch_size"] = loaded.session->executable().batch_size();
    out["steps_per_execution"] = loaded.session->executable().steps_per_execution();
    const int instances = job ? job->size() : 1;
    out["instances"] = instances;
    out["replicas_per_instance"] = format::replica_count(loaded.session->executable()) / instances;
    out["all_reduce"] = all_reduce_json(loaded.session->executable());
    out["epochs"] = epochs;
    out["final"] = {{"loss", results->back().loss}};
    add_metrics(out["final"], results->back().metrics);
    if (results->back().validation) {
      out["final"]["val_loss"] = results->back().validation->loss;
      add_metrics(out["final"], results->back().validation->metrics, "val_");
    }
    out["early_stopping"] = callbacks.early_stopping_json();
    out["learning_rate_reductions"] = callbacks.reduce_lr_json();
    double samples = 0, seconds = 0;
    for (const auto& r : *results) {
      samples += static_cast<double>(r.samples);
      seconds += r.seconds;
    }
    out["samples_per_second"] = samples / seconds;
    std::printf("%s\n", out.dump(2).c_str());
  }
  return kExitOk;
}

int run_evaluate(const RunFlags& f, collectives::Collectives* job) {
  Loaded loaded;
  if (int code = load(f, loaded, job)) return code;
  auto result = loaded.session->evaluate(loaded.data,
                                         make_progress_printer(progress_style(f), ProgressOf::kEvaluation));
  if (!result.ok()) return fail(g_tool, with_origin(result.status(), loaded.origin));
  if (f.json) {
    nlohmann::json out = json_document(kIpurunTool, "evaluate");
    out["executable"] = loaded.origin;
    add_cache_fields(out, loaded);
    out["data"] = loaded.data.source;
    out["loss"] = result->loss;
    add_metrics(out, result->metrics);
    out["samples"] = result->samples;
    out["seconds"] = result->seconds;
    out["samples_per_second"] = static_cast<double>(result->samples) / result->seconds;
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    std::string metrics;
    for (const auto& m : result->metrics)
      metrics += " - " + m.name + ": " + format_metric(m.value);
    std::printf("loss: %.4f%s (%lld samples)\n", result->loss, metrics.c_str(),
                static_cast<long long>(result->samples));
  }
  return kExitOk;
}

// Creates --output-dir if needed (not its parent: check_outputs made sure that exists), and
// checks the files it will receive, one per output named, before the model runs.
int prepare_output_dir(const RunFlags& f, const std::vector<std::string>& output_names) {
  if (f.output_dir.empty()) return kExitOk;
  std::error_code ec;
  std::filesystem::create_directory(f.output_dir, ec);
  if (ec)
    return fail(g_tool, io_error(f.output_dir + ": cannot create directory: " + ec.message()), kExitIoError);
  for (const auto& [name, path] : output_dir_paths(f.output_dir, output_names)) {
    Status writable = check_output_file(path);
    if (!writable.ok()) return fail(g_tool, writable, kExitIoError);
  }
  return kExitOk;
}

// Predictions nobody asked to keep are computed and dropped: say so, so that a user who left out
// --output does not look for a file.
void note_unwritten_predictions(const RunFlags& f) {
  if (f.output.empty() && f.output_dir.empty())
    print_note(g_tool,
               "the predictions were not written: give --output FILE or --output-dir DIR to keep them");
}

// predict --input: every model input from a file, every output to --output or --output-dir.
int run_predict_inputs(const RunFlags& f, Loaded& loaded) {
  const format::Executable& exe = loaded.session->executable();
  if (!f.output.empty() && exe.outputs_size() != 1) {
    return fail(g_tool,
                invalid_argument("--output takes one array, the model has " +
                                 std::to_string(exe.outputs_size()) + " outputs; use --output-dir"),
                kExitUsage);
  }
  std::vector<std::string> output_names;
  for (const auto& io : exe.outputs())
    output_names.push_back(io.name());
  if (int code = prepare_output_dir(f, output_names)) return code;
  auto inputs = read_inputs(f.inputs, exe);
  if (!inputs.ok()) return fail(g_tool, inputs.status(), input_exit_code(inputs.status()));
  auto result = loaded.session->infer(*inputs);
  if (!result.ok())
    return fail(g_tool, with_origin(result.status(), loaded.origin), input_exit_code(result.status()));
  nlohmann::json outputs = nlohmann::json::array();
  const std::map<std::string, std::string> dir_paths = output_dir_paths(f.output_dir, output_names);
  for (int j = 0; j < exe.outputs_size(); ++j) {
    const std::string& name = exe.outputs(j).name();
    const data::NpyArray& array = result->outputs[static_cast<size_t>(j)];
    const std::string path = !f.output_dir.empty() ? dir_paths.at(name) : f.output;
    if (!path.empty()) {
      Status written = write_output(path, array, name);
      if (!written.ok()) return fail(g_tool, written, kExitIoError);
    }
    outputs.push_back({{"name", name},
                       {"dtype", array.dtype},
                       {"shape", array.shape},
                       {"file", path.empty() ? nlohmann::json() : nlohmann::json(path)}});
  }
  note_unwritten_predictions(f);
  if (f.json) {
    nlohmann::json out = json_document(kIpurunTool, "predict");
    out["executable"] = loaded.origin;
    add_cache_fields(out, loaded);
    out["inputs"] = f.inputs;
    out["samples"] = result->samples;
    out["outputs"] = outputs;
    out["seconds"] = result->seconds;
    out["samples_per_second"] = static_cast<double>(result->samples) / result->seconds;
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    // Names come from models: a NUL or an escape sequence prints as \xNN (runtime/base/printable.h).
    for (const auto& o : outputs) {
      std::printf("%s: shape %s%s%s\n", printable(o["name"].get<std::string>()).c_str(),
                  o["shape"].dump().c_str(), o["file"].is_null() ? "" : " -> ",
                  o["file"].is_null() ? "" : printable(o["file"].get<std::string>()).c_str());
    }
  }
  return kExitOk;
}

int run_predict(const RunFlags& f, collectives::Collectives* job) {
  if (int code = check_outputs(f)) return code;
  Loaded loaded;
  if (int code = load(f, loaded, job)) return code;
  if (f.inputs.empty() && f.data.empty()) {
    const format::Executable& exe = loaded.session->executable();
    if (exe.inputs_size() > 0) {
      print_error(g_tool, "predict needs --data or --input: the samples to predict (the model's inputs: " +
                              input_names(exe) + ")");
      return kExitUsage;
    }
  }
  if (!f.inputs.empty() || f.data.empty()) return run_predict_inputs(f, loaded);
  const format::Executable& exe = loaded.session->executable();
  const std::string output_name = exe.outputs_size() > 0 ? exe.outputs(0).name() : "predictions";
  if (int code = prepare_output_dir(f, {output_name})) return code;
  auto result = loaded.session->predict(loaded.data);
  if (!result.ok()) return fail(g_tool, with_origin(result.status(), loaded.origin));
  const std::string output =
      f.output_dir.empty() ? f.output : output_dir_paths(f.output_dir, {output_name}).at(output_name);
  if (!output.empty()) {
    // Predictions of a FLOAT16 output are binary16 values: written as float16 (format::ModelIo).
    const bool half = exe.outputs_size() > 0 && exe.outputs(0).dtype() == "f2";
    Status written = write_output(output,
                                  half ? data::make_npy_f16(result->shape, result->values.data())
                                       : data::make_npy_f32(result->shape, result->values.data()),
                                  output_name);
    if (!written.ok()) return fail(g_tool, written, kExitIoError);
  }
  note_unwritten_predictions(f);
  if (f.json) {
    nlohmann::json out = json_document(kIpurunTool, "predict");
    out["executable"] = loaded.origin;
    add_cache_fields(out, loaded);
    out["data"] = loaded.data.source;
    out["samples"] = result->samples;
    out["shape"] = result->shape;
    out["output"] = output.empty() ? nlohmann::json() : nlohmann::json(output);
    out["seconds"] = result->seconds;
    out["samples_per_second"] = static_cast<double>(result->samples) / result->seconds;
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    std::printf("predicted %lld samples%s%s\n", static_cast<long long>(result->samples),
                output.empty() ? "" : " into ", output.c_str());
  }
  return kExitOk;
}

void add_common(CLI::App* cmd, RunFlags& f) {
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

// --trace: checked before any work, like every output; written once the command has run, also
// when it failed part-way (what ran is what a user diagnosing it wants to see).
int check_trace_output(const RunFlags& f) {
  if (f.trace.empty()) return kExitOk;
  if (f.trace.size() < 5 || f.trace.compare(f.trace.size() - 5, 5, ".json") != 0) {
    print_error(g_tool, "--trace " + f.trace + ": the file name must end in .json (Chrome trace events)");
    return kExitUsage;
  }
  Status writable = check_output_file(f.trace);
  return writable.ok() ? kExitOk : fail(g_tool, writable, kExitIoError);
}

int write_trace(const RunFlags& f, const MeasuredTrace& trace, int code) {
  if (!trace.ran()) return code;
  Status written = write_output_file(f.trace, trace.document().dump() + "\n");
  if (written.ok()) return code;
  print_error(g_tool, written.message());
  return code == kExitOk ? kExitIoError : code;
}

} // namespace
} // namespace ipu::cli

// What may escape is a bug (bad_alloc, a CLI11 misuse); std::terminate's report and abort end it.
// NOLINTNEXTLINE(bugprone-exception-escape)
int main(int argc, char** argv) {
  using namespace ipu::cli;
  CLI::App app("ipurun: train, evaluate and predict with ipucc executables on a simulated IPU", "ipurun");
  app.set_version_flag("--version", version_string());
  app.require_subcommand(1);
  RunFlags flags;

  CLI::App* train = app.add_subcommand("train", "Train (Keras fit)");
  add_common(train, flags);
  train->add_option("--epochs", flags.epochs, "Epochs: the number of the last epoch, as Keras counts")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  train
      ->add_option("--initial-epoch", flags.initial_epoch,
                   "Epochs done before (resuming from their checkpoint with --weights): train epochs "
                   "INITIAL+1 ... --epochs, shuffled as one uninterrupted run shuffles them")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000000));
  train
      ->add_option("--steps-per-epoch", flags.steps_per_epoch,
                   "Steps per epoch (default: whole batches of the data)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  CLI::Option* shuffle = train->add_flag("--shuffle", flags.shuffle, "Shuffle the samples every epoch");
  // A seed without --shuffle would do nothing: say so rather than let a sweep over seeds repeat one run.
  train->add_option("--seed", flags.seed, "Seed of --shuffle")->capture_default_str()->needs(shuffle);
  train->add_option("--history", flags.history, "Write per-epoch loss and accuracy as JSON");
  train->add_option("--step-log", flags.step_log, "Write every step's loss as JSON");
  train->add_option("--save-weights", flags.save_weights,
                    "Write the trained weights to this checkpoint directory");
  train->add_option("--export-onnx", flags.export_onnx,
                    "Write the ONNX model the executable was compiled from, with the trained weights");
  CLI::Option* instances =
      train
          ->add_option("--instances", flags.instances,
                       "Train as this many instances on this host, started through mpirun; each runs its "
                       "share of the executable's replicas (docs/distributed.md)")
          ->check(CLI::Range(1, 1024));
  CLI::Option* validation_data =
      train->add_option("--validation-data", flags.validation_data,
                        "Evaluate this data set (a --data spec) after every epoch: val_loss, val_accuracy");
  train
      ->add_option("--validation-split", flags.validation_split,
                   "Keep the last FRACTION of --data's samples (before any shuffle) for validation, as Keras")
      ->check(CLI::Range(0.0, 1.0))
      ->excludes(validation_data);
  train
      ->add_option(
          "--early-stopping", flags.callbacks.early_stopping,
          "Keras EarlyStopping, its arguments as NAME=VALUE,...: monitor (val_loss), min_delta, patience, "
          "mode, baseline, restore_best_weights, start_from_epoch (docs/training.md)")
      ->expected(0, 1);
  train->add_option(
      "--model-checkpoint", flags.callbacks.model_checkpoint,
      "Keras ModelCheckpoint: filepath=DIR (with {epoch} or {epoch:02d}), save_best_only, monitor, "
      "mode; writes a --save-weights checkpoint after each epoch (or each best one)");
  train
      ->add_option(
          "--reduce-lr-on-plateau", flags.callbacks.reduce_lr_on_plateau,
          "Keras ReduceLROnPlateau: monitor (val_loss), factor (0.1), patience (10), mode, min_delta "
          "(1e-4), cooldown (0), min_lr (0); sets the learning rate the host streams")
      ->expected(0, 1);
  train->add_option("--csv-logger", flags.callbacks.csv_logger,
                    "Keras CSVLogger: filename=FILE[,separator=C]; one row per epoch, written as it ends");
  train
      ->add_option("--collective-timeout", flags.collective_timeout,
                   "In a job of several instances: seconds a collective waits for the other instances "
                   "before the job ends with exit 9, naming those that did not answer (docs/distributed.md)")
      ->capture_default_str()
      ->check(CLI::Range(1, 86400));
  train->add_option("--log-dir", flags.log_dir,
                    "In a job of several instances: instance I (I > 0) writes its progress and errors to "
                    "DIR/instance-I.log");

  CLI::App* evaluate = app.add_subcommand("evaluate", "Evaluate loss and accuracy (Keras evaluate)");
  add_common(evaluate, flags);

  CLI::App* predict = app.add_subcommand("predict", "Predict (Keras predict)");
  add_common(predict, flags);
  auto* input =
      predict->add_option("--input", flags.inputs,
                          "A model input as [NAME=]FILE (.npy, or an ONNX TensorProto .pb); repeat for each "
                          "input (bare files fill the inputs in order); replaces --data");
  auto* data_option = predict->get_option("--data");
  input->excludes(data_option);
  auto* output =
      predict->add_option("--output", flags.output, "Write the predictions to FILE (.npy, or .pb)");
  predict->add_option("--output-dir", flags.output_dir, "Write the predictions to DIR/<output name>.npy")
      ->excludes(output);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return fail_usage(g_tool, app, e);
  }
  flags.command = train->parsed() ? "train" : evaluate->parsed() ? "evaluate" : "predict";
  // predict checks once it knows the model's inputs (run_predict): a model without any needs none.
  if (flags.data.empty() && flags.command != "predict") {
    print_error(g_tool, flags.command + " needs --data: the samples to " + flags.command + " on");
    return kExitUsage;
  }
  if (instances->count() > 0) {
    if (inside_mpi_job()) {
      print_error(g_tool, "--instances starts mpirun itself; under mpirun, its -np sets the instances");
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
    return launch_instances(g_tool, flags.instances, arguments);
  }
  auto job = join_instances(std::chrono::seconds(flags.collective_timeout));
  if (!job.ok()) return fail(g_tool, job.status());
  ipu::collectives::Collectives* collectives = job->get();
  const bool several = collectives != nullptr && collectives->size() > 1;
  if (several) {
    g_tool_name = "ipurun: instance " + std::to_string(collectives->rank());
    g_tool = g_tool_name.c_str();
  }
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
  if (several && collectives->rank() > 0 && !flags.log_dir.empty()) {
    if (code != kExitOk)
      instance_log += "exited with " + std::to_string(code) + " (see its error on stderr)\n";
    std::error_code ignored; // a directory that cannot be made fails the write, which says so
    std::filesystem::create_directory(flags.log_dir, ignored);
    const std::string path = flags.log_dir + "/instance-" + std::to_string(collectives->rank()) + ".log";
    ipu::Status logged = ipu::write_output_file(path, instance_log);
    if (!logged.ok()) print_warning(g_tool, logged.message());
  }
  // An instance that cannot go on ends the job, so no other waits for it in a collective.
  if (several && code != kExitOk) collectives->abort(code);
  return code;
}
