// `ipucc compile --trace FILE.json`: the compiler's estimate of one run of an executable's main
// program (train, or predict for inference) laid out in time, as Chrome trace events
// (cli/trace_events.h). One process per IPU of a replica with its compute sets as slices, each
// holding its sync, exchange and compute; the IPU-Links (copies between IPUs, the gradient
// all-reduce) and the host streams on tracks of their own; at most kMaxTraceSlices steps. The layout is the
// estimate's own walk (lowering::ProgramEstimator::place), so the trace ends at the estimated cycles of the
// run.
#pragma once

#include <nlohmann/json.hpp>

#include "runtime/base/status.h"
#include "runtime/format/executable.pb.h"

namespace ipu::cli {

// InvalidArgument if the executable names an unknown arch or has no main program.
StatusOr<nlohmann::json> estimated_trace(const format::Executable& executable);

} // namespace ipu::cli
