#include "cli/train_command.h"

#include <cmath>
#include <cstdio>
#include <optional>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/diagnostics.h"
#include "cli/exit_codes.h"
#include "cli/fit_callbacks.h"
#include "cli/hyper_parameter_flags.h"
#include "cli/json_output.h"
#include "cli/onnx_export.h"
#include "cli/progress_bar.h"
#include "cli/run_common.h"
#include "cli/tool_names.h"
#include "runtime/data/dataset.h"
#include "runtime/format/verifier.h"

namespace ipu::cli {
namespace {

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

// Keras on IPU trains whole executions of whole batches: say once which samples an epoch leaves
// out, so a user does not wonder why 60,000 samples train as 59,904.
void note_samples_left_out(const session::Session& session, const data::Dataset& data) {
  const int64_t steps = session.default_steps_per_epoch(data);
  const int64_t used = steps * session.samples_per_step();
  const int64_t total = static_cast<int64_t>(data.num_samples);
  if (steps == 0 || used == total) return;
  print_note(ipurun_tool(), data.source + ": each epoch trains on " + std::to_string(used) + " of its " +
                                std::to_string(total) + " samples (" + std::to_string(steps) +
                                " steps: whole executions of whole batches); the last " +
                                std::to_string(total - used) + " of each epoch's order are left out" +
                                " (with --shuffle, different ones each epoch)");
}

// Validation data: another data set, or the last samples of this one (before any shuffle).
int open_validation(const RunFlags& f, data::Dataset& data, std::optional<data::Dataset>& validation) {
  if (!f.validation_data.empty()) {
    auto opened = data::open_dataset(f.validation_data);
    if (!opened.ok()) return fail(ipurun_tool(), opened.status(), input_exit_code(opened.status()));
    if (!opened->note.empty()) print_note(ipurun_tool(), opened->note);
    validation = std::move(*opened);
  } else if (f.validation_split > 0) {
    auto split = data::split_off_validation(data, f.validation_split);
    if (!split.ok()) return fail(ipurun_tool(), split.status(), kExitUsage);
    validation = std::move(*split);
  }
  return kExitOk;
}

// --history: Keras's History.history (a list per metric), and every epoch's JSON.
nlohmann::json history_json(const std::vector<session::EpochResult>& results, const nlohmann::json& epochs) {
  nlohmann::json history = json_document(kIpurunTool, "history");
  history["loss"] = nlohmann::json::array();
  history["learning_rate"] = nlohmann::json::array();
  for (const auto& m : results.front().metrics)
    history[m.name] = nlohmann::json::array();
  for (const auto& r : results) {
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
  return history;
}

// --step-log: every step's loss, learning rate and (with loss scaling) scale and skipped updates.
nlohmann::json step_log_json(const session::StepLog& step_log) {
  nlohmann::json log = json_document(kIpurunTool, "step_log");
  log["losses"] = step_log.losses;
  log["learning_rates"] = step_log.learning_rates;
  if (!step_log.loss_scales.empty()) log["loss_scales"] = step_log.loss_scales;
  if (!step_log.skipped.empty()) log["skipped"] = step_log.skipped;
  return log;
}

// --json: the run, every epoch, and the final figures.
nlohmann::json train_json(const Loaded& loaded, const std::vector<session::EpochResult>& results,
                          const nlohmann::json& epochs, const FitCallbacks& callbacks,
                          const collectives::Collectives* job) {
  nlohmann::json out = run_json("train", loaded);
  out["data"] = loaded.data.source;
  out["batch_size"] = loaded.session->executable().batch_size();
  out["steps_per_execution"] = loaded.session->executable().steps_per_execution();
  const int instances = job ? job->size() : 1;
  out["instances"] = instances;
  out["replicas_per_instance"] = format::replica_count(loaded.session->executable()) / instances;
  out["all_reduce"] =
      all_reduce_json(loaded.session->executable().estimates(), loaded.session->executable().target());
  out["epochs"] = epochs;
  out["final"] = {{"loss", results.back().loss}};
  add_metrics(out["final"], results.back().metrics);
  if (results.back().validation) {
    out["final"]["val_loss"] = results.back().validation->loss;
    add_metrics(out["final"], results.back().validation->metrics, "val_");
  }
  out["early_stopping"] = callbacks.early_stopping_json();
  out["learning_rate_reductions"] = callbacks.reduce_lr_json();
  double samples = 0, seconds = 0;
  for (const auto& r : results) {
    samples += static_cast<double>(r.samples);
    seconds += r.seconds;
  }
  out["samples_per_second"] = samples / seconds;
  return out;
}

// What a finished fit leaves: the weights first (the most valuable output, written before
// anything else can fail), the ONNX export, --history, --step-log and --json.
int write_train_outputs(const RunFlags& f, const Loaded& loaded,
                        const std::vector<session::EpochResult>& results, const session::StepLog& step_log,
                        const FitCallbacks& callbacks, const collectives::Collectives* job) {
  if (!f.save_weights.empty()) {
    Status saved = loaded.session->save_weights(f.save_weights);
    if (!saved.ok()) return fail(ipurun_tool(), saved, kExitIoError);
  }
  if (!f.export_onnx.empty()) {
    Status exported =
        export_onnx(loaded.session->executable(), loaded.session->named_weights(), f.export_onnx);
    if (!exported.ok()) {
      // A damaged stored model is a bad executable (check_exportable ran before training).
      return fail(ipurun_tool(), exported,
                  exported.code() == StatusCode::kIoError ? kExitIoError : kExitBadExecutable);
    }
  }
  nlohmann::json epochs = nlohmann::json::array();
  for (const auto& r : results)
    epochs.push_back(epoch_json(r));
  if (!f.history.empty()) {
    if (int code = write_json_file(f.history, history_json(results, epochs))) return code;
  }
  if (!f.step_log.empty()) {
    if (int code = write_json_file(f.step_log, step_log_json(step_log))) return code;
  }
  if (f.json) std::printf("%s\n", train_json(loaded, results, epochs, callbacks, job).dump(2).c_str());
  return kExitOk;
}

} // namespace

CLI::App* add_train_command(CLI::App& app, RunFlags& flags) {
  CLI::App* train = app.add_subcommand("train", "Train (Keras fit)");
  add_run_flags(train, flags);
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
  return train;
}

int run_train(const RunFlags& f, collectives::Collectives* job, std::string& instance_log) {
  const bool reporter = job == nullptr || job->rank() == 0;
  if (f.initial_epoch >= f.epochs) {
    print_error(ipurun_tool(), "--initial-epoch " + std::to_string(f.initial_epoch) +
                                   " leaves no epoch to train: --epochs " + std::to_string(f.epochs) +
                                   " is the number of the last epoch, as Keras counts it");
    return kExitUsage;
  }
  auto parsed_callbacks = FitCallbacks::from_flags(f.callbacks);
  if (!parsed_callbacks.ok()) return fail(ipurun_tool(), parsed_callbacks.status(), kExitUsage);
  FitCallbacks callbacks = std::move(*parsed_callbacks);
  if (reporter) {
    if (int code = check_outputs(f)) return code;
    Status writable = callbacks.check_outputs();
    if (!writable.ok()) return fail(ipurun_tool(), writable, kExitIoError);
  }
  Loaded loaded;
  if (int code = load(f, loaded, job)) return code;
  if (int code = apply_hyper_parameters(f, *loaded.session)) return code;
  if (!f.export_onnx.empty()) {
    Status exportable = check_exportable(loaded.session->executable());
    if (!exportable.ok()) return fail(ipurun_tool(), exportable.with_context(loaded.origin), kExitUsage);
  }
  std::optional<data::Dataset> validation;
  if (int code = open_validation(f, loaded.data, validation)) return code;
  if (Status bound = callbacks.bind(loaded.session->metric_names(), validation.has_value()); !bound.ok())
    return fail(ipurun_tool(), bound, kExitUsage);
  if (Status rate = callbacks.check_learning_rate(*loaded.session); !rate.ok())
    return fail(ipurun_tool(), rate, kExitUsage);
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
    return fail(ipurun_tool(), failed);
  }
  if (Status restored = callbacks.finish(*loaded.session); !restored.ok())
    return fail(ipurun_tool(), restored);
  if (!reporter) return kExitOk;
  if (auto note = callbacks.early_stopping_note()) print_note(ipurun_tool(), *note);
  return write_train_outputs(f, loaded, *results, step_log, callbacks, job);
}

} // namespace ipu::cli
