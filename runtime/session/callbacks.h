// The decisions of Keras's epoch-end callbacks, as pure state machines: EarlyStopping,
// ReduceLROnPlateau and ModelCheckpoint's save_best_only. Each is given the value it monitors
// once per epoch and answers with Keras's rule (keras.callbacks, Keras 3), so ipurun's flags
// behave as the callbacks a Keras user already tuned. What to do with the answer (stop, save,
// change the learning rate) is the caller's.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/session/session.h"

namespace ipu::session {

// The values Keras hands callbacks at the end of an epoch (`logs`), by name: loss and the
// executable's metrics (accuracy, ...), and val_loss and val_<metric> when the epoch was validated.
std::map<std::string, double> epoch_logs(const EpochResult& epoch);

// The names epoch_logs gives for an executable with these metrics, with or without validation:
// what a callback may monitor, sorted as Keras's CSVLogger sorts its columns.
std::vector<std::string> monitorable_names(const std::vector<std::string>& metric_names, bool validated);

enum class MonitorMode { kAuto, kMin, kMax };

// "auto", "min" or "max" (InvalidArgument otherwise, naming `flag`).
StatusOr<MonitorMode> parse_monitor_mode(const std::string& text, const std::string& flag);

// Whether a larger value of `monitor` is better: kMax, or kAuto and a name holding "acc" (Keras's
// fallback for metrics it does not know the direction of).
bool monitor_maximises(const std::string& monitor, MonitorMode mode);

struct EarlyStoppingOptions {
  std::string monitor = "val_loss";
  double min_delta = 0;
  int patience = 0;
  MonitorMode mode = MonitorMode::kAuto;
  std::optional<double> baseline;
  bool restore_best_weights = false;
  int start_from_epoch = 0; // epochs (0-based, as Keras counts) before any is judged
};

// keras.callbacks.EarlyStopping: an epoch improves on the best when it beats it by more than
// min_delta; training stops once `patience` epochs in a row have not improved (never at the first
// epoch). With a baseline, an improvement that does not also beat the baseline does not reset the
// count.
class EarlyStopping {
public:
  explicit EarlyStopping(EarlyStoppingOptions options);

  struct Verdict {
    FitDecision decision = FitDecision::kContinue;
    bool best = false; // this epoch is the best so far: the weights to restore
  };
  // `epoch` is 0-based, as Keras counts.
  Verdict on_epoch_end(int epoch, double value);

  const EarlyStoppingOptions& options() const { return m_options; }
  std::optional<int> best_epoch() const { return m_best_epoch; }       // 0-based
  std::optional<int> stopped_epoch() const { return m_stopped_epoch; } // 0-based

private:
  bool improves(double value, double reference) const;

  EarlyStoppingOptions m_options;
  bool m_maximise;
  double m_best;
  int m_wait = 0;
  std::optional<int> m_best_epoch;
  std::optional<int> m_stopped_epoch;
};

struct ReduceLrOnPlateauOptions {
  std::string monitor = "val_loss";
  double factor = 0.1;
  int patience = 10;
  MonitorMode mode = MonitorMode::kAuto;
  double min_delta = 1e-4;
  int cooldown = 0;
  double min_lr = 0;
};

// keras.callbacks.ReduceLROnPlateau: after `patience` epochs without an improvement of more than
// min_delta, the learning rate becomes max(lr · factor, min_lr), then `cooldown` epochs pass
// before epochs count again.
class ReduceLrOnPlateau {
public:
  explicit ReduceLrOnPlateau(ReduceLrOnPlateauOptions options);
  // The learning rate for the next epoch, given this epoch's monitored value and learning rate.
  double on_epoch_end(double value, double learning_rate);
  const ReduceLrOnPlateauOptions& options() const { return m_options; }

private:
  ReduceLrOnPlateauOptions m_options;
  bool m_maximise;
  double m_best;
  int m_wait = 0;
  int m_cooldown_left = 0;
};

// keras.callbacks.ModelCheckpoint(save_best_only=True): save when the value beats every earlier
// epoch's (strictly; no min_delta).
class BestValue {
public:
  BestValue(const std::string& monitor, MonitorMode mode);
  // True, and remembers `value`, when it is better than every value before it.
  bool improves(double value);

private:
  bool m_maximise;
  double m_best;
};

} // namespace ipu::session
