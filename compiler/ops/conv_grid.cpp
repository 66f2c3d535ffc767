#include "compiler/ops/conv_grid.h"

namespace ipu::ops {

lowering::Split even_split(int64_t items, int64_t parts) {
  const int64_t chunk = lowering::ceil_div(items, parts);
  return {lowering::ceil_div(items, chunk), chunk};
}

std::vector<int64_t> grid_part_counts(int64_t items) {
  std::vector<int64_t> out;
  for (int64_t p = 1; p < items; p *= 2)
    out.push_back(p);
  out.push_back(items);
  return out;
}

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
