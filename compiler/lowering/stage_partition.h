// The automatic pipeline split (ipucc compile --pipeline-stages N, docs/pipelining.md): the
// model's layers in topological order form a chain, and N - 1 cuts divide it into N stages, one
// per IPU. The cuts minimise the slowest stage's estimated cycles (a pipeline runs at the pace of
// its slowest stage), counting the IPU-Link transfers each cut adds to the stages it separates,
// and keep every stage within one IPU's tile memory. Among splits equally fast at the slowest
// stage it takes the one whose cuts move the fewest cycles of data, then the earliest cuts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/base/status.h"

namespace ipu::lowering {

// One link of the chain: a layer (JSON spec) or node (ONNX) with what it costs on an IPU of its
// own.
struct StageUnit {
  std::string name;
  double cycles = 0;       // per micro-batch: forward, plus backward when training
  uint64_t tile_bytes = 0; // its fullest tile's peak
};

struct StagePartitionProblem {
  std::vector<StageUnit> units;
  // For a cut between units i and i + 1 (units.size() - 1 of each): the cycles of sending the
  // values crossing it forward, charged to the stage before it, and of sending their gradients
  // back (training; else 0), charged to the stage after it, as the pipelined program does.
  std::vector<double> forward_cut_cycles;
  std::vector<double> backward_cut_cycles;
  int stages = 1;
  uint64_t bytes_per_tile = 0;     // a stage's summed tile_bytes may not exceed it
  std::string unit_kind = "layer"; // "layer" or "node", for messages
};

struct StagePartition {
  std::vector<int> first_unit;            // per stage, ascending; first_unit[0] == 0
  std::vector<double> stage_cycles;       // its units' cycles plus the cuts at its ends
  std::vector<uint64_t> stage_tile_bytes; // the sum of its units' tile_bytes
};

// Errors: BadOption when there are fewer units than stages; ResourceExhausted when no split
// keeps every stage within bytes_per_tile, naming the fullest stage of the split that comes
// closest and its bytes.
StatusOr<StagePartition> partition_stages(const StagePartitionProblem& problem);

// The slowest stage over the mean, 1 for a perfect balance (and for no stages or no cycles).
double stage_imbalance(const std::vector<double>& stage_cycles);

} // namespace ipu::lowering
