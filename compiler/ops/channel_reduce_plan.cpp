#include "compiler/ops/channel_reduce_plan.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <unordered_set>

#include "compiler/lowering/colocated_split.h"

namespace ipu::ops {
namespace {

// The combine step: each channel's parts, spread over as many tiles as there are channels, in a
// compute set of its own (its sync and its vertices' launch).
double combine_cycles(const ChannelReduceWork& w, const ChannelReducePlan& plan,
                      const target::TargetSpec& target) {
  if (plan.parts() == 1) return 0.0;
  const auto& m = target.cycles;
  const double combined =
      static_cast<double>(plan.parts() * w.values_per_part) *
      std::ceil(static_cast<double>(w.C) / static_cast<double>(std::min<int64_t>(w.C, target.tiles_per_ipu)));
  return combined / m.partial_sum_flops_per_cycle + 4.0 * combined / m.exchange_bytes_per_cycle +
         target::sync_cycles(target, 1) + m.vertex_overhead_cycles;
}

// The tile holding element `i` of a tensor mapped by `mapping` (intervals in order).
uint32_t tile_of(const google::protobuf::RepeatedPtrField<format::Interval>& mapping, uint64_t i) {
  const auto it = std::upper_bound(mapping.begin(), mapping.end(), i,
                                   [](uint64_t x, const format::Interval& iv) { return x < iv.end(); });
  return it->tile();
}

// The blocks bounded by each change of tile along `tensor`'s mapping, when each lies on one tile of the
// open compute set's IPU: the channel, sample and position chunks are the greatest common divisors of
// where the changes fall. Empty when the mapping is not such a grid, or when the grid has more blocks
// than a few per tile (one vertex each) or more rows than are worth checking.
std::optional<PlacedChannelReduce> grid_of_mapping(const lowering::LowerContext& ctx, uint32_t tensor,
                                                   const ChannelReduceWork& w) {
  constexpr int64_t kMaxBlocksPerTile = 4, kMaxRowsChecked = int64_t{1} << 20;
  const format::Tensor& t = ctx.executable().tensors(static_cast<int>(tensor));
  const auto& mapping = t.mapping();
  const uint32_t tiles = ctx.target().tiles_per_ipu;
  const auto ipu = static_cast<uint32_t>(ctx.compute_set_ipu());
  if (mapping.empty() || static_cast<int64_t>(mapping.rbegin()->end()) != w.N * w.C * w.S)
    return std::nullopt;
  // The position chunk: where the tile changes within a row.
  int64_t gs = w.S;
  for (int k = 1; k < mapping.size(); ++k) {
    if (mapping[k].tile() / tiles != ipu) return std::nullopt;
    if (mapping[k - 1].tile() != mapping[k].tile())
      gs = std::gcd(gs, static_cast<int64_t>(mapping[k].begin()) % w.S);
  }
  if (mapping[0].tile() / tiles != ipu || w.N * w.C * (w.S / gs) > kMaxRowsChecked) return std::nullopt;
  // The channel and sample chunks: where the tile changes from one row to the next at a chunk of
  // positions.
  const auto tile_at = [&](int64_t n, int64_t c, int64_t s) {
    return tile_of(mapping, static_cast<uint64_t>((n * w.C + c) * w.S + s));
  };
  int64_t gn = w.N, gc = w.C;
  for (int64_t sb = 0; sb < w.S; sb += gs) {
    for (int64_t n = 0; n < w.N; ++n) {
      for (int64_t c = 0; c < w.C; ++c) {
        const uint32_t tile = tile_at(n, c, sb);
        if (c > 0 && tile != tile_at(n, c - 1, sb)) gc = std::gcd(gc, c);
        if (n > 0 && tile != tile_at(n - 1, c, sb)) gn = std::gcd(gn, n);
      }
    }
  }
  PlacedChannelReduce placed;
  placed.plan = {{w.C / gc, gc}, {w.N / gn, gn}, {w.S / gs, gs}};
  placed.blocks = channel_blocks(placed.plan, w);
  if (static_cast<int64_t>(placed.blocks.size()) > kMaxBlocksPerTile * tiles) return std::nullopt;
  // A change of tile falls only on a block's edge within a row; check each row of a block starts
  // on the block's tile.
  for (const ChannelBlock& b : placed.blocks) {
    const auto row_start = [&](int64_t n, int64_t c) {
      return static_cast<uint64_t>((n * w.C + c) * w.S + b.sb);
    };
    const uint32_t tile = tile_of(mapping, row_start(b.nb, b.cb));
    for (int64_t n = b.nb; n < b.ne; ++n) {
      for (int64_t c = b.cb; c < b.ce; ++c) {
        if (tile_of(mapping, row_start(n, c)) != tile) return std::nullopt;
      }
    }
    placed.tiles.push_back(tile);
  }
  return placed;
}

} // namespace

ChannelReduceWork channel_reduce_work(const std::vector<int64_t>& shape) {
  ChannelReduceWork w;
  w.N = shape[0];
  w.C = shape[1];
  for (size_t i = 2; i < shape.size(); ++i)
    w.S *= shape[i];
  return w;
}

ChannelReducePlan plan_channel_reduce(const ChannelReduceWork& w, const target::TargetSpec& target) {
  const auto& m = target.cycles;
  const auto tiles = static_cast<int64_t>(target.tiles_per_ipu);
  const double budget = lowering::tile_budget_bytes(target);
  ChannelReducePlan best, smallest;
  double best_cycles = std::numeric_limits<double>::infinity(), smallest_bytes = best_cycles;
  using lowering::candidate_part_counts;
  using lowering::even_split;
  for (int64_t cp : candidate_part_counts(w.C, w.C)) {
    for (int64_t np : candidate_part_counts(w.N, w.N)) {
      for (int64_t sp : candidate_part_counts(w.S, w.S)) {
        const ChannelReducePlan plan{even_split(w.C, cp), even_split(w.N, np), even_split(w.S, sp)};
        const int64_t vertices = plan.channels.parts * plan.parts();
        if (vertices > tiles) continue;
        const double elements =
            static_cast<double>(plan.channels.chunk * plan.samples.chunk * plan.positions.chunk);
        const double received = w.element_bytes * static_cast<double>(w.inputs) * elements;
        const double held = received + 4.0 * static_cast<double>(w.values_per_part * plan.channels.chunk);
        const double cycles =
            m.vertex_overhead_cycles + elements * w.ops_per_element / m.vector_flops_per_cycle +
            received / m.exchange_bytes_per_cycle + m.vertex_spread_cycles * static_cast<double>(vertices) +
            combine_cycles(w, plan, target);
        if (held <= budget && cycles < best_cycles * 0.999) {
          best = plan;
          best_cycles = cycles;
        }
        if (held < smallest_bytes) {
          smallest = plan;
          smallest_bytes = held;
        }
      }
    }
  }
  return std::isinf(best_cycles) ? smallest : best;
}

std::pair<int64_t, int64_t> channels_spanned(const ChannelReduceWork& w, int64_t begin, int64_t end) {
  const int64_t first = begin / w.S % w.C, last = (end - 1) / w.S % w.C;
  const bool wraps = (end - 1) / w.S / w.C != begin / w.S / w.C || last < first;
  return wraps ? std::pair<int64_t, int64_t>{0, w.C} : std::pair<int64_t, int64_t>{first, last + 1};
}

std::vector<ChannelBlock> channel_blocks(const ChannelReducePlan& plan, const ChannelReduceWork& w) {
  std::vector<ChannelBlock> blocks;
  for (int64_t i = 0; i < plan.channels.parts; ++i) {
    const int64_t cb = i * plan.channels.chunk, ce = std::min(w.C, cb + plan.channels.chunk);
    for (int64_t part = 0; part < plan.parts(); ++part) {
      const int64_t nb = part / plan.positions.parts * plan.samples.chunk,
                    sb = part % plan.positions.parts * plan.positions.chunk;
      blocks.push_back({cb, ce, nb, std::min(w.N, nb + plan.samples.chunk), sb,
                        std::min(w.S, sb + plan.positions.chunk), part});
    }
  }
  return blocks;
}

std::vector<uint32_t> PlacedChannelReduce::distinct_tiles() const {
  std::vector<uint32_t> distinct;
  std::unordered_set<uint32_t> seen;
  for (uint32_t tile : tiles) {
    if (seen.insert(tile).second) distinct.push_back(tile);
  }
  return distinct;
}

PlacedChannelReduce place_channel_reduce(lowering::LowerContext& ctx, const ChannelReduceWork& w,
                                         const std::vector<uint32_t>& anchors, const BlockReads& reads) {
  const target::TargetSpec& target = ctx.target();
  const auto cost = [&](const PlacedChannelReduce& p) {
    std::vector<lowering::PlacedChunk> chunks;
    for (size_t i = 0; i < p.blocks.size(); ++i)
      chunks.push_back({p.tiles[i], static_cast<int64_t>(i), static_cast<int64_t>(i) + 1});
    // The partials a block writes, a few values per channel, are left out.
    const lowering::MakeVertex block_vertex = [&](int64_t i, int64_t) {
      const ChannelBlock& block = p.blocks[static_cast<size_t>(i)];
      lowering::VertexSpec v;
      v.compute_cycles =
          w.ops_per_element * static_cast<double>(block.elements()) / target.cycles.vector_flops_per_cycle;
      v.reads = reads(block);
      return v;
    };
    return lowering::placement_cycles(ctx, chunks, block_vertex).total() + combine_cycles(w, p.plan, target);
  };
  PlacedChannelReduce best;
  best.plan = plan_channel_reduce(w, target);
  best.blocks = channel_blocks(best.plan, w);
  best.tiles = ctx.peek_tiles(static_cast<int64_t>(best.blocks.size()));
  double best_cycles = cost(best);
  bool on_mapping = false;
  for (uint32_t anchor : anchors) {
    std::optional<PlacedChannelReduce> candidate = grid_of_mapping(ctx, anchor, w);
    if (!candidate) continue;
    const double cycles = cost(*candidate);
    if (cycles < best_cycles * 0.999) {
      best = std::move(*candidate);
      best_cycles = cycles;
      on_mapping = true;
    }
  }
  if (!on_mapping) ctx.take_tiles(static_cast<int64_t>(best.blocks.size()));
  return best;
}

std::vector<lowering::Region> channel_block_regions(uint32_t tensor, const ChannelReduceWork& w, int64_t cb,
                                                    int64_t ce, int64_t nb, int64_t ne, int64_t sb,
                                                    int64_t se) {
  if (sb == 0 && se == w.S) return {lowering::block_region(tensor, nb, ne, cb * w.S, ce * w.S, w.C * w.S)};
  std::vector<lowering::Region> regions;
  for (int64_t c = cb; c < ce; ++c)
    regions.push_back(lowering::block_region(tensor, nb, ne, c * w.S + sb, c * w.S + se, w.C * w.S));
  return regions;
}

std::vector<int64_t> channel_block_params(const ChannelReduceWork& w, const ChannelBlock& b, int64_t parts) {
  using P = format::params::BatchStatistics;
  static_assert(format::same_layout<P, format::params::BatchNormGradStats>);
  return format::make_params<P>({{P::kN, w.N},
                                 {P::kC, w.C},
                                 {P::kS, w.S},
                                 {P::kCBegin, b.cb},
                                 {P::kCEnd, b.ce},
                                 {P::kNBegin, b.nb},
                                 {P::kNEnd, b.ne},
                                 {P::kSBegin, b.sb},
                                 {P::kSEnd, b.se},
                                 {P::kParts, parts},
                                 {P::kPart, b.part}});
}

} // namespace ipu::ops
