#include "cli/fit_callbacks.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <functional>
#include <utility>

#include "runtime/base/output_file.h"

namespace ipu::cli {
namespace {

using Arguments = std::map<std::string, std::string>;

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names)
    text += (text.empty() ? "" : ", ") + name;
  return text;
}

// "a=1,b,c=x" → {a: 1, b: true, c: x}; every name must be one of `allowed`, and given once.
StatusOr<Arguments> parse_arguments(const std::string& text, const std::string& flag,
                                    const std::vector<std::string>& allowed) {
  Arguments arguments;
  size_t begin = 0;
  while (begin <= text.size() && !text.empty()) {
    const size_t end = std::min(text.find(',', begin), text.size());
    const std::string item = text.substr(begin, end - begin);
    const size_t equals = item.find('=');
    const std::string name = item.substr(0, equals);
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
      return invalid_argument(flag + ": '" + name + "' is not an argument of it (it takes " +
                              joined(allowed) + ")");
    }
    if (arguments.count(name) != 0) return invalid_argument(flag + ": '" + name + "' is given twice");
    arguments[name] = equals == std::string::npos ? "true" : item.substr(equals + 1);
    begin = end + 1;
  }
  return arguments;
}

StatusOr<double> number_argument(const Arguments& arguments, const std::string& name, const std::string& flag,
                                 double fallback) {
  auto found = arguments.find(name);
  if (found == arguments.end()) return fallback;
  const std::string& text = found->second;
  double value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
    return invalid_argument(flag + ": " + name + "='" + text + "' is not a number");
  }
  return value;
}

StatusOr<int> count_argument(const Arguments& arguments, const std::string& name, const std::string& flag,
                             int fallback) {
  auto found = arguments.find(name);
  if (found == arguments.end()) return fallback;
  const std::string& text = found->second;
  int value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 0) {
    return invalid_argument(flag + ": " + name + "='" + text + "' is not a whole number of at least 0");
  }
  return value;
}

StatusOr<bool> bool_argument(const Arguments& arguments, const std::string& name, const std::string& flag) {
  auto found = arguments.find(name);
  if (found == arguments.end()) return false;
  if (found->second == "true" || found->second == "1") return true;
  if (found->second == "false" || found->second == "0") return false;
  return invalid_argument(flag + ": " + name + "='" + found->second + "' is not true or false");
}

Status check_monitor(const std::string& monitor, const std::string& flag,
                     const std::vector<std::string>& names, bool validated) {
  if (std::find(names.begin(), names.end(), monitor) != names.end()) return Status();
  std::string message =
      flag + ": monitor '" + monitor + "' is not among this run's epoch values (" + joined(names) + ")";
  if (!validated && monitor.rfind("val_", 0) == 0)
    message += "; give --validation-data or --validation-split, or monitor one of those";
  return invalid_argument(message);
}

// Python's repr of a float, as Keras's CSVLogger writes it: the shortest text that reads back
// as the same double.
std::string shortest_text(double value) {
  char text[32];
  auto [end, error] = std::to_chars(text, text + sizeof text, value);
  return error == std::errc() ? std::string(text, end) : std::string("nan");
}

} // namespace

StatusOr<std::string> checkpoint_path(const std::string& filepath, int epoch) {
  std::string path;
  size_t at = 0;
  while (at < filepath.size()) {
    const size_t open = filepath.find('{', at);
    if (open == std::string::npos) {
      path += filepath.substr(at);
      break;
    }
    path += filepath.substr(at, open - at);
    const size_t close = filepath.find('}', open);
    const std::string field =
        filepath.substr(open + 1, close == std::string::npos ? std::string::npos : close - open - 1);
    // {epoch}, {epoch:d} or {epoch:0Nd}: the epoch, zero-padded to N digits.
    int width = 0;
    bool known = close != std::string::npos && (field == "epoch" || field == "epoch:d");
    if (!known && close != std::string::npos && field.size() > 8 && field.rfind("epoch:0", 0) == 0 &&
        field.back() == 'd') {
      const std::string digits = field.substr(7, field.size() - 8);
      auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), width);
      known = error == std::errc() && end == digits.data() + digits.size() && width > 0 && width <= 9;
    }
    if (!known) {
      return invalid_argument("--model-checkpoint: filepath '" + filepath + "' has a field {" + field +
                              "}: only {epoch} and {epoch:0Nd} are filled in");
    }
    char number[16];
    std::snprintf(number, sizeof number, "%0*d", width, epoch);
    path += number;
    at = close + 1;
  }
  return path;
}

