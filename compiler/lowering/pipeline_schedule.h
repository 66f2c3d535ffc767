// The order in which pipeline stages process the micro-batches of one weight update. Each slot
// is one BSP step in which every listed stage runs its forward or backward pass for one
// micro-batch, all stages concurrently.
//   grouped      forward passes of all micro-batches flow through the stages first, then the
//                backward passes (fewest slots; every micro-batch's activations stashed)
//   interleaved  a stage runs a backward pass as soon as one is ready, and keeps at most
//                (stages - stage) micro-batches in flight (fewest stashed activations; forward
//                and backward alternate, so slots last as long as the slower backward passes)
//   sequential   one stage at a time, micro-batch after micro-batch (no overlap; debugging)
#pragma once

#include <string>
#include <vector>

#include "runtime/base/status.h"

namespace ipu::lowering {

enum class Schedule { kGrouped, kInterleaved, kSequential };

StatusOr<Schedule> parse_schedule(const std::string& name);
const char* schedule_name(Schedule schedule);

struct PipelineWork {
  int stage = 0;
  bool forward = true;
  int micro_batch = 0;
};

struct PipelinePlan {
  std::vector<std::vector<PipelineWork>> slots;
  // Most micro-batches a stage holds between its forward and backward pass: how many copies of
  // its stashed activations it needs.
  std::vector<int> stash_depth;
  // Most messages outstanding on each stage boundary: forward[s] carries activations from stage
  // s to s + 1, backward[s] gradients from s + 1 to s.
  std::vector<int> forward_depth;
  std::vector<int> backward_depth;
};

PipelinePlan plan_pipeline(int stages, int micro_batches, Schedule schedule);

} // namespace ipu::lowering
