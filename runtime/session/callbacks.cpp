#include "runtime/session/callbacks.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace ipu::session {
namespace {

double worst_value(bool maximise) {
  return maximise ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
}

} // namespace

std::map<std::string, double> epoch_logs(const EpochResult& epoch) {
  std::map<std::string, double> logs{{"loss", epoch.loss}};
  for (const MetricValue& m : epoch.metrics)
    logs[m.name] = m.value;
  if (epoch.validation) {
    logs["val_loss"] = epoch.validation->loss;
    for (const MetricValue& m : epoch.validation->metrics)
      logs["val_" + m.name] = m.value;
  }
  return logs;
}

std::vector<std::string> monitorable_names(const std::vector<std::string>& metric_names, bool validated) {
  EpochResult epoch;
  for (const std::string& name : metric_names)
    epoch.metrics.push_back({name, 0});
  if (validated) epoch.validation = EvaluateResult{0, 0, 0, epoch.metrics, 0};
  std::vector<std::string> names;
  for (const auto& [name, value] : epoch_logs(epoch))
    names.push_back(name);
  return names;
}

StatusOr<MonitorMode> parse_monitor_mode(const std::string& text, const std::string& flag) {
  if (text == "auto") return MonitorMode::kAuto;
  if (text == "min") return MonitorMode::kMin;
  if (text == "max") return MonitorMode::kMax;
  return invalid_argument(flag + ": mode '" + text + "' is none of auto, min, max");
}

bool monitor_maximises(const std::string& monitor, MonitorMode mode) {
  if (mode != MonitorMode::kAuto) return mode == MonitorMode::kMax;
  return monitor.find("acc") != std::string::npos;
}

EarlyStopping::EarlyStopping(EarlyStoppingOptions options)
    : m_options(std::move(options)), m_maximise(monitor_maximises(m_options.monitor, m_options.mode)),
      m_best(worst_value(m_maximise)) {}

// Keras: monitor_op(value − min_delta, reference) with min_delta negated when smaller is better,
// so a value must beat the reference by more than |min_delta|.
bool EarlyStopping::improves(double value, double reference) const {
  const double delta = std::abs(m_options.min_delta);
  return m_maximise ? value - delta > reference : value + delta < reference;
}

EarlyStopping::Verdict EarlyStopping::on_epoch_end(int epoch, double value) {
  Verdict verdict;
  if (epoch < m_options.start_from_epoch) return verdict;
  // Keras keeps the first judged epoch's weights even when it improves on nothing, so there are
  // always weights to restore.
  if (!m_best_epoch) {
    m_best_epoch = epoch;
    verdict.best = true;
  }
  ++m_wait;
  if (improves(value, m_best)) {
    m_best = value;
    m_best_epoch = epoch;
    verdict.best = true;
    if (!m_options.baseline || improves(value, *m_options.baseline)) m_wait = 0;
    return verdict;
  }
  if (m_wait >= m_options.patience && epoch > 0) {
    m_stopped_epoch = epoch;
    verdict.decision = FitDecision::kStop;
  }
  return verdict;
}

ReduceLrOnPlateau::ReduceLrOnPlateau(ReduceLrOnPlateauOptions options)
    : m_options(std::move(options)), m_maximise(monitor_maximises(m_options.monitor, m_options.mode)),
      m_best(worst_value(m_maximise)) {}

double ReduceLrOnPlateau::on_epoch_end(double value, double learning_rate) {
  // Keras counts the cooldown down first, so the last cooldown epoch already counts towards patience.
  if (m_cooldown_left > 0) {
    --m_cooldown_left;
    m_wait = 0;
  }
  const double delta = m_options.min_delta;
  const bool improved = m_maximise ? value > m_best + delta : value < m_best - delta;
  if (improved) {
    m_best = value;
    m_wait = 0;
    return learning_rate;
  }
  if (m_cooldown_left > 0) return learning_rate;
  if (++m_wait < m_options.patience) return learning_rate;
  // Keras compares the rates as float32, the type the optimizer holds them in.
  if (!(static_cast<float>(learning_rate) > static_cast<float>(m_options.min_lr))) return learning_rate;
  m_cooldown_left = m_options.cooldown;
  m_wait = 0;
  return std::max(learning_rate * m_options.factor, m_options.min_lr);
}

BestValue::BestValue(const std::string& monitor, MonitorMode mode)
    : m_maximise(monitor_maximises(monitor, mode)), m_best(worst_value(m_maximise)) {}

bool BestValue::improves(double value) {
  if (m_maximise ? !(value > m_best) : !(value < m_best)) return false;
  m_best = value;
  return true;
}

} // namespace ipu::session
