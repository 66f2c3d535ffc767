// The split of a per-channel reduction over an [N, C, S] value (S: the spatial positions) that
// batch normalization's statistics and its gradients' sums make: channels × samples × positions,
// as poplibs' reductions split the reduced dimensions over tiles with partials (popops
// ReductionPlan, poplin normStatistics), never one vertex reading a channel's whole span.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "compiler/lowering/lower_context.h"
#include "compiler/lowering/tile_planner.h"

namespace ipu::ir {

struct ChannelReducePlan {
  lowering::Split channels, samples, positions;
  // The partial results each channel has: one per (samples, positions) block.
  int64_t parts() const { return samples.parts * positions.parts; }
};

// What a reduction reads and computes: `inputs` [N, C, S] operands of `element_bytes` each,
// `ops_per_element` vector operations per element read, and `values_per_part` partial values per
// channel and part that a combine step adds (in float) in the compute set after.
struct ChannelReduceWork {
  int64_t N = 1, C = 1, S = 1;
  int inputs = 1;
  double element_bytes = 4.0;
  double ops_per_element = 1.0;
  int64_t values_per_part = 1;
};

// The work of a reduction over a value of `shape` [N, C, ...]: its trailing axes are the positions.
ChannelReduceWork channel_reduce_work(const std::vector<int64_t>& shape);

// The grid of least estimated cycles (launch, compute, bytes received, a charge per vertex, and
// the combine step's adds and exchange) among those whose vertices fit the share of a tile an op
// may use; the one holding the fewest bytes when none does.
ChannelReducePlan plan_channel_reduce(const ChannelReduceWork& work, const target::TargetSpec& target);

// The block of `tensor` ([N, C, S]) that a vertex of channels [cb, ce), samples [nb, ne) and
// positions [sb, se) reads: one region when the positions are whole, else one per channel.
std::vector<lowering::Region> channel_block_regions(uint32_t tensor, const ChannelReduceWork& work,
                                                    int64_t cb, int64_t ce, int64_t nb, int64_t ne,
                                                    int64_t sb, int64_t se);

// One vertex's block of a plan: channels [cb, ce), samples [nb, ne), positions [sb, se), and the
// part (of plan.parts()) its partial results go to.
struct ChannelBlock {
  int64_t cb, ce, nb, ne, sb, se, part;
  int64_t elements() const { return (ce - cb) * (ne - nb) * (se - sb); }
};

// Calls emit(tile, block) for every block of `plan`, channel blocks outermost, on tiles from
// take_tiles, and returns those tiles (where the partials lie for the step that adds them).
template <typename Emit>
std::vector<uint32_t> for_each_channel_block(lowering::LowerContext& ctx, const ChannelReducePlan& plan,
                                             const ChannelReduceWork& w, Emit&& emit) {
  const int64_t parts = plan.parts();
  std::vector<uint32_t> tiles = ctx.take_tiles(plan.channels.parts * parts);
  size_t next = 0;
  for (int64_t i = 0; i < plan.channels.parts; ++i) {
    const int64_t cb = i * plan.channels.chunk, ce = std::min(w.C, cb + plan.channels.chunk);
    for (int64_t part = 0; part < parts; ++part) {
      const int64_t nb = part / plan.positions.parts * plan.samples.chunk,
                    sb = part % plan.positions.parts * plan.positions.chunk;
      emit(tiles[next++], ChannelBlock{cb, ce, nb, std::min(w.N, nb + plan.samples.chunk), sb,
                                       std::min(w.S, sb + plan.positions.chunk), part});
    }
  }
  return tiles;
}

// The params of a block vertex, BatchStatistics's layout (BatchNormGradStats's is the same).
std::vector<int64_t> channel_block_params(const ChannelReduceWork& w, const ChannelBlock& b, int64_t parts);

} // namespace ipu::ir
