// Which statistics batch normalization normalises with (docs/onnx.md, "BatchNormalization"):
// train, evaluate and predict share the forward compute sets, so each stage holding a
// BatchStatistics op has a one-element flag (ir::Role::kStatisticsMode) that its vertices read,
// and each program's steps first run a compute set that sets it: 1 in train (the batch's statistics),
// 0 in evaluate and predict (the running statistics, as Keras and torch evaluate). The set runs
// at the start of every step of the program.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/lowering/lower_context.h"

namespace ipu::lowering {

struct StatisticsModeSets {
  std::vector<uint32_t> training;  // set every flag to 1
  std::vector<uint32_t> inference; // set every flag to 0
};

// One compute set per stage and mode (none when the graph has no flag); the flags must be mapped.
StatisticsModeSets lower_statistics_mode(LowerContext& context, const ir::Graph& graph);

// `body` with the compute sets `sets` run first: at the start of each step when `body` is a
// step program's Repeat (`body` itself when there are no sets).
format::Program after_sets(const std::vector<uint32_t>& sets, format::Program body);

} // namespace ipu::lowering
