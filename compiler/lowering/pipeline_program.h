// The train program of a pipelined model: the schedule's slots over the micro-batches of one
// weight update, then the all-reduce and the update. Within a slot every stage that has work
// runs its forward or backward compute sets, all stages in parallel; around them the program
// moves data the way the hardware would: infeeds into stage 0 (features) and the last stage
// (labels), activations and gradients across stage boundaries through per-micro-batch receive
// buffers (inter-IPU copies), and each stage's activations into and out of its stash slots.
#pragma once

#include <string>
#include <vector>

#include "compiler/lowering/lower_context.h"
#include "compiler/lowering/program_builder.h"
#include "compiler/passes/pipeline_schedule.h"

namespace ipu::lowering {

struct StageComputeSets {
  std::vector<uint32_t> forward, loss, backward, update;
};

struct StepStreams {
  uint32_t features_stream = 0, features = 0;
  uint32_t labels_stream = 0, labels = 0;
  uint32_t loss_stream = 0, loss = 0;
  uint32_t correct_stream = 0, correct = 0;
};

// What the schedule costs, per weight update, for reports.
struct PipelineReport {
  std::string schedule;
  passes::PipelinePlan plan;
  std::vector<double> slot_cycles;                // duration of each slot
  std::vector<std::vector<double>> work_cycles;   // [slot][work item]
  std::vector<double> busy_cycles;                // per stage (IPU)
  double update_cycles = 0;                       // all-reduce and weight update after the slots
  double cycles_per_update = 0;
  std::vector<uint64_t> stash_bytes;              // per stage: stash slots and receive buffers
};

format::Sequence build_pipelined_update(LowerContext& ctx, ProgramBuilder& programs,
                                        const std::vector<StageComputeSets>& stages, const StepStreams& io,
                                        const passes::PipelinePlan& plan, const std::vector<uint32_t>& accumulators,
                                        uint32_t replicas, PipelineReport& report);

}  // namespace ipu::lowering
