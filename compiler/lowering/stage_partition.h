// The automatic pipeline split (ipucc compile --pipeline-stages N, docs/pipelining.md): the
// model's layers in topological order form a chain, and N - 1 cuts divide it into N stages, one
// per IPU. The cuts minimise the slowest stage's estimated cycles (a pipeline runs at the pace of
// its slowest stage), counting the IPU-Link transfers each cut adds to the stages it separates,
// and keep every stage's memory bound within one IPU's tile memory. Under the grouped schedule a
// pipeline step is a phase of every stage's forward pass and then one of every backward pass, each
// as long as its slowest stage's pass, so the cuts minimise the slowest forward pass plus the
// slowest backward pass instead. Among splits equally fast it takes the one whose cuts move the
// fewest cycles of data, then the earliest cuts.
//
// A stage's memory bound, on each tile, adds up over its units what lives all program long and
// what lives from the forward into the backward pass (and, without accumulators, the weight
// gradients kept for the update), but counts only the largest of its units' short-lived peaks
// (temporaries and receive buffers: the units run one after another), and each codelet's code
// once; its fullest tile gives the bound. On top come, spread over the tiles, its stash slots
// (one per micro-batch the schedule keeps in flight), its gradient accumulators, and the receive
// buffers of its cuts. A stage that recomputes its forward pass before its backward pass
// (--recompute) stashes only its inputs: the model's inputs and labels, and what arrives from
// earlier stages. The driver compiles the chosen split and lets its memory plan judge; a
// stage the plan finds too big is refused (`refused`) and the next best split tried.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "compiler/lowering/stage_memory.h"
#include "runtime/base/status.h"

namespace ipu::lowering {

// One link of the chain: a layer (JSON spec) or node (ONNX) with what it costs on an IPU of its
// own.
struct StageUnit {
  std::string name;
  double cycles = 0;         // per micro-batch: forward, plus backward when training
  double forward_cycles = 0; // the forward pass's part of `cycles`
  UnitMemory memory;
};

struct StagePartitionProblem {
  std::vector<StageUnit> units;
  // For a cut between units i and i + 1 (units.size() - 1 of each): the cycles of sending the
  // values crossing it forward, charged to the stage before it, and of sending their gradients
  // back (training; else 0), charged to the stage after it, as the pipelined program does.
  std::vector<double> forward_cut_cycles;
  std::vector<double> backward_cut_cycles;
  // Per cut, the most bytes one receive buffer of the values crossing it puts on a tile
  // (linear_tile_share), forward on the stage after it and backward on the stage before it.
  std::vector<uint64_t> forward_cut_tile_bytes;
  std::vector<uint64_t> backward_cut_tile_bytes;
  int stages = 1;
  // The schedule's depths (PipelinePlan): per stage, the micro-batches it stashes; per boundary,
  // the receive buffers of each direction (inference: one forward, none backward). Empty: none
  // (a single stage).
  std::vector<int> stash_depth;
  std::vector<int> forward_depth;
  std::vector<int> backward_depth;
  bool accumulates = false; // gradients are summed into accumulators (not held for the update)
  bool recompute = false;   // each stage reruns its forward pass from its stashed inputs
  // The grouped schedule: a step runs the stages' forward passes in one phase and their backward
  // passes in the next (pipeline_schedule.h).
  bool phased = false;
  uint64_t bytes_per_tile = 0;
  uint64_t code_bytes_per_codelet = 0;
  std::string unit_kind = "layer"; // "layer" or "node", for messages
  // Stages [first unit, end) that the memory plan of an earlier choice found too big: no stage
  // may hold all the units of one.
  std::vector<std::pair<int, int>> refused;
};

struct StagePartition {
  std::vector<int> first_unit;            // per stage, ascending; first_unit[0] == 0
  std::vector<double> stage_cycles;       // its units' cycles (the forward pass twice when
                                          // recomputing) plus the cuts at its ends
  std::vector<uint64_t> stage_tile_bytes; // its memory bound (above)
};

// Errors: BadOption when there are fewer units than stages; ResourceExhausted when no split
// keeps every stage within bytes_per_tile, naming the fullest stage of the split that comes
// closest and its bound.
StatusOr<StagePartition> partition_stages(const StagePartitionProblem& problem);

// The slowest stage over the mean, 1 for a perfect balance (and for no stages or no cycles).
double stage_imbalance(const std::vector<double>& stage_cycles);

} // namespace ipu::lowering
