#include "compiler/lowering/lower_graph.h"

#include <algorithm>
#include <map>
#include <set>

#include "compiler/ir/op_registry.h"
#include "compiler/lowering/lower_context.h"
#include "compiler/lowering/named_programs.h"
#include "compiler/lowering/program_builder.h"
#include "compiler/lowering/statistics_mode.h"
#include "compiler/lowering/tile_planner.h"
#include "runtime/format/verifier.h"

namespace ipu::lowering {
namespace {

const char* phase_name(ir::Phase phase) {
  switch (phase) {
  case ir::Phase::kForward:
    return "forward";
  case ir::Phase::kLoss:
    return "loss";
  case ir::Phase::kBackward:
    return "backward";
  case ir::Phase::kClip:
    return "clip";
  case ir::Phase::kLossScale:
    return "loss_scale";
  case ir::Phase::kUpdate:
    return "update";
  case ir::Phase::kSkip:
    return "skip";
  }
  return "?";
}

// Whether the next op of a dependency level should open a compute set of its own rather than join
// the open one: Poplar runs each op's compute sets in turn (a program per op), so ops never share
// receive buffers there, and ipucc merges a level only while that does not raise a tile's peak. Once
// a tile of the open set receives 1/8 of a convolution's working-set share, the next op, which may
// take as much as a share on the same tiles (a convolution's plan spans the IPU), runs after it
// instead: ResNet-50's weight-gradient convolutions at micro-batch 20 otherwise stack 558 KB of
// receive buffers on a tile. Small ops (elementwise ops reading where their operands live) still
// share a set.
bool starts_own_compute_set(const LowerContext& ctx) {
  return static_cast<double>(ctx.fullest_tile_received()) > available_memory_bytes(ctx.target()) / 8;
}

// BSP schedule of one phase: an op runs one compute set after the last of its producers in the
// same phase, so independent ops (e.g. the kernel and input gradients of a layer) share a set;
// after the producers of the values it waits for (ir::Op::after), too. A level whose ops would
// stack their exchange buffers goes on in a second set (see starts_own_compute_set).
StatusOr<std::vector<uint32_t>> lower_phase(LowerContext& ctx, const ir::Graph& graph,
                                            const OpLowerings& lowerings, ir::Phase phase, int stage) {
  std::map<int, int> level_of_op;
  std::map<int, std::vector<int>> ops_by_level;
  for (const ir::Op& op : graph.ops()) {
    if (op.phase != phase || op.stage != stage) continue;
    int level = 0;
    for (const std::vector<int>* values : {&op.inputs, &op.after}) {
      for (int v : *values) {
        auto it = level_of_op.find(graph.value(v).producer);
        if (it != level_of_op.end()) level = std::max(level, it->second + 1);
      }
    }
    level_of_op[op.id] = level;
    ops_by_level[level].push_back(op.id);
  }
  ctx.begin_phase(phase);
  std::vector<uint32_t> sets;
  for (const auto& [level, ops] : ops_by_level) {
    const std::string name =
        std::string(phase_name(phase)) + "/" + std::to_string(stage) + "/" + std::to_string(level);
    ctx.begin_compute_set(name, stage);
    int continuations = 0;
    for (int id : ops) {
      const ir::Op& op = graph.op(id);
      if (starts_own_compute_set(ctx)) {
        if (auto index = ctx.end_compute_set()) sets.push_back(*index);
        if (auto index = ctx.lower_follow_ups()) sets.push_back(*index);
        ctx.begin_compute_set(name + "." + std::to_string(++continuations), stage);
      }
      ctx.begin_op(op.name);
      Status status = lowerings[static_cast<size_t>(op.kind)](ctx, op);
      if (!status.ok())
        return status.with_context("lowering '" + op.name + "' (" + ir::op_kind_name(op.kind) + ")");
    }
    if (auto index = ctx.end_compute_set()) sets.push_back(*index);
    if (auto index = ctx.lower_follow_ups()) sets.push_back(*index);
  }
  return sets;
}

// The optimizer state and accumulated gradients each update reads beside its weight (input 0),
// by value id: the weight's mapping suits them all, as poplibs' optimizers clone a weight's
// mapping for its state, so an update reads weight, state and accumulator on the same tiles.
std::map<int, int> state_beside_weight(const ir::Graph& graph) {
  std::map<int, int> weight_of;
  for (const ir::Op& op : graph.ops()) {
    if (op.phase != ir::Phase::kUpdate || op.inputs.empty()) continue;
    const ir::Value& weight = graph.value(op.inputs[0]);
    if (weight.role != ir::Role::kWeight || weight.producer >= 0) continue;
    for (size_t i = 1; i < op.inputs.size(); ++i) {
      const ir::Value& v = graph.value(op.inputs[i]);
      if (v.producer < 0 && v.type.shape == weight.type.shape &&
          (v.role == ir::Role::kOptimizerState || v.role == ir::Role::kAccumulator)) {
        weight_of.emplace(v.id, weight.id);
      }
    }
  }
  return weight_of;
}

// Large weights whose every forward reader is a MatMul taking them as its right operand (a Dense or
// Gemm kernel): the first of those lays them out where its vertices read them
// (LowerContext::defer_mapping_to_reader), as poplin creates a MatMul's weights for its plan, so a
// classifier weight is used where it lives rather than spread linearly and received again by every
// vertex at every step (VGG-11's first, 411 MB: 280 KB on every tile and ~500 KB of exchange buffers
// on each of its MatMul's). Only a weight whose linear share of a tile exceeds `grain_bytes` is
// placed: below that the blocks its vertices receive are a small part of a tile, and the linear
// spread sits lighter on the tiles the MatMul uses than its plan's blocks would. Convolution kernels
// stay spread: a convolution at batch 1 runs on few tiles, and a network's kernels laid out by their
// convolutions stacked up on the tiles each compute set starts from (ResNet-50: 885 KB of kernels on
// one tile).
std::set<int> weights_placed_by_reader(const ir::Graph& graph, const target::TargetSpec& target,
                                       double grain_bytes) {
  std::map<int, bool> only_kernel;
  for (const ir::Op& op : graph.ops()) {
    if (op.phase != ir::Phase::kForward) continue;
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      const ir::Value& v = graph.value(op.inputs[i]);
      if (v.role != ir::Role::kWeight || v.producer >= 0) continue;
      const bool kernel = op.kind == ir::OpKind::kMatMul && i == 1;
      auto [it, inserted] = only_kernel.emplace(v.id, kernel);
      if (!inserted) it->second = it->second && kernel;
    }
  }
  std::set<int> weights;
  for (const auto& [id, kernel] : only_kernel) {
    // Counted at 4 bytes an element in any precision: the tensors are made later, in graph order.
    const double share = 4.0 * static_cast<double>(graph.value(id).type.elements()) /
                         static_cast<double>(target.tiles_per_ipu);
    if (kernel && share > grain_bytes) weights.insert(id);
  }
  return weights;
}

// Compute sets in the order the train program first runs them, for the memory plan's liveness.
std::vector<uint32_t> concat_phases(const std::vector<StageComputeSets>& stages) {
  std::vector<uint32_t> order;
  for (const auto& s : stages)
    order.insert(order.end(), s.forward.begin(), s.forward.end());
  for (const auto& s : stages)
    order.insert(order.end(), s.loss.begin(), s.loss.end());
  for (auto it = stages.rbegin(); it != stages.rend(); ++it)
    order.insert(order.end(), it->backward.begin(), it->backward.end());
  for (const auto& s : stages)
    order.insert(order.end(), s.clip.begin(), s.clip.end());
  for (const auto& s : stages)
    order.insert(order.end(), s.loss_scale.begin(), s.loss_scale.end());
  for (const auto& s : stages)
    order.insert(order.end(), s.update.begin(), s.update.end());
  for (const auto& s : stages)
    order.insert(order.end(), s.skip.begin(), s.skip.end());
  return order;
}

// Every stage's compute sets, phase by phase in the order the train program first runs them, with
// the tensors mapped around them.
StatusOr<LoweredSets> lower_sets(LowerContext& ctx, const ir::Graph& graph, const GraphInterface& io,
                                 const target::TargetSpec& target, const LoweringOptions& options,
                                 const OpLowerings& lowerings) {
  const format::Executable& exe = ctx.executable();
  // Tensors no vertex produces are spread over the tiles up front, an update's state as its weight,
  // but for the weights a MatMul lays out (and their state, once they are placed).
  const std::map<int, int> beside_weight = state_beside_weight(graph);
  // The grain of tile memory LowerContext::take_tiles counts in: 1/16 of an op's working set.
  const std::set<int> placed_by_reader =
      weights_placed_by_reader(graph, target, tile_budget_bytes(target) / 16);
  for (const ir::Value& v : graph.values()) {
    if (v.producer >= 0 || v.role == ir::Role::kActivation || beside_weight.contains(v.id)) continue;
    if (placed_by_reader.contains(v.id)) {
      ctx.defer_mapping_to_reader(v.id);
    } else {
      ctx.map_linearly(v.id);
    }
  }
  auto map_state_beside_weights = [&](bool of_weights_placed_by_reader) {
    for (const auto& [state, weight] : beside_weight) {
      if (placed_by_reader.contains(weight) == of_weights_placed_by_reader) ctx.map_like(state, weight);
    }
  };
  map_state_beside_weights(false);

  const bool train = io.loss.has_value();
  const int S = static_cast<int>(options.stages);
  LoweredSets sets;
  std::vector<StageComputeSets>& stages = sets.stages;
  stages.resize(static_cast<size_t>(S));
  for (int s = 0; s < S; ++s) {
    auto& stage = stages[static_cast<size_t>(s)];
    IPU_ASSIGN_OR_RETURN(stage.forward, lower_phase(ctx, graph, lowerings, ir::Phase::kForward, s));
    if (!train) continue;
    IPU_ASSIGN_OR_RETURN(stage.loss, lower_phase(ctx, graph, lowerings, ir::Phase::kLoss, s));
  }
  for (int weight : placed_by_reader)
    ctx.end_placement(ctx.tensor(weight));
  map_state_beside_weights(true);
  for (int s = S - 1; train && s >= 0; --s) {
    IPU_ASSIGN_OR_RETURN(stages[static_cast<size_t>(s)].backward,
                         lower_phase(ctx, graph, lowerings, ir::Phase::kBackward, s));
  }
  for (int s = 0; train && s < S; ++s) {
    IPU_ASSIGN_OR_RETURN(stages[static_cast<size_t>(s)].clip,
                         lower_phase(ctx, graph, lowerings, ir::Phase::kClip, s));
  }
  for (int s = 0; train && s < S; ++s) {
    IPU_ASSIGN_OR_RETURN(stages[static_cast<size_t>(s)].loss_scale,
                         lower_phase(ctx, graph, lowerings, ir::Phase::kLossScale, s));
  }
  for (int s = 0; train && s < S; ++s) {
    IPU_ASSIGN_OR_RETURN(stages[static_cast<size_t>(s)].update,
                         lower_phase(ctx, graph, lowerings, ir::Phase::kUpdate, s));
  }
  for (int s = 0; train && s < S; ++s) {
    IPU_ASSIGN_OR_RETURN(stages[static_cast<size_t>(s)].skip,
                         lower_phase(ctx, graph, lowerings, ir::Phase::kSkip, s));
  }
  sets.statistics_mode = lower_statistics_mode(ctx, graph);
  // Dynamic loss scaling: each stage's LossScaleUpdate chooses its update or skip; the loss stage's
  // reports the scale to the host.
  for (const ir::Op& op : graph.ops()) {
    if (op.kind != ir::OpKind::kLossScaleUpdate) continue;
    stages[static_cast<size_t>(op.stage)].update_condition = ctx.tensor(op.outputs[0]);
    if (train && op.stage == graph.value(io.loss->loss).stage)
      sets.loss_scale_report = ctx.tensor(op.outputs[1]);
  }
  // A value nothing wrote (an input, a copy between stages) still needs a home.
  for (const ir::Value& v : graph.values()) {
    uint32_t t = ctx.tensor(v.id);
    if (exe.tensors(static_cast<int>(t)).mapping_size() == 0) ctx.map_linearly(v.id);
  }
  return sets;
}

// The memory plan of the train program's order of compute sets, and the estimates it gives.
void plan_and_record_memory(LoweringResult& result, const LowerContext& ctx, const LoweredSets& sets,
                            const target::TargetSpec& target, const LoweringOptions& options) {
  format::Executable& exe = result.executable;
  std::vector<uint32_t> order = concat_phases(sets.stages);
  for (const auto* mode : {&sets.statistics_mode.training, &sets.statistics_mode.inference})
    order.insert(order.end(), mode->begin(), mode->end());
  result.memory = plan_memory(exe, order, ctx.records(), target);
  if (options.measure_unit_memory) {
    size_t backward_begin = 0, update_begin = 0;
    for (const StageComputeSets& stage : sets.stages) {
      backward_begin += stage.forward.size() + stage.loss.size();
      update_begin += stage.forward.size() + stage.loss.size() + stage.backward.size();
    }
    result.unit_memory = measure_unit_memory(exe, order, ctx.records(), ctx.stage_copies(), backward_begin,
                                             update_begin, target);
  }
  format::Estimates* e = exe.mutable_estimates();
  for (uint32_t ipu = 0; ipu < target.num_ipus; ++ipu) {
    uint64_t bytes = 0, fullest = 0;
    for (uint32_t t = 0; t < target.tiles_per_ipu; ++t) {
      bytes += result.memory.peak_per_tile[ipu * target.tiles_per_ipu + t];
      fullest = std::max(fullest, result.memory.peak_per_tile[ipu * target.tiles_per_ipu + t]);
    }
    e->mutable_schedule()->add_peak_bytes(bytes);
    e->mutable_schedule()->add_peak_tile_bytes(fullest);
  }
  e->set_peak_tile_bytes(result.memory.fullest.peak_bytes);
  e->set_fullest_tile(result.memory.fullest.tile);
  e->set_total_bytes(result.memory.total_bytes);
  e->set_tiles_used(result.memory.tiles_used);
  uint64_t vertices = 0;
  for (const auto& cs : exe.compute_sets())
    vertices += static_cast<uint64_t>(cs.vertices_size());
  e->set_vertices(vertices);
}

} // namespace

StatusOr<LoweringResult> lower_graph(const ir::Graph& graph, const GraphInterface& io,
                                     const target::TargetSpec& target, const LoweringOptions& options,
                                     const OpLowerings& lowerings) {
  LoweringResult result;
  format::Executable& exe = result.executable;
  *exe.mutable_target() = target.to_format();
  exe.mutable_target()->set_num_ipus(target.num_ipus * options.replicas);
  exe.set_batch_size(options.batch_size);
  exe.set_steps_per_execution(options.steps_per_execution);

  LowerContext ctx(graph, target, exe, options.precision);
  IPU_ASSIGN_OR_RETURN(const LoweredSets sets, lower_sets(ctx, graph, io, target, options, lowerings));
  ProgramBuilder programs(exe, target, options.replicas);
  build_named_programs(ctx, programs, exe, graph, io, options, sets);
  plan_and_record_memory(result, ctx, sets, target, options);
  return result;
}

} // namespace ipu::lowering