StatusOr<FitCallbacks> FitCallbacks::from_flags(const CallbackFlags& flags) {
  FitCallbacks callbacks;
  if (flags.early_stopping) {
    const std::string flag = "--early-stopping";
    IPU_ASSIGN_OR_RETURN(Arguments a, parse_arguments(*flags.early_stopping, flag,
                                                      {"monitor", "min_delta", "patience", "mode", "baseline",
                                                       "restore_best_weights", "start_from_epoch"}));
    session::EarlyStoppingOptions options;
    if (a.count("monitor")) options.monitor = a["monitor"];
    IPU_ASSIGN_OR_RETURN(options.min_delta, number_argument(a, "min_delta", flag, 0.0));
    IPU_ASSIGN_OR_RETURN(options.patience, count_argument(a, "patience", flag, 0));
    if (a.count("mode")) {
      IPU_ASSIGN_OR_RETURN(options.mode, session::parse_monitor_mode(a["mode"], flag));
    }
    if (a.count("baseline")) {
      IPU_ASSIGN_OR_RETURN(options.baseline, number_argument(a, "baseline", flag, 0.0));
    }
    IPU_ASSIGN_OR_RETURN(options.restore_best_weights, bool_argument(a, "restore_best_weights", flag));
    IPU_ASSIGN_OR_RETURN(options.start_from_epoch, count_argument(a, "start_from_epoch", flag, 0));
    callbacks.m_early_stopping.emplace(std::move(options));
  }
  if (flags.reduce_lr_on_plateau) {
    const std::string flag = "--reduce-lr-on-plateau";
    IPU_ASSIGN_OR_RETURN(Arguments a, parse_arguments(*flags.reduce_lr_on_plateau, flag,
                                                      {"monitor", "factor", "patience", "mode", "min_delta",
                                                       "cooldown", "min_lr"}));
    session::ReduceLrOnPlateauOptions options;
    if (a.count("monitor")) options.monitor = a["monitor"];
    IPU_ASSIGN_OR_RETURN(options.factor, number_argument(a, "factor", flag, options.factor));
    // Keras: "ReduceLROnPlateau does not support a factor >= 1.0".
    if (!(options.factor > 0 && options.factor < 1))
      return invalid_argument(flag + ": factor must be in (0, 1)");
    IPU_ASSIGN_OR_RETURN(options.patience, count_argument(a, "patience", flag, options.patience));
    if (a.count("mode")) {
      IPU_ASSIGN_OR_RETURN(options.mode, session::parse_monitor_mode(a["mode"], flag));
    }
    IPU_ASSIGN_OR_RETURN(options.min_delta, number_argument(a, "min_delta", flag, options.min_delta));
    IPU_ASSIGN_OR_RETURN(options.cooldown, count_argument(a, "cooldown", flag, options.cooldown));
    IPU_ASSIGN_OR_RETURN(options.min_lr, number_argument(a, "min_lr", flag, options.min_lr));
    if (options.min_lr < 0) return invalid_argument(flag + ": min_lr must not be negative");
    callbacks.m_reduce_lr.emplace(std::move(options));
  }
  if (flags.model_checkpoint) {
    const std::string flag = "--model-checkpoint";
    IPU_ASSIGN_OR_RETURN(Arguments a, parse_arguments(*flags.model_checkpoint, flag,
                                                      {"filepath", "monitor", "save_best_only", "mode"}));
    Checkpoint checkpoint;
    if (a["filepath"].empty())
      return invalid_argument(flag + ": needs filepath=DIR (a checkpoint directory)");
    checkpoint.filepath = a["filepath"];
    IPU_RETURN_IF_ERROR(checkpoint_path(checkpoint.filepath, 1).status());
    IPU_ASSIGN_OR_RETURN(checkpoint.save_best_only, bool_argument(a, "save_best_only", flag));
    if (a.count("monitor")) checkpoint.monitor = a["monitor"];
    if (checkpoint.save_best_only) {
      session::MonitorMode mode = session::MonitorMode::kAuto;
      if (a.count("mode")) {
        IPU_ASSIGN_OR_RETURN(mode, session::parse_monitor_mode(a["mode"], flag));
      }
      checkpoint.best.emplace(checkpoint.monitor, mode);
    }
    callbacks.m_checkpoint = std::move(checkpoint);
  }
  if (flags.csv_logger) {
    const std::string flag = "--csv-logger";
    IPU_ASSIGN_OR_RETURN(Arguments a, parse_arguments(*flags.csv_logger, flag, {"filename", "separator"}));
    CsvLog csv;
    if (a["filename"].empty()) return invalid_argument(flag + ": needs filename=FILE");
    csv.filename = a["filename"];
    if (a.count("separator")) {
      if (a["separator"].size() != 1) return invalid_argument(flag + ": separator must be one character");
      csv.separator = a["separator"][0];
    }
    callbacks.m_csv = std::move(csv);
  }
  return callbacks;
}

