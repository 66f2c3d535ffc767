// The split of a per-channel reduction over an [N, C, S] value (S: the spatial positions) that
// batch normalization's statistics and its gradients' sums make: channels × samples × positions,
// as poplibs' reductions split the reduced dimensions over tiles with partials (popops
// ReductionPlan, poplin normStatistics), never one vertex reading a channel's whole span.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "compiler/lowering/lower_context.h"
#include "compiler/lowering/tile_planner.h"

namespace ipu::ops {

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

// The channels [first, last) that elements [begin, end) of an [N, C, S] value span: all of them
// when the range wraps round to a later sample's first channels.
std::pair<int64_t, int64_t> channels_spanned(const ChannelReduceWork& work, int64_t begin, int64_t end);

// One vertex's block of a plan: channels [cb, ce), samples [nb, ne), positions [sb, se), and the
// part (of plan.parts()) its partial results go to.
struct ChannelBlock {
  int64_t cb, ce, nb, ne, sb, se, part;
  int64_t elements() const { return (ce - cb) * (ne - nb) * (se - sb); }
};

// The blocks of `plan`, channel blocks outermost.
std::vector<ChannelBlock> channel_blocks(const ChannelReducePlan& plan, const ChannelReduceWork& work);

// A plan with the tile of each of its blocks (channel_blocks' order).
struct PlacedChannelReduce {
  ChannelReducePlan plan;
  std::vector<ChannelBlock> blocks;
  std::vector<uint32_t> tiles;
  // The tiles its blocks lie on, each once, in order of their first block: where the step that
  // combines the partials runs.
  std::vector<uint32_t> distinct_tiles() const;
};

// The [N, C, S] regions each block of a reduction reads.
using BlockReads = std::function<std::vector<lowering::Region>(const ChannelBlock&)>;

// Where a reduction's blocks go: plan_channel_reduce's grid on the tiles take_tiles gives (which it
// then takes), unless the grid an `anchors` tensor's tile mapping makes, each block on the tile that
// holds it, costs less (placement_cycles and the combine step): poplibs reduces first on the tiles
// where its input lies, then exchanges only the partials (popops ReductionStages,
// inputToIntermediateNoExchange).
PlacedChannelReduce place_channel_reduce(lowering::LowerContext& ctx, const ChannelReduceWork& work,
                                         const std::vector<uint32_t>& anchors, const BlockReads& reads);

// The params of a block vertex, BatchStatistics's layout (BatchNormGradStats's is the same).
std::vector<int64_t> channel_block_params(const ChannelReduceWork& w, const ChannelBlock& b, int64_t parts);

} // namespace ipu::ops
