#include "compiler/ops/conv_grid.h"

namespace ipu::ops {

double grid_cycles(const target::TargetSpec& t, const GridCost& cost, int64_t vertices) {
  const auto& m = t.cycles;
  return m.vertex_overhead_cycles + cost.compute_cycles + cost.in_bytes / m.exchange_bytes_per_cycle +
         m.vertex_spread_cycles * static_cast<double>(vertices) + cost.reduce_cycles;
}

double reduce_cycles(const target::TargetSpec& t, double shares, double elements) {
  return shares > 1 ? lowering::reduce_of_shares_cycles(static_cast<int64_t>(shares),
                                                        static_cast<int64_t>(elements), t, t.tiles_per_ipu)
                    : 0.0;
}

} // namespace ipu::ops