Status FitCallbacks::bind(const std::vector<std::string>& metric_names, bool validated) {
  const std::vector<std::string> names = session::monitorable_names(metric_names, validated);
  if (m_early_stopping) {
    IPU_RETURN_IF_ERROR(
        check_monitor(m_early_stopping->options().monitor, "--early-stopping", names, validated));
  }
  if (m_reduce_lr) {
    IPU_RETURN_IF_ERROR(
        check_monitor(m_reduce_lr->options().monitor, "--reduce-lr-on-plateau", names, validated));
  }
  if (m_checkpoint && m_checkpoint->best) {
    IPU_RETURN_IF_ERROR(check_monitor(m_checkpoint->monitor, "--model-checkpoint", names, validated));
  }
  if (m_csv) {
    m_csv->columns = names;
    m_csv->columns.insert(m_csv->columns.begin(), "epoch");
    m_csv->text.clear();
    for (const std::string& column : m_csv->columns)
      m_csv->text += (column == "epoch" ? "" : std::string(1, m_csv->separator)) + column;
    m_csv->text += '\n';
  }
  return Status();
}

Status FitCallbacks::check_learning_rate(const session::Session& session) const {
  if (!m_reduce_lr) return Status();
  const auto& read = session.executable().hyper_parameters();
  if (std::find(read.begin(), read.end(), "learning_rate") == read.end()) {
    return invalid_argument("--reduce-lr-on-plateau: this executable has no optimizer whose learning rate "
                            "it could reduce");
  }
  if (session.has_learning_rate_schedule()) {
    return invalid_argument("--reduce-lr-on-plateau: a learning-rate schedule sets the rate every update; "
                            "give one or the other, as Keras requires");
  }
  return Status();
}

Status FitCallbacks::check_outputs() const {
  if (m_csv) IPU_RETURN_IF_ERROR(check_output_file(m_csv->filename));
  if (m_checkpoint) {
    IPU_ASSIGN_OR_RETURN(std::string first, checkpoint_path(m_checkpoint->filepath, 1));
    IPU_RETURN_IF_ERROR(first == m_checkpoint->filepath ? session::check_checkpoint_destination(first)
                                                        : check_output_parent(first));
  }
  return Status();
}

// One row per epoch, the whole file written again each time (atomically), so a run stopped
// at any point leaves a whole CSV of the epochs done.
Status FitCallbacks::log_csv(const session::EpochResult& epoch) {
  const std::map<std::string, double> logs = session::epoch_logs(epoch);
  // Keras's CSVLogger counts epochs from 0.
  std::string row = std::to_string(epoch.epoch - 1);
  for (size_t i = 1; i < m_csv->columns.size(); ++i) {
    auto value = logs.find(m_csv->columns[i]);
    row += m_csv->separator + (value == logs.end() ? std::string() : shortest_text(value->second));
  }
  m_csv->text += row + '\n';
  return write_output_file(m_csv->filename, m_csv->text);
}

