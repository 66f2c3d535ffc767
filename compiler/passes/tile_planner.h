// Decides how many vertices (and so tiles) an op's work is split over. The cost of a split is
// the estimated time of its slowest tile (per-vertex overhead + compute + bytes received) plus a
// small charge per vertex for the code and descriptors each one adds to the step, so small ops
// stay on few tiles and large ones spread out. Memory is bounded per tile.
#pragma once

#include <cstdint>

#include "compiler/target/target.h"

namespace ipu::passes {

struct Split {
  int64_t parts = 1;  // number of vertices
  int64_t chunk = 0;  // items per vertex (the last may have fewer)
};

// Splits `items` independent units of work. Each unit costs `cycles_per_item` compute cycles,
// makes the tile receive `exchange_bytes_per_item` bytes and hold `bytes_per_item` bytes.
Split plan_split(int64_t items, double cycles_per_item, double exchange_bytes_per_item, double bytes_per_item,
                 const target::TargetSpec& target, int64_t max_parts);

struct MatMulGrid {
  Split rows;
  Split cols;
};

// Splits C[M,N] = A[M,K] · B[K,N] into a grid of output blocks, one vertex per block.
MatMulGrid plan_matmul(int64_t M, int64_t N, int64_t K, const target::TargetSpec& target, int64_t max_tiles);

}  // namespace ipu::passes
