// Lowering helpers for ops whose work is a 1-D range (elements or rows).
#pragma once

#include <algorithm>

#include "compiler/lowering/lower_context.h"
#include "compiler/lowering/tile_planner.h"

namespace ipu::lowering {

// Plans a split of `items` units (each costing `cycles_per_item` and reading
// `bytes_per_item`) and calls emit_chunk(tile, begin, end) once per vertex.
template <typename EmitChunk>
void lower_split(LowerContext& context, int64_t items, double cycles_per_item, double bytes_per_item,
                 EmitChunk&& emit_chunk) {
  Split split = plan_split(items, cycles_per_item, bytes_per_item, 2 * bytes_per_item, context.target(),
                           context.target().tiles_per_ipu);
  std::vector<uint32_t> tiles = context.take_tiles(split.parts);
  for (int64_t p = 0; p < split.parts; ++p) {
    int64_t begin = p * split.chunk, end = std::min(items, begin + split.chunk);
    emit_chunk(tiles[static_cast<size_t>(p)], begin, end);
  }
}

} // namespace ipu::lowering
