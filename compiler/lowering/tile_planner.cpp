#include "compiler/lowering/tile_planner.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace ipu::lowering {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Only a fraction of a tile is offered to one op's working set: the rest holds weights,
// other activations, exchange buffers and code. poplibs' planners offer 0.6
// (availableMemoryProportion, the default of poplin's ConvOptions and MatMulOptions and of
// popops' SliceOptions).
constexpr double kTileBudgetFraction = 0.6;

}  // namespace

namespace detail {

Split make_split(int64_t items, int64_t parts) {
  int64_t chunk = ceil_div(items, parts);
  return {ceil_div(items, chunk), chunk};
}

// Candidate part counts: powers of two and the item count itself, so the search is cheap.
std::vector<int64_t> candidate_parts(int64_t items, int64_t max_parts) {
  std::vector<int64_t> out;
  for (int64_t p = 1; p <= std::min(items, max_parts); p *= 2) out.push_back(p);
  if (items <= max_parts) out.push_back(items);
  return out;
}

}  // namespace detail

double tile_budget_bytes(const target::TargetSpec& target) {
  return kTileBudgetFraction * static_cast<double>(target.bytes_per_tile);
}

using detail::make_split;

Split plan_split(int64_t items, double cycles_per_item, double exchange_bytes_per_item, double bytes_per_item,
                 const target::TargetSpec& target, int64_t max_parts) {
  if (items <= 0) return {1, 0};
  const auto& m = target.cycles;
  const double budget = tile_budget_bytes(target);
  Split best = make_split(items, 1);
  double best_cost = std::numeric_limits<double>::infinity();
  for (int64_t parts : detail::candidate_parts(items, std::max<int64_t>(1, max_parts))) {
    Split s = make_split(items, parts);
    double chunk = static_cast<double>(s.chunk);
    double cost = m.vertex_overhead_cycles + chunk * cycles_per_item +
                  chunk * exchange_bytes_per_item / m.exchange_bytes_per_cycle +
                  m.vertex_spread_cycles * static_cast<double>(s.parts);
    bool fits = chunk * bytes_per_item <= budget;
    // Prefer any split that fits; among those the cheapest; ties go to fewer tiles.
    if (fits && cost < best_cost * 0.999) {
      best = s;
      best_cost = cost;
    }
  }
  if (std::isinf(best_cost)) best = make_split(items, std::min(items, std::max<int64_t>(1, max_parts)));
  return best;
}

BlockGrid plan_matmul(int64_t M, int64_t N, int64_t K, const target::TargetSpec& target, int64_t max_tiles) {
  const double k = static_cast<double>(K);
  const double macs_per_cycle = target.cycles.macs_per_cycle;
  // A block of rows of A and a block of columns of B arrive over the exchange; the output block
  // is produced in place.
  return plan_blocks(M, N, target, max_tiles, [&](int64_t rows, int64_t cols) {
    const double r = static_cast<double>(rows), c = static_cast<double>(cols);
    const double in_bytes = 4.0 * (r * k + k * c);
    return BlockCost{r * c * k / macs_per_cycle, in_bytes, in_bytes + 4.0 * r * c};
  });
}

}  // namespace ipu::lowering
