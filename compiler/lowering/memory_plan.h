// Per-tile memory plan: what each tile must hold at its fullest moment of a step. Weights,
// optimizer state, stream buffers, vertex descriptors and code stay for the whole program;
// activations and gradients live from the first compute set that touches them to the last;
// data received over the exchange lives during its compute set.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "compiler/lowering/lower_context.h"
#include "compiler/target/target.h"
#include "runtime/format/executable.pb.h"

namespace ipu::lowering {

// What one tile holds at its fullest moment, by category; the categories add up to peak_bytes.
struct TileUsage {
  uint32_t tile = 0;
  uint64_t peak_bytes = 0;
  std::string compute_set;         // the one running at that moment ("" if only resident data)
  uint64_t tensor_bytes = 0;       // resident tensors and the activations live then
  uint64_t exchange_bytes = 0;     // receive buffers of that compute set
  uint64_t vertex_state_bytes = 0; // descriptors of every vertex on the tile
  uint64_t vertices = 0;
  uint64_t code_bytes = 0; // one copy of each codelet the tile runs
  uint64_t codelets = 0;
  std::vector<std::pair<std::string, uint64_t>> largest_tensors; // of those tensors: name, bytes here
  uint64_t other_tensors = 0;                                    // how many more there are
};

// A tile's bytes at its fullest moment by the categories of TileUsage; they add up to its peak.
struct TileSplit {
  uint64_t tensor_bytes = 0;
  uint64_t exchange_bytes = 0;
  uint64_t vertex_state_bytes = 0;
  uint64_t code_bytes = 0;
};

// How many of each IPU's fullest tiles the plan breaks down (fullest_per_ipu).
constexpr size_t kBrokenDownPerIpu = 3;

// Memory over the program: at one compute set of the order the plan follows, the bytes each IPU's
// tiles hold (what lives all program long, the temporaries live then, that set's receive
// buffers): the fullest of its tiles then, and all its tiles together.
struct LiveStep {
  uint32_t compute_set = 0;
  std::vector<uint64_t> fullest_tile_per_ipu;
  std::vector<uint64_t> total_per_ipu;
};

struct MemoryPlan {
  std::vector<uint64_t> peak_per_tile;
  std::vector<TileSplit> split_per_tile; // what fills each tile then
  TileUsage fullest;
  // Each IPU's kBrokenDownPerIpu fullest tiles that hold anything, broken down, IPU by IPU and
  // fullest first within an IPU (the tiles `ipucc compile --report` details).
  std::vector<TileUsage> fullest_per_ipu;
  uint64_t total_bytes = 0;
  uint32_t tiles_used = 0;
  std::vector<TileUsage> overflowing; // tiles whose peak exceeds bytes_per_tile, fullest first
  std::vector<LiveStep> liveness;     // one per compute set of the order, in it
};

// Whether a tensor of this role lives all program long (weights, optimizer state, stashes, ...);
// activations and gradients are temporaries, live across the compute sets that touch them.
bool lives_whole_program(format::TensorRole role);

// Whether a pipeline stage keeps a tensor of this role once per micro-batch in flight when its
// backward pass reads it: what is fed per micro-batch (inputs, labels) and activations.
bool stashed_per_micro_batch(format::TensorRole role);

// The positions in `order` of the first and last compute set that touches each temporary.
std::map<uint32_t, std::pair<size_t, size_t>>
temporary_live_ranges(const std::vector<uint32_t>& order, const std::vector<ComputeSetRecord>& records);

// `order` lists compute sets in the order the longest program runs them.
MemoryPlan plan_memory(const format::Executable& executable, const std::vector<uint32_t>& order,
                       const std::vector<lowering::ComputeSetRecord>& records,
                       const target::TargetSpec& target);

// 869712 as "869,712", as the memory messages print bytes.
std::string with_commas(uint64_t n);

// For each overflowing tile (at most `limit`), for the out-of-memory error, what fills it:
// "tile 17 needs 700,000 bytes of 638,976 in compute set 'forward/0/1': tensors 450,000
// (largest: fc1/kernel 401,408, ... and 3 more), exchange buffers 240,000, vertex state 320
// (10 vertices), code 9,216 (9 codelets)".
std::string describe_overflow(const MemoryPlan& plan, const target::TargetSpec& target, size_t limit);

} // namespace ipu::lowering
