// Placing an elementwise op's vertices where one of its operands already lives, as popops maps an
// elementwise op's output like its input: that operand is then read from the tile's own memory,
// and the exchange moves only the operands (or parts of them) mapped elsewhere.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "compiler/lowering/lower_context.h"

namespace ipu::lowering {

// One vertex's share of an op's items: [begin, end) on `tile`.
struct PlacedChunk {
  uint32_t tile = 0;
  int64_t begin = 0, end = 0;
  bool operator==(const PlacedChunk&) const = default;
};

// An op over `items` items of `granule` elements each (1 for an elementwise op, a row's length for
// a row op), costing `cycles_per_item` each. Item k reads elements [k·granule, (k+1)·granule) of
// every tensor in `aligned`. `bytes_per_item` is what the 1-D split (plan_split) counts a vertex
// receiving per item.
struct ElementwiseWork {
  int64_t items = 0;
  int64_t granule = 1;
  double cycles_per_item = 0;
  double bytes_per_item = 0;
  std::vector<uint32_t> aligned;
};

// The vertex that computes items [begin, end).
using MakeVertex = std::function<VertexSpec(int64_t begin, int64_t end)>;

// The items on the tile mapping of `anchor` (one of work.aligned): each item on the tile holding
// its first element, consecutive items on one tile making one chunk, in order of their items.
// Empty unless `anchor` is mapped, holds the op's items × granule elements and lies on the open
// compute set's IPU.
std::vector<PlacedChunk> chunks_on_mapping(const LowerContext& context, const ElementwiseWork& work,
                                           uint32_t anchor);

// `chunks` (in order of their items) with every `group` consecutive ones made one chunk, on the
// tile of the largest of them.
std::vector<PlacedChunk> merge_chunks(const std::vector<PlacedChunk>& chunks, size_t group);

// The planner's measure of a placement, with the bytes each vertex receives worked out from its
// reads and the tensors' mappings: the busiest tile's vertex launches, compute and received bytes
// (what the compute set's cycles count, a region both tiles of an exchange bus receive at twice
// the rate), with those the open compute set's earlier ops give the tile, and vertex_spread_cycles for every
// vertex (what the planner charges the step for each vertex's descriptors and exchange code). The busiest
// tile is infinite when a tile's received and written bytes exceed an op's share of it (tile_budget_bytes).
struct PlacementCost {
  double busiest_tile = 0;
  double spread = 0;
  double total() const { return busiest_tile + spread; }
};
PlacementCost placement_cycles(const LowerContext& context, const std::vector<PlacedChunk>& chunks,
                               const MakeVertex& make_vertex);

// The chunks of a 1-D `split` of the items on the tiles take_tiles would give it (which it does
// not take).
std::vector<PlacedChunk> split_chunks(const LowerContext& context, int64_t items, int64_t parts,
                                      int64_t chunk);

// Where an op over `work` places its vertices: the 1-D split plan_split chooses, on the tiles
// take_tiles gives (which it then takes), unless the items on an aligned operand's mapping, as
// they lie or in runs of 2, 4, ... of its chunks (merge_chunks), cost less by placement_cycles in
// all and no more at the busiest tile, so that operand is read where it lives. Ties keep the 1-D
// split.
std::vector<PlacedChunk> place_elementwise(LowerContext& context, const ElementwiseWork& work,
                                           const MakeVertex& make_vertex);

} // namespace ipu::lowering
