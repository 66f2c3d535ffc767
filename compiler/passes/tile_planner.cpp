#include "compiler/passes/tile_planner.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace ipu::passes {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

Split make_split(int64_t items, int64_t parts) {
  int64_t chunk = ceil_div(items, parts);
  return {ceil_div(items, chunk), chunk};
}

// Candidate part counts: powers of two and the item count itself, so the search is cheap.
std::vector<int64_t> candidates(int64_t items, int64_t max_parts) {
  std::vector<int64_t> out;
  for (int64_t p = 1; p <= std::min(items, max_parts); p *= 2) out.push_back(p);
  if (items <= max_parts) out.push_back(items);
  return out;
}

// Only a fraction of a tile is offered to one op's working set: the rest holds weights,
// other activations, exchange buffers and code.
constexpr double kTileBudgetFraction = 0.5;

}  // namespace

Split plan_split(int64_t items, double cycles_per_item, double exchange_bytes_per_item, double bytes_per_item,
                 const target::TargetSpec& target, int64_t max_parts) {
  if (items <= 0) return {1, 0};
  const auto& m = target.cycles;
  const double budget = kTileBudgetFraction * static_cast<double>(target.bytes_per_tile);
  Split best = make_split(items, 1);
  double best_cost = std::numeric_limits<double>::infinity();
  for (int64_t parts : candidates(items, std::max<int64_t>(1, max_parts))) {
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

MatMulGrid plan_matmul(int64_t M, int64_t N, int64_t K, const target::TargetSpec& target, int64_t max_tiles) {
  const auto& m = target.cycles;
  const double budget = kTileBudgetFraction * static_cast<double>(target.bytes_per_tile);
  MatMulGrid best{make_split(M, 1), make_split(N, 1)};
  double best_cost = std::numeric_limits<double>::infinity();
  // When nothing fits, the smallest working set is the best attempt; the memory plan then
  // reports the overflow.
  MatMulGrid smallest = best;
  double smallest_bytes = std::numeric_limits<double>::infinity();
  for (int64_t pm : candidates(M, max_tiles)) {
    for (int64_t pn : candidates(N, max_tiles / pm)) {
      Split rows = make_split(M, pm), cols = make_split(N, pn);
      double r = static_cast<double>(rows.chunk), c = static_cast<double>(cols.chunk), k = static_cast<double>(K);
      // A block of rows of A and a block of columns of B arrive over the exchange; the output
      // block is produced in place.
      double in_bytes = 4.0 * (r * k + k * c);
      double cost = m.vertex_overhead_cycles + r * c * k / m.macs_per_cycle + in_bytes / m.exchange_bytes_per_cycle +
                    m.vertex_spread_cycles * static_cast<double>(rows.parts * cols.parts);
      const double bytes = in_bytes + 4.0 * r * c;
      if (bytes <= budget && cost < best_cost * 0.999) {
        best = {rows, cols};
        best_cost = cost;
      }
      if (bytes < smallest_bytes) {
        smallest = {rows, cols};
        smallest_bytes = bytes;
      }
    }
  }
  return std::isinf(best_cost) ? smallest : best;
}

}  // namespace ipu::passes
