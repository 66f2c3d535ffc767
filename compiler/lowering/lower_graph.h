// Lowers an IR graph to an executable: BSP schedule of compute sets per phase, tile mapping,
// streams and the named programs (weights_from_host, train, evaluate, predict,
// weights_to_host), then the memory plan and cycle estimates.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/op_registry.h"
#include "compiler/lowering/lower_context.h"
#include "compiler/lowering/memory_plan.h"
#include "compiler/lowering/pipeline_program.h"
#include "compiler/lowering/pipeline_schedule.h"
#include "compiler/lowering/stage_memory.h"
#include "compiler/passes/training.h"
#include "compiler/target/target.h"
#include "runtime/format/executable.pb.h"

namespace ipu::lowering {

// A model input or output and how the user sees it (recorded as format::ModelIo).
struct IoBinding {
  int value = -1;
  std::string name;
  std::string dtype = "f4";
  bool batched = true;
};

struct GraphInterface {
  std::vector<IoBinding>
      inputs; // inputs[0] is fed by the "features" infeed (and trains); none in inference of constants
  std::vector<IoBinding> outputs;         // outputs[0] is streamed out as "predictions" (and trained)
  std::optional<passes::LossValues> loss; // present when the graph trains
  std::vector<int> accumulators;          // gradient accumulators, all-reduced across replicas
};

struct LoweringOptions {
  uint32_t batch_size = 1;
  uint32_t steps_per_execution = 1; // micro-batch steps per execution, a multiple of micro_batches
  uint32_t micro_batches = 1;       // gradient accumulation steps per weight update
  uint32_t replicas = 1;
  uint32_t stages = 1; // pipeline stages; stage s runs on IPU s of its replica
  Schedule schedule = Schedule::kGrouped;
  bool recompute = false; // recompute activations for the backward pass instead of stashing
  // Fill LoweringResult::unit_memory (the automatic pipeline split's measuring compile).
  bool measure_unit_memory = false;
  Precision precision = Precision::kFp32;
};

struct LoweringResult {
  format::Executable executable;
  MemoryPlan memory;
  std::vector<UnitMemory> unit_memory; // per stage, when asked for (LoweringOptions)
};

// An op's lowering: emits its vertices into the context's open compute set.
using LowerFn = Status (*)(LowerContext& context, const ir::Op& op);
// Every op's lowering, indexed by OpKind. They live with the ops' other rules in compiler/ops, a
// layer above this one, which hands them in (ops/op_table.h: op_lowerings).
using OpLowerings = std::array<LowerFn, ir::kOpKindCount>;

// Fills everything but the manifest and model metadata. A plan in which tiles overflow is
// returned too (memory.overflowing): the driver reports it after it has described the program.
StatusOr<LoweringResult> lower_graph(const ir::Graph& graph, const GraphInterface& interface,
                                     const target::TargetSpec& target, const LoweringOptions& options,
                                     const OpLowerings& lowerings);

} // namespace ipu::lowering
