// What `ipucc compile --report` shows of a memory plan, gathered in one place so the picture
// draws only numbers the plan holds: every tile's bytes by category, each IPU's fullest tiles
// broken down, and the program's largest tensors. Built also for a plan that does not fit.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/lowering/memory_plan.h"
#include "compiler/target/target.h"
#include "runtime/format/executable.pb.h"

namespace ipu::lowering {

// How many tensors the report lists (MemoryReport::largest_tensors).
constexpr size_t kLargestTensors = 10;

struct TensorFootprint {
  std::string name;
  std::string role;          // the executable's TensorRole in lower case: "weight", "activation", ...
  uint64_t bytes = 0;        // over all tiles
  uint32_t tiles = 0;        // tiles holding part of it
  uint64_t largest_part = 0; // the most one tile holds of it
};

struct MemoryReport {
  uint32_t ipus = 0; // of one replica: stage s on IPU s
  uint32_t tiles_per_ipu = 0;
  uint64_t bytes_per_tile = 0;
  std::vector<uint64_t> peak_per_tile;   // IPU by IPU, ipus × tiles_per_ipu of them
  std::vector<TileSplit> split_per_tile; // what fills each of those tiles at its fullest
  std::vector<TileUsage> fullest_per_ipu;
  uint32_t overflowing_tiles = 0;
  uint64_t total_bytes = 0;
  std::vector<TensorFootprint> largest_tensors; // at most kLargestTensors, largest first
  // Memory over the program, at most kLivenessPoints steps (each the fullest of the compute sets it
  // stands for: a long program is drawn at its peaks, not sampled past them).
  std::vector<LiveStep> liveness;
  std::vector<std::string> liveness_names; // each step's compute set (the first it stands for)
};

constexpr size_t kLivenessPoints = 600;

MemoryReport report_memory(const format::Executable& executable, const MemoryPlan& plan,
                           const target::TargetSpec& target);

} // namespace ipu::lowering
