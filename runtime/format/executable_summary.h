// An executable's summary (ExecutableSummary in executable.proto): the estimates, target and
// pipeline `ipucc compile` reports, the cache key it was compiled for and the run-time defaults a
// cache hit compares, without the tensors, compute sets and programs. The file carries it ahead of
// its payload (executable_file.h), so a cache hit reads a few kilobytes, not the whole executable.
#pragma once

#include <optional>

#include "runtime/format/executable.pb.h"
#include "runtime/format/hyper_parameters.h"

namespace ipu::format {

ExecutableSummary summarize(const Executable& executable);

// The summary's compiled hyper-parameter defaults, as hyper_parameter_defaults(executable) gives
// them: nullopt when the executable has none.
std::optional<HyperParameterValues> hyper_parameter_defaults(const ExecutableSummary& summary);

} // namespace ipu::format
