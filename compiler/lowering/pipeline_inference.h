// The evaluate and predict programs of a model on one or more pipeline stages. Within the Repeat
// of steps_per_execution, stage s runs micro-batch m in slot m + s, every busy stage at once, as
// a pipelined inference does on the IPU: ramp-up slots fill the pipeline, then one slot with every
// stage busy repeats, and ramp-down slots drain it. A host transfer happens in the slot of the
// stage its tensor lives on, so every stream still moves its micro-batches in order. A value
// crossing to a later stage travels into receive buffers there, one per stage it crosses, and
// moves on by one buffer after every slot until its stage reads it.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "compiler/lowering/lower_context.h"
#include "compiler/lowering/program_builder.h"

namespace ipu::lowering {

// Receive buffers on the destination stage of each value crossing stage boundaries, by
// destination tensor: the train, evaluate and predict programs never run at once, so they share
// them.
using ReceiveBuffers = std::map<uint32_t, std::vector<uint32_t>>;

// The first `depth` receive buffers of `copy`, adding those that do not exist yet.
const std::vector<uint32_t>& receive_buffers(LowerContext& ctx, ReceiveBuffers& receive,
                                             const StageCopy& copy, size_t depth);

struct StreamTransfer {
  uint32_t stream = 0;
  uint32_t tensor = 0;
};

struct InferencePipeline {
  std::vector<std::vector<uint32_t>> stage_sets; // per stage: its compute sets for one micro-batch
  std::vector<StreamTransfer> inputs;            // streamed in before their stage's pass
  std::vector<StreamTransfer> outputs;           // streamed out after it
};

// One execution of `steps` micro-batches. With `estimate`, records there the slots of that
// execution (the repeated slot once, with its count), each stage's busy and crossing cycles, and
// the receive buffers' bytes per stage.
format::Program build_pipelined_inference(LowerContext& ctx, const ProgramBuilder& programs,
                                          const InferencePipeline& pipeline, uint64_t steps,
                                          ReceiveBuffers& receive, format::ScheduleEstimate* estimate);

} // namespace ipu::lowering
