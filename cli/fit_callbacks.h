// ipurun train's Keras callbacks: --early-stopping, --model-checkpoint and --csv-logger. Each flag
// takes its Keras callback's arguments by their Keras names, as a comma-separated list of
// NAME=VALUE (a bare NAME means NAME=true):
//
//   --early-stopping monitor=val_loss,patience=3,min_delta=0.001,restore_best_weights
//   --model-checkpoint filepath=ckpt/epoch{epoch:02d},save_best_only,monitor=val_accuracy
//   --csv-logger filename=training.csv
//   --reduce-lr-on-plateau monitor=val_loss,factor=0.5,patience=2
//
// The decisions are runtime/session/callbacks.h's; this file parses the flags, checks what the
// callbacks will write before training starts, and carries the decisions out after each epoch.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/base/status.h"
#include "runtime/session/callbacks.h"
#include "runtime/session/checkpoint.h"
#include "runtime/session/session.h"

namespace ipu::cli {

// The callback flags as given (empty: not given; an empty list of arguments is "given").
struct CallbackFlags {
  std::optional<std::string> early_stopping;
  std::optional<std::string> model_checkpoint;
  std::optional<std::string> csv_logger;
  std::optional<std::string> reduce_lr_on_plateau;
};

// The `{epoch}` or `{epoch:0Nd}` fields of a ModelCheckpoint filepath filled with `epoch`
// (1-based, as Keras fills them). InvalidArgument for any other `{...}` field.
StatusOr<std::string> checkpoint_path(const std::string& filepath, int epoch);

class FitCallbacks {
public:
  // Parses the flags (InvalidArgument names the flag and the argument).
  static StatusOr<FitCallbacks> from_flags(const CallbackFlags& flags);

  // Checks what the callbacks monitor against the values the run's epochs will have: the
  // executable's metrics (Session::metric_names), and with `validated` their val_ forms. A monitor
  // the run will not have (val_loss without validation data) is refused here, before training,
  // where Keras only warns at every epoch. Fixes the CSV log's columns.
  Status bind(const std::vector<std::string>& metric_names, bool validated);

  // ReduceLROnPlateau sets the learning rate the session streams: refused (InvalidArgument) when
  // the executable's optimizer reads none, or a schedule sets it (Keras refuses the same pair).
  Status check_learning_rate(const session::Session& session) const;

  // Checks every path the callbacks write (runtime/base/output_file.h), before training.
  Status check_outputs() const;

  bool any() const { return m_early_stopping || m_checkpoint || m_csv || m_reduce_lr; }

  // Runs after each epoch of `session`'s fit: CSV row, checkpoint, learning-rate reduction, early
  // stopping, in that order
  // (Keras runs callbacks in the order given; this is the order a Keras user usually gives them).
  // In a job of several instances every instance decides (on the same values, so alike) and only
  // the one that `writes_files` writes the CSV log and checkpoints.
  session::EpochEndFn epoch_end(session::Session& session, bool writes_files);

  // After fit: restores the best epoch's weights if restore_best_weights asked for them.
  Status finish(session::Session& session);

  // For --json and the note on stderr: what early stopping did (null when it was not asked for).
  nlohmann::json early_stopping_json() const;
  std::optional<std::string> early_stopping_note() const;
  // The reductions ReduceLROnPlateau made: null when it was not asked for, else a list of
  // {epoch, learning_rate} (the 1-based epoch after which the new rate took effect).
  nlohmann::json reduce_lr_json() const;

private:
  Status log_csv(const session::EpochResult& epoch);
  Status checkpoint(session::Session& session, const session::EpochResult& epoch);

  std::optional<session::EarlyStopping> m_early_stopping;
  std::optional<session::ReduceLrOnPlateau> m_reduce_lr;
  std::vector<std::pair<int, double>> m_reductions; // (epoch, new learning rate)
  std::optional<std::map<std::string, session::NamedTensor>> m_best_weights;
  struct Checkpoint {
    std::string filepath;
    bool save_best_only = false;
    std::string monitor = "val_loss";
    std::optional<session::BestValue> best;
  };
  std::optional<Checkpoint> m_checkpoint;
  struct CsvLog {
    std::string filename;
    char separator = ',';
    std::vector<std::string> columns;
    std::string text;
  };
  std::optional<CsvLog> m_csv;
  bool m_restored = false;
};

} // namespace ipu::cli
