// Keras-style progress: a redrawn bar on a terminal, one plain line per epoch otherwise.
#pragma once

#include "runtime/session/session.h"

namespace ipu::cli {

enum class ProgressStyle { kBar, kPlain, kNone };

ProgressStyle default_progress_style(); // bar when stderr is a terminal
session::ProgressFn make_progress_printer(ProgressStyle style, const char* metric_prefix);

} // namespace ipu::cli
