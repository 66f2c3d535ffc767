// Per-tile memory plan: what each tile must hold at its fullest moment of a step. Weights,
// optimizer state, stream buffers, vertex descriptors and code stay for the whole program;
// activations and gradients live from the first compute set that touches them to the last;
// data received over the exchange lives during its compute set.
#pragma once

#include <string>
#include <vector>

#include "compiler/lowering/lower_context.h"
#include "compiler/target/target.h"
#include "runtime/format/executable.pb.h"

namespace ipu::passes {

struct TileUsage {
  uint32_t tile = 0;
  uint64_t peak_bytes = 0;
  std::vector<std::pair<std::string, uint64_t>> largest_tensors;  // name, bytes on this tile
};

struct MemoryPlan {
  std::vector<uint64_t> peak_per_tile;
  TileUsage fullest;
  uint64_t total_bytes = 0;
  uint32_t tiles_used = 0;
  std::vector<TileUsage> overflowing;  // tiles whose peak exceeds bytes_per_tile, fullest first
};

// `order` lists compute sets in the order the longest program runs them.
MemoryPlan plan_memory(const format::Executable& executable, const std::vector<uint32_t>& order,
                       const std::vector<lowering::ComputeSetRecord>& records, const target::TargetSpec& target);

// "tile 17 needs 700,000 bytes of 638,976: fc1/kernel 401,408, ..." for each overflowing tile
// (at most `limit`), for the out-of-memory error.
std::string describe_overflow(const MemoryPlan& plan, const target::TargetSpec& target, size_t limit);

}  // namespace ipu::passes
