// Decides how many vertices (and so tiles) an op's work is split over. The cost of a split is
// the estimated time of its slowest tile (per-vertex overhead + compute + bytes received) plus a
// small charge per vertex for the code and descriptors each one adds to the step, so small ops
// stay on few tiles and large ones spread out. Memory is bounded per tile.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "compiler/target/target.h"

namespace ipu::lowering {

// Items per part when `a` items are split into `b` parts (b > 0): the chunk of every split here.
constexpr int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

struct Split {
  int64_t parts = 1; // number of vertices
  int64_t chunk = 0; // items per vertex (the last may have fewer)
};

// Splits `items` independent units of work. Each unit costs `cycles_per_item` compute cycles,
// makes the tile receive `exchange_bytes_per_item` bytes and hold `bytes_per_item` bytes.
Split plan_split(int64_t items, double cycles_per_item, double exchange_bytes_per_item, double bytes_per_item,
                 const target::TargetSpec& target, int64_t max_parts);

// The estimated cycles of a split (plan_split's measure): its slowest vertex's launch, compute
// and received bytes, plus the per-vertex charge for every vertex.
double split_cycles(const Split& split, double cycles_per_item, double exchange_bytes_per_item,
                    const target::TargetSpec& target);

// How the compute set that adds `shares` partial sums of `elements` values (a '<level>/reduce')
// splits them over at most `max_parts` vertices, each receiving its elements' shares.
Split plan_reduce_of_shares(int64_t shares, int64_t elements, const target::TargetSpec& target,
                            int64_t max_parts);

// That compute set's estimated cycles: its sync, its slowest vertex and the per-vertex charge.
// A planner that splits an op into partial sums adds them to the split's cost, so that a split
// is taken only where it saves more than its reduce costs.
double reduce_of_shares_cycles(int64_t shares, int64_t elements, const target::TargetSpec& target,
                               int64_t max_parts);

struct BlockGrid {
  Split rows;
  Split cols;
};

// What one vertex owning a block of `rows` × `cols` output elements costs: compute cycles,
// bytes it receives over the exchange, bytes it holds while it runs (received + written), and
// the regions it writes beyond one: each is a descriptor more in the vertex and the exchange
// (the reason for vertex_spread_cycles), charged to the step like a vertex, so a plan of
// one-column blocks over tall rows does not shatter its output into an interval per element.
struct BlockCost {
  double compute_cycles = 0;
  double received_bytes = 0;
  double held_bytes = 0;
  double extra_regions = 0;
};

// Splits a [rows, cols] output into a grid of blocks, one vertex per block, at the least
// estimated cost among the grids whose blocks fit in the share of a tile an op may use; when
// none fits, the grid whose block holds the fewest bytes (the memory plan then reports it).
template <typename CostOfBlock>
BlockGrid plan_blocks(int64_t rows, int64_t cols, const target::TargetSpec& target, int64_t max_tiles,
                      CostOfBlock&& cost_of_block);

// How C[M,N] = A[M,K] · B[K,N] is split: a grid of output blocks, each computed by `k.parts`
// vertices on distinct tiles (one per K range of `k.chunk`), as poplin splits a MatMul over M,
// N and K (inChanSplit). With k.parts > 1 the vertices write partial products to a
// [k.parts, M, N] temporary and a reduce compute set sums them, `reduce` splitting C's M·N
// elements over its vertices.
struct MatMulPlan {
  BlockGrid grid;
  Split k;
  Split reduce;
};

// Cycles of a MatMul vertex's block of `rows` × `cols` outputs over `k` products each: poplin
// runs a MatMul as a 1×1 convolution whose field is A's rows, each worker taking one run of
// them (target::amp_cycles), so a block of few rows runs below the AMP's peak.
double matmul_amp_cycles(const target::TargetSpec& target, int64_t rows, int64_t cols, int64_t k);

// The cheapest plan (slowest tile's compute + received bytes over the exchange + per-vertex
// charges, and with K split the reduce step: its sync, exchange of partials and one vector add
// per partial element) whose vertices' working sets fit available_memory_bytes. When
// none fits, poplin widens its memory bound; ours widens it once, to the tile less its share of
// the MatMul's own operands and result. When none fits that either, the plan whose vertex holds
// the fewest bytes (the memory plan then reports it). `split_k` false keeps K whole (a fused
// Relu needs the whole sum).
MatMulPlan plan_matmul(int64_t M, int64_t N, int64_t K, const target::TargetSpec& target, int64_t max_tiles,
                       bool split_k = true);

// The bytes of a tile one op's working set may use: the rest holds weights, other activations,
// exchange buffers and code. poplibs' default share (target::kDefaultAvailableMemoryProportion),
// whatever the user's, which applies to convolutions and MatMuls only.
double tile_budget_bytes(const target::TargetSpec& target);

// The bytes of a tile one convolution's or MatMul's working set may use (plan_matmul, the
// convolutions' plans): the user's share of it, target.available_memory_proportion.
double available_memory_bytes(const target::TargetSpec& target);

// `items` in `parts` chunks of equal size but the last (fewer parts when they would leave some empty).
Split even_split(int64_t items, int64_t parts);

// The part counts a planner tries along an axis of `items`: powers of two, and min(items,
// max_parts) itself (a large weight then spreads over every tile allowed, not the largest power
// of two of them), so the search is cheap.
std::vector<int64_t> candidate_part_counts(int64_t items, int64_t max_parts);

template <typename CostOfBlock>
BlockGrid plan_blocks(int64_t rows, int64_t cols, const target::TargetSpec& target, int64_t max_tiles,
                      CostOfBlock&& cost_of_block) {
  const auto& m = target.cycles;
  const double budget = tile_budget_bytes(target);
  BlockGrid best{even_split(rows, 1), even_split(cols, 1)}, smallest = best;
  double best_cost = std::numeric_limits<double>::infinity(), smallest_bytes = best_cost;
  for (int64_t pr : candidate_part_counts(rows, max_tiles)) {
    for (int64_t pc : candidate_part_counts(cols, max_tiles / pr)) {
      const BlockGrid grid{even_split(rows, pr), even_split(cols, pc)};
      const BlockCost block = cost_of_block(grid.rows.chunk, grid.cols.chunk);
      const double cost = m.vertex_overhead_cycles + block.compute_cycles +
                          block.received_bytes / m.exchange_bytes_per_cycle +
                          m.vertex_spread_cycles * static_cast<double>(grid.rows.parts * grid.cols.parts) *
                              (1 + block.extra_regions);
      if (block.held_bytes <= budget && cost < best_cost * 0.999) {
        best = grid;
        best_cost = cost;
      }
      if (block.held_bytes < smallest_bytes) {
        smallest = grid;
        smallest_bytes = block.held_bytes;
      }
    }
  }
  return std::isinf(best_cost) ? smallest : best;
}

} // namespace ipu::lowering
