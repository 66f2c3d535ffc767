// The named programs of a lowered graph (weights_from_host, train, evaluate, predict,
// weights_to_host) and the streams they move data through, built from its compute sets.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/lowering/lower_context.h"
#include "compiler/lowering/lower_graph.h"
#include "compiler/lowering/pipeline_program.h"
#include "compiler/lowering/program_builder.h"
#include "compiler/lowering/statistics_mode.h"
#include "runtime/format/executable.pb.h"

namespace ipu::lowering {

// What the programs run: each pipeline stage's compute sets per phase, the sets that switch batch
// normalization's statistics mode, and the tensor in which dynamic loss scaling reports its scale
// to the host (on the loss's stage).
struct LoweredSets {
  std::vector<StageComputeSets> stages;
  StatisticsModeSets statistics_mode;
  std::optional<uint32_t> loss_scale_report;
};

// Adds the model's streams and the named programs to `programs`, in that order, and the schedule
// estimate of the train program (predict's when not training) to `exe`.
void build_named_programs(LowerContext& ctx, ProgramBuilder& programs, format::Executable& exe,
                          const ir::Graph& graph, const GraphInterface& io, const LoweringOptions& options,
                          const LoweredSets& sets);

} // namespace ipu::lowering
