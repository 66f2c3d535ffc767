// What each op of a model costs per step of its main program (train, or predict for inference):
// the per-op table of the HTML report and what `ipucc compare` sets side by side. An op is what a
// compute set's `ops` names (an ONNX node, a spec layer, their gradients and updates).
//
// A compute set's estimated cycles go to its ops in proportion to their vertices' compute cycles
// (equally when none has any), and so does its exchange: the estimate itself is per compute set
// (its slowest tile, its exchange), so an op's share is an attribution, not a measurement. Each
// compute set counts as often as the program runs it per step (a recomputed forward pass twice).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/format/executable.pb.h"

namespace ipu::cli {

struct OpCost {
  std::string op;
  double cycles = 0;         // per step
  double exchange_bytes = 0; // per step
  uint64_t vertices = 0;     // in the executable (once, however often they run)
  uint32_t tiles = 0;        // distinct tiles its vertices run on
  uint32_t compute_sets = 0; // distinct compute sets it has vertices in
};

// Every op of the main program, most cycles first (then by name). InvalidArgument if the
// executable names an unknown arch or has no main program.
StatusOr<std::vector<OpCost>> op_costs(const format::Executable& executable);

} // namespace ipu::cli
