// The tile grid a convolution (and ChannelSum) splits into, as poplin's planner splits a
// convolution's batch, channels and field: every combination of part counts along the axes, each
// charged as one of its vertices costs, the cheapest that fits a tile chosen.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "compiler/lowering/tile_planner.h"
#include "compiler/target/target.h"

namespace ipu::ops {

// What one vertex of a grid split costs: cycles of arithmetic, bytes received, bytes held; and
// the cycles of the compute set that adds its partial sums, if it splits into shares (reduce_cycles).
struct GridCost {
  double compute_cycles, in_bytes, bytes;
  double reduce_cycles = 0;
};

// The estimate plan_grid ranks grids by: a vertex's overhead, MACs, bytes received and partial
// sums' reduce, and a charge for each of the grid's `vertices`.
double grid_cycles(const target::TargetSpec& t, const GridCost& cost, int64_t vertices);

// The cycles of the '<level>/reduce' set that adds `shares` partial sums of `elements` values,
// split as emit_spread_sum_of_shares splits it; 0 for one share, which needs none.
double reduce_cycles(const target::TargetSpec& t, double shares, double elements);

// Splits work along D axes (`items` units each) into a grid: the one with the lowest estimate
// (overhead, MACs, bytes received, a charge per vertex) whose working set fits the share of a tile
// a convolution may use (lowering::available_memory_bytes); the
// smallest working set if none does. `cost(chunks)` describes a vertex of those chunks.
template <size_t D, typename Cost>
std::array<lowering::Split, D> plan_grid(const std::array<int64_t, D>& items, const target::TargetSpec& t,
                                         Cost&& cost) {
  std::array<lowering::Split, D> grid, best, smallest;
  for (size_t a = 0; a < D; ++a)
    grid[a] = lowering::even_split(items[a], 1);
  best = smallest = grid;
  double best_cost = std::numeric_limits<double>::infinity(), smallest_bytes = best_cost;
  // Every combination of candidate counts, axis 0 outermost.
  auto visit = [&](auto&& self, size_t axis, int64_t vertices) -> void {
    if (axis == D) {
      std::array<double, D> chunks;
      for (size_t a = 0; a < D; ++a)
        chunks[a] = static_cast<double>(grid[a].chunk);
      const GridCost g = cost(chunks);
      const double cycles = grid_cycles(t, g, vertices);
      if (g.bytes <= lowering::available_memory_bytes(t) && cycles < best_cost * 0.999) {
        best = grid;
        best_cost = cycles;
      }
      if (g.bytes < smallest_bytes) {
        smallest = grid;
        smallest_bytes = g.bytes;
      }
      return;
    }
    for (int64_t p : lowering::candidate_part_counts(items[axis], items[axis])) {
      grid[axis] = lowering::even_split(items[axis], p);
      if (vertices * grid[axis].parts > static_cast<int64_t>(t.tiles_per_ipu)) continue;
      self(self, axis + 1, vertices * grid[axis].parts);
    }
  };
  visit(visit, 0, 1);
  return std::isinf(best_cost) ? smallest : best;
}

} // namespace ipu::ops
