// Lowering helpers for ops whose work is a 1-D range (elements or rows).
#pragma once

#include <algorithm>
#include <utility>

#include "compiler/lowering/colocated_split.h"
#include "compiler/lowering/lower_context.h"
#include "compiler/lowering/tile_planner.h"

namespace ipu::lowering {

// Calls emit_chunk(tile, begin, end) once per vertex of `split` over `items`, on tiles from
// take_tiles.
template <typename EmitChunk>
void emit_split(LowerContext& context, const Split& split, int64_t items, EmitChunk&& emit_chunk) {
  std::vector<uint32_t> tiles = context.take_tiles(split.parts);
  for (int64_t p = 0; p < split.parts; ++p) {
    int64_t begin = p * split.chunk, end = std::min(items, begin + split.chunk);
    emit_chunk(tiles[static_cast<size_t>(p)], begin, end);
  }
}

// Plans a split of `items` units (each costing `cycles_per_item` and reading
// `bytes_per_item`) and calls emit_chunk(tile, begin, end) once per vertex.
template <typename EmitChunk>
void lower_split(LowerContext& context, int64_t items, double cycles_per_item, double bytes_per_item,
                 EmitChunk&& emit_chunk) {
  const Split split = plan_split(items, cycles_per_item, bytes_per_item, 2 * bytes_per_item, context.target(),
                                 context.target().tiles_per_ipu);
  emit_split(context, split, items, emit_chunk);
}

// Lowers an op whose items read its `aligned` operands elementwise: make_vertex(begin, end) gives
// the vertex of items [begin, end), placed where place_elementwise decides (on an aligned
// operand's tiles when that costs less than the 1-D split).
template <typename Make>
void lower_where_operands_live(LowerContext& context, const ElementwiseWork& work, Make&& make_vertex) {
  const MakeVertex make = std::forward<Make>(make_vertex);
  for (const PlacedChunk& c : place_elementwise(context, work, make))
    context.emit(c.tile, make(c.begin, c.end));
}

} // namespace ipu::lowering
