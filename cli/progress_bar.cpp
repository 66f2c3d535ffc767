#include "cli/progress_bar.h"

#include <unistd.h>

#include <cstdio>
#include <string>

namespace ipu::cli {

ProgressStyle default_progress_style() {
  return ::isatty(STDERR_FILENO) ? ProgressStyle::kBar : ProgressStyle::kPlain;
}

namespace {

// "loss: 0.1234 - accuracy: 0.5678 - mse: ..." (Keras's line).
std::string metrics_text(const session::Progress& p) {
  std::string text = "loss: " + format_metric(p.loss);
  for (const session::MetricValue& m : p.metrics)
    text += " - " + m.name + ": " + format_metric(m.value);
  return text;
}

// "Epoch 2/5: " for a fit's epoch (`separator` after it), nothing for an evaluation.
std::string epoch_text(const session::Progress& p, ProgressOf of, const char* separator) {
  return of == ProgressOf::kEpochs
             ? "Epoch " + std::to_string(p.epoch) + "/" + std::to_string(p.epochs) + separator
             : "";
}

// Dynamic loss scaling's scale and the epoch's skipped updates so far, after the training values.
std::string loss_scale_text(const session::Progress& p) {
  if (p.skipped_updates < 0) return "";
  char text[64];
  std::snprintf(text, sizeof text, " - loss_scale: %g - skipped: %lld", p.loss_scale,
                static_cast<long long>(p.skipped_updates));
  return text;
}

// What follows the training values on an epoch's last line when the epoch was validated.
std::string validation_text(const session::Progress& p) {
  if (!p.validation) return "";
  std::string text = " - val_loss: " + format_metric(p.validation->loss);
  for (const session::MetricValue& m : p.validation->metrics)
    text += " - val_" + m.name + ": " + format_metric(m.value);
  return text;
}

std::string plain_line(const session::Progress& p, ProgressOf of) {
  const double per_step_ms = p.step > 0 ? 1000.0 * p.seconds / static_cast<double>(p.step) : 0.0;
  char steps[96];
  std::snprintf(steps, sizeof steps, "%lld/%lld steps - %.1fs %.2fms/step - ", static_cast<long long>(p.step),
                static_cast<long long>(p.steps), p.seconds, per_step_ms);
  return epoch_text(p, of, ": ") + steps + metrics_text(p) + loss_scale_text(p) + validation_text(p) + "\n";
}

} // namespace

std::string format_metric(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4f", value);
  return text;
}

session::ProgressFn make_progress_log(std::string& log) {
  return [&log](const session::Progress& p) {
    if (p.epoch_done) log += plain_line(p, ProgressOf::kEpochs);
  };
}

session::ProgressFn make_progress_printer(ProgressStyle style, ProgressOf of) {
  if (style == ProgressStyle::kNone) return nullptr;
  // A terminal redraw costs a write; ten a second is enough for a person.
  constexpr double kRedrawSeconds = 0.1;
  return [style, of, last_draw = -1.0](const session::Progress& p) mutable {
    const double per_step_ms = p.step > 0 ? 1000.0 * p.seconds / static_cast<double>(p.step) : 0.0;
    if (style == ProgressStyle::kPlain) {
      if (p.epoch_done) std::fputs(plain_line(p, of).c_str(), stderr);
      return;
    }
    if (p.step == p.steps && !p.epoch_done) return; // the final line comes with epoch_done
    if (!p.epoch_done && last_draw >= 0 && p.seconds - last_draw < kRedrawSeconds && p.seconds >= last_draw)
      return;
    last_draw = p.epoch_done ? -1.0 : p.seconds;
    constexpr int kWidth = 30;
    const int filled = p.steps > 0 ? static_cast<int>(kWidth * p.step / p.steps) : kWidth;
    std::string bar(static_cast<size_t>(filled), '=');
    if (filled < kWidth) bar += '>';
    bar.resize(kWidth, '.');
    std::fprintf(stderr, "\r%s%lld/%lld [%s] - %.0fs %.2fms/step - %s%s", epoch_text(p, of, " ").c_str(),
                 static_cast<long long>(p.step), static_cast<long long>(p.steps), bar.c_str(), p.seconds,
                 per_step_ms, metrics_text(p).c_str(), loss_scale_text(p).c_str());
    if (p.epoch_done) std::fprintf(stderr, "%s\n", validation_text(p).c_str());
    std::fflush(stderr);
  };
}

} // namespace ipu::cli
