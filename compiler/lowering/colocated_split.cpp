#include "compiler/lowering/colocated_split.h"

#include <algorithm>
#include <array>
#include <limits>
#include <map>

#include "compiler/lowering/tile_planner.h"

namespace ipu::lowering {

std::vector<PlacedChunk> chunks_on_mapping(const LowerContext& context, const ElementwiseWork& work,
                                           uint32_t anchor) {
  const format::Tensor& t = context.executable().tensors(static_cast<int>(anchor));
  int64_t elements = 1;
  for (int64_t d : t.shape())
    elements *= d;
  const int64_t g = work.granule;
  if (t.mapping_size() == 0 || elements != work.items * g) return {};
  const uint32_t tiles = context.target().tiles_per_ipu;
  const auto ipu = static_cast<uint32_t>(context.compute_set_ipu());
  std::vector<PlacedChunk> chunks;
  for (const format::Interval& iv : t.mapping()) {
    if (iv.tile() / tiles != ipu) return {};
    // The items whose first element lies in the interval.
    const int64_t begin = ceil_div(static_cast<int64_t>(iv.begin()), g);
    const int64_t end = std::min(work.items, ceil_div(static_cast<int64_t>(iv.end()), g));
    if (begin >= end) continue;
    if (!chunks.empty() && chunks.back().tile == iv.tile() && chunks.back().end == begin) {
      chunks.back().end = end;
    } else {
      chunks.push_back({iv.tile(), begin, end});
    }
  }
  // Every item placed once, in order (a mapping covers its tensor; this guards the vertices).
  int64_t next = 0;
  for (const PlacedChunk& c : chunks) {
    if (c.begin != next) return {};
    next = c.end;
  }
  if (next != work.items) return {};
  return chunks;
}

std::vector<PlacedChunk> merge_chunks(const std::vector<PlacedChunk>& chunks, size_t group) {
  std::vector<PlacedChunk> merged;
  for (size_t first = 0; first < chunks.size(); first += group) {
    const size_t last = std::min(chunks.size(), first + group) - 1;
    const auto largest = std::max_element(
        chunks.begin() + static_cast<long>(first), chunks.begin() + static_cast<long>(last) + 1,
        [](const PlacedChunk& a, const PlacedChunk& b) { return a.end - a.begin < b.end - b.begin; });
    merged.push_back({largest->tile, chunks[first].begin, chunks[last].end});
  }
  return merged;
}

PlacementCost placement_cycles(const LowerContext& context, const std::vector<PlacedChunk>& chunks,
                               const MakeVertex& make_vertex) {
  const auto& m = context.target().cycles;
  using RegionKey = std::array<int64_t, 6>;
  struct TileLoad {
    double cycles = 0, received = 0, written = 0;
    std::map<RegionKey, double> regions; // what it receives, as LowerContext counts it
  };
  std::map<uint32_t, TileLoad> load;
  for (const PlacedChunk& c : chunks) {
    const VertexSpec v = make_vertex(c.begin, c.end);
    TileLoad& tile = load[c.tile];
    tile.cycles += m.vertex_overhead_cycles + v.compute_cycles;
    for (const Region& r : v.reads) {
      const auto bytes = static_cast<double>(context.bytes_off_tile(r, c.tile));
      tile.received += bytes;
      if (bytes > 0)
        tile.regions[{r.tensor, r.row_begin, r.row_end, r.col_begin, r.col_end, r.row_stride}] += bytes;
    }
    for (const Region& w : v.writes)
      tile.written += 4.0 * static_cast<double>((w.row_end - w.row_begin) * (w.col_end - w.col_begin));
  }
  const double budget = tile_budget_bytes(context.target());
  const uint32_t bus = std::max<uint32_t>(1, m.tiles_per_exchange_bus);
  PlacementCost cost{0, m.vertex_spread_cycles * static_cast<double>(chunks.size())};
  for (const auto& [tile, l] : load) {
    if (l.received + l.written > budget) return {std::numeric_limits<double>::infinity(), cost.spread};
    // A region the bus's other tiles receive too arrives at twice the rate (end_compute_set).
    double shared = 0;
    for (uint32_t partner = tile - tile % bus; partner < tile - tile % bus + bus; ++partner) {
      const auto theirs = load.find(partner);
      if (partner == tile || theirs == load.end()) continue;
      for (const auto& [region, bytes] : l.regions) {
        const auto same = theirs->second.regions.find(region);
        if (same != theirs->second.regions.end()) shared += std::min(bytes, same->second);
      }
    }
    // With what the compute set's earlier ops already give the tile.
    const double received = l.received + static_cast<double>(context.tile_received_so_far(tile));
    const double exchange = target::exchange_cycles(m, received, std::min(shared, l.received));
    cost.busiest_tile = std::max(cost.busiest_tile, context.tile_cycles_so_far(tile) + l.cycles + exchange);
  }
  return cost;
}

std::vector<PlacedChunk> split_chunks(const LowerContext& context, int64_t items, int64_t parts,
                                      int64_t chunk) {
  const std::vector<uint32_t> tiles = context.peek_tiles(parts);
  std::vector<PlacedChunk> chunks;
  for (int64_t p = 0; p < parts; ++p)
    chunks.push_back({tiles[static_cast<size_t>(p)], p * chunk, std::min(items, (p + 1) * chunk)});
  return chunks;
}

std::vector<PlacedChunk> place_elementwise(LowerContext& context, const ElementwiseWork& work,
                                           const MakeVertex& make_vertex) {
  const target::TargetSpec& target = context.target();
  const Split split = plan_split(work.items, work.cycles_per_item, work.bytes_per_item,
                                 2 * work.bytes_per_item, target, target.tiles_per_ipu);
  std::vector<PlacedChunk> best = split_chunks(context, work.items, split.parts, split.chunk);
  PlacementCost best_cost = placement_cycles(context, best, make_vertex);
  bool colocated = false;
  for (size_t a = 0; a < work.aligned.size(); ++a) {
    const auto first = work.aligned.begin(), anchor = first + static_cast<long>(a);
    if (std::find(first, anchor, *anchor) != anchor) continue; // the same tensor twice (x · x)
    const std::vector<PlacedChunk> chunks = chunks_on_mapping(context, work, *anchor);
    // Its chunks as they lie, then in runs of 2, 4, ... (fewer vertices, each receiving the
    // items beyond its largest chunk).
    for (size_t group = 1; group < 2 * chunks.size(); group *= 2) {
      const size_t vertices = (chunks.size() + group - 1) / group;
      if (target.cycles.vertex_spread_cycles * static_cast<double>(vertices) >= best_cost.total()) continue;
      std::vector<PlacedChunk> candidate = merge_chunks(chunks, group);
      const PlacementCost cost = placement_cycles(context, candidate, make_vertex);
      if (cost.total() < best_cost.total() * 0.999 && cost.busiest_tile <= best_cost.busiest_tile) {
        best = std::move(candidate);
        best_cost = cost;
        colocated = true;
      }
    }
  }
  if (!colocated) context.take_tiles(split.parts);
  return best;
}

} // namespace ipu::lowering
