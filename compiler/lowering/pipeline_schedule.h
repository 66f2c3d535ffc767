// The order in which pipeline stages process the micro-batches of one weight update. Each slot
// is one BSP step in which every listed stage runs its forward or backward pass for one
// micro-batch, all stages concurrently.
//   grouped      Graphcore's default (PipelineSchedule.Grouped): pipeline step after pipeline
//                step, a forward slot in which every stage runs a forward pass (stage s of
//                micro-batch t - s), then a backward slot in which every stage runs a backward
//                pass (stage s of micro-batch t - (2 (stages - 1) - s)); the ramp-up has forward
//                slots only, the ramp-down backward slots only. A stage holds 2 (stages - s) - 1
//                micro-batches in flight, whatever the count; slots last as long as their
//                slowest pass of one kind
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
  // The slot of each pass: forward_slot[s][m] and backward_slot[s][m] for stage s and
  // micro-batch m.
  std::vector<std::vector<int>> forward_slot;
  std::vector<std::vector<int>> backward_slot;
  // Most micro-batches a stage holds between its forward and backward pass: how many copies of
  // its stashed activations it needs.
  std::vector<int> stash_depth;
  // Most messages outstanding on each stage boundary: forward[s] carries activations from stage
  // s to s + 1, backward[s] gradients from s + 1 to s.
  std::vector<int> forward_depth;
  std::vector<int> backward_depth;
  // Per slot: whether the activations its forward passes send wait for the end of the next slot,
  // the same pipeline step's backward slot (grouped), so that a step's activations and gradients
  // cross the IPU-Links in one exchange, as Graphcore's pipelines make one inter-IPU copy per
  // step (TensorFlow's pipeline visitors: the inter-IPU copies end each repeat block).
  std::vector<bool> sends_with_next_slot;
};

PipelinePlan plan_pipeline(int stages, int micro_batches, Schedule schedule);

// Most messages outstanding between two stages' passes of one kind (forward: the activations
// `from` sends to a later stage `to`; backward: the gradients a later stage `from` sends back to
// `to`): the receive buffers a value crossing from one to the other needs, also when it skips
// stages.
int receive_depth(const PipelinePlan& plan, int from, int to, bool forward);

} // namespace ipu::lowering
