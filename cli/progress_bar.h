// Keras-style progress: a redrawn bar on a terminal, one plain line per epoch otherwise.
#pragma once

#include <string>

#include "runtime/session/session.h"

namespace ipu::cli {

enum class ProgressStyle { kBar, kPlain, kNone };

ProgressStyle default_progress_style(); // bar when stderr is a terminal
// What the lines count: a fit's epochs ("Epoch 2/5 ..."), or the steps of one evaluation, which
// Keras's evaluate prints without an epoch or a val_ prefix ("313/313 [...] - loss: ...").
enum class ProgressOf { kEpochs, kEvaluation };
session::ProgressFn make_progress_printer(ProgressStyle style, ProgressOf of);
// A loss or metric as the progress lines print it ("0.1234").
std::string format_metric(double value);
// Plain lines, one per epoch, appended to `log` (an instance's --log-dir file, written at its end).
session::ProgressFn make_progress_log(std::string& log);

} // namespace ipu::cli