Status FitCallbacks::checkpoint(session::Session& session, const session::EpochResult& epoch) {
  if (m_checkpoint->best &&
      !m_checkpoint->best->improves(session::epoch_logs(epoch).at(m_checkpoint->monitor))) {
    return Status();
  }
  IPU_ASSIGN_OR_RETURN(std::string path, checkpoint_path(m_checkpoint->filepath, epoch.epoch));
  return session.save_weights(path).with_context("--model-checkpoint, epoch " + std::to_string(epoch.epoch));
}

session::EpochEndFn FitCallbacks::epoch_end(session::Session& session, bool writes_files) {
  return [this, &session, writes_files](const session::EpochResult& epoch) -> StatusOr<session::FitDecision> {
    if (m_csv && writes_files) IPU_RETURN_IF_ERROR(log_csv(epoch));
    if (m_checkpoint && writes_files) IPU_RETURN_IF_ERROR(checkpoint(session, epoch));
    if (m_reduce_lr) {
      // Every instance decides alike (on the same gathered values) and streams the same rate.
      const double value = session::epoch_logs(epoch).at(m_reduce_lr->options().monitor);
      const double rate = m_reduce_lr->on_epoch_end(value, epoch.learning_rate);
      if (rate != epoch.learning_rate) {
        IPU_RETURN_IF_ERROR(session.set_hyper_parameter("learning_rate", static_cast<float>(rate)));
        m_reductions.emplace_back(epoch.epoch, static_cast<float>(rate));
      }
    }
    if (!m_early_stopping) return session::FitDecision::kContinue;
    const double value = session::epoch_logs(epoch).at(m_early_stopping->options().monitor);
    const session::EarlyStopping::Verdict verdict = m_early_stopping->on_epoch_end(epoch.epoch - 1, value);
    if (verdict.best && m_early_stopping->options().restore_best_weights)
      m_best_weights = session.named_weights();
    return verdict.decision;
  };
}

Status FitCallbacks::finish(session::Session& session) {
  if (!m_best_weights) return Status();
  IPU_RETURN_IF_ERROR(session.set_weights(*m_best_weights, "the best epoch"));
  m_restored = true;
  return Status();
}

nlohmann::json FitCallbacks::reduce_lr_json() const {
  if (!m_reduce_lr) return nullptr;
  nlohmann::json reductions = nlohmann::json::array();
  for (const auto& [epoch, rate] : m_reductions)
    reductions.push_back({{"epoch", epoch}, {"learning_rate", rate}});
  return reductions;
}

nlohmann::json FitCallbacks::early_stopping_json() const {
  if (!m_early_stopping) return nullptr;
  auto one_based = [](std::optional<int> epoch) {
    return epoch ? nlohmann::json(*epoch + 1) : nlohmann::json();
  };
  return {{"monitor", m_early_stopping->options().monitor},
          {"stopped_epoch", one_based(m_early_stopping->stopped_epoch())},
          {"best_epoch", one_based(m_early_stopping->best_epoch())},
          {"restored_best_weights", m_restored}};
}

std::optional<std::string> FitCallbacks::early_stopping_note() const {
  if (!m_early_stopping || (!m_early_stopping->stopped_epoch() && !m_restored)) return std::nullopt;
  const session::EarlyStoppingOptions& options = m_early_stopping->options();
  std::string note;
  if (m_early_stopping->stopped_epoch()) {
    note = "early stopping after epoch " + std::to_string(*m_early_stopping->stopped_epoch() + 1) +
           ": the best " + options.monitor + " was at epoch " +
           std::to_string(*m_early_stopping->best_epoch() + 1) + " (patience " +
           std::to_string(options.patience) + ")";
  }
  if (m_restored) {
    note += std::string(note.empty() ? "" : "; ") + "restored the weights of epoch " +
            std::to_string(*m_early_stopping->best_epoch() + 1) + ", the best " + options.monitor;
  }
  return note;
}

} // namespace ipu::cli
