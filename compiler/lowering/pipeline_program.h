// The train program of a pipelined model: the schedule's slots over the micro-batches of one
// weight update, then the all-reduce and the update. Within a slot every stage that has work
// runs its forward or backward compute sets, all stages in parallel; around them the program
// moves data the way the hardware would: infeeds into stage 0 (features) and the last stage
// (labels), activations and gradients across stage boundaries through per-micro-batch receive
// buffers (inter-IPU copies), and each stage's activations into and out of its stash slots.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compiler/lowering/lower_context.h"
#include "compiler/lowering/pipeline_inference.h"
#include "compiler/lowering/pipeline_schedule.h"
#include "compiler/lowering/program_builder.h"

namespace ipu::lowering {

struct StageComputeSets {
  // clip: the stage's share of the gradients' global norm (ir::Phase::kClip), before any update.
  // loss_scale, skip: dynamic loss scaling's update of the scale (ir::Phase::kLossScale) and what
  // runs instead of `update` when the gradients were not finite (ir::Phase::kSkip).
  std::vector<uint32_t> forward, loss, backward, clip, loss_scale, update, skip;
  // Under dynamic loss scaling: the tensor (float32 [1]) whose non-zero value runs `update`,
  // else `skip`.
  std::optional<uint32_t> update_condition;
};

// The stage's part of a weight update after every stage's clip sets: its loss_scale sets, then its
// update sets (or, under dynamic loss scaling, a Conditional choosing them or its skip sets).
void append_stage_update(format::Sequence& seq, const StageComputeSets& stage);

struct StepStreams {
  uint32_t features_stream = 0, features = 0;
  uint32_t labels_stream = 0, labels = 0;
  uint32_t loss_stream = 0, loss = 0;
  uint32_t correct_stream = 0, correct = 0;
  bool counts_correct = false; // only with the accuracy metric
  struct Metric {
    uint32_t stream = 0, sum = 0;
  };
  std::vector<Metric> metrics; // the other metrics' "metric:<name>" outfeeds
  // Dynamic loss scaling's report (format::kLossScaleStream), once per weight update.
  bool reports_loss_scale = false;
  uint32_t loss_scale_stream = 0, loss_scale_report = 0;
};

// Fills `estimate` (slots with the cycles of each pass, busy cycles per stage, stash bytes per
// stage, update cycles) as it builds the program.
// With `recompute`, a stage stashes only its inputs (infeeds and values received from the
// previous stage) and runs its forward pass again before each backward pass: less memory for
// more cycles, the same numbers. The receive buffers between stages go into `receive`, for the
// evaluate and predict programs to use too.
format::Sequence build_pipelined_update(LowerContext& ctx, ProgramBuilder& programs,
                                        const std::vector<StageComputeSets>& stages, const StepStreams& io,
                                        const PipelinePlan& plan, const std::vector<uint32_t>& accumulators,
                                        uint32_t replicas, bool recompute, ReceiveBuffers& receive,
                                        format::ScheduleEstimate& estimate);

} // namespace ipu::lowering
