#include "compiler/lowering/tile_planner.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace ipu::lowering {

Split even_split(int64_t items, int64_t parts) {
  int64_t chunk = ceil_div(items, parts);
  return {ceil_div(items, chunk), chunk};
}

std::vector<int64_t> candidate_part_counts(int64_t items, int64_t max_parts) {
  std::vector<int64_t> out;
  for (int64_t p = 1; p <= std::min(items, max_parts); p *= 2)
    out.push_back(p);
  const int64_t most = std::min(items, max_parts);
  if (most > out.back()) out.push_back(most);
  return out;
}

double tile_budget_bytes(const target::TargetSpec& target) {
  return target::kDefaultAvailableMemoryProportion * static_cast<double>(target.bytes_per_tile);
}

double available_memory_bytes(const target::TargetSpec& target) {
  return target.available_memory_proportion * static_cast<double>(target.bytes_per_tile);
}

double split_cycles(const Split& split, double cycles_per_item, double exchange_bytes_per_item,
                    const target::TargetSpec& target) {
  const auto& m = target.cycles;
  const double chunk = static_cast<double>(split.chunk);
  return m.vertex_overhead_cycles + chunk * cycles_per_item +
         chunk * exchange_bytes_per_item / m.exchange_bytes_per_cycle +
         m.vertex_spread_cycles * static_cast<double>(split.parts);
}

Split plan_split(int64_t items, double cycles_per_item, double exchange_bytes_per_item, double bytes_per_item,
                 const target::TargetSpec& target, int64_t max_parts) {
  if (items <= 0) return {1, 0};
  const double budget = tile_budget_bytes(target);
  Split best = even_split(items, 1);
  double best_cost = std::numeric_limits<double>::infinity();
  for (int64_t parts : candidate_part_counts(items, std::max<int64_t>(1, max_parts))) {
    const Split s = even_split(items, parts);
    const double cost = split_cycles(s, cycles_per_item, exchange_bytes_per_item, target);
    const bool fits = static_cast<double>(s.chunk) * bytes_per_item <= budget;
    // Prefer any split that fits; among those the cheapest; ties go to fewer tiles.
    if (fits && cost < best_cost * 0.999) {
      best = s;
      best_cost = cost;
    }
  }
  if (std::isinf(best_cost)) best = even_split(items, std::min(items, std::max<int64_t>(1, max_parts)));
  return best;
}

Split plan_reduce_of_shares(int64_t shares, int64_t elements, const target::TargetSpec& target,
                            int64_t max_parts) {
  const auto s = static_cast<double>(shares);
  return plan_split(elements, s / target.cycles.partial_sum_flops_per_cycle, 4.0 * s, 4.0 * (s + 1), target,
                    max_parts);
}

double reduce_of_shares_cycles(int64_t shares, int64_t elements, const target::TargetSpec& target,
                               int64_t max_parts) {
  const auto s = static_cast<double>(shares);
  return target::sync_cycles(target, 1) +
         split_cycles(plan_reduce_of_shares(shares, elements, target, max_parts),
                      s / target.cycles.partial_sum_flops_per_cycle, 4.0 * s, target);
}

double matmul_amp_cycles(const target::TargetSpec& target, int64_t rows, int64_t cols, int64_t k) {
  const auto outputs = static_cast<double>(rows);
  return target::amp_cycles(target, outputs * static_cast<double>(cols * k), outputs,
                            std::min(outputs, static_cast<double>(target.worker_threads_per_tile)));
}

MatMulPlan plan_matmul(int64_t M, int64_t N, int64_t K, const target::TargetSpec& target, int64_t max_tiles,
                       bool split_k) {
  const auto& m = target.cycles;
  const double tile_bytes = static_cast<double>(target.bytes_per_tile);
  const double operands_share =
      4.0 * static_cast<double>(M * K + K * N + M * N) / static_cast<double>(target.tiles_per_ipu);
  struct Candidate {
    MatMulPlan plan;
    double cost = 0, held = 0;
  };
  std::vector<Candidate> candidates;
  // Every K share count up to 64 (a reduce over more partials costs more than it saves), not
  // only powers of two: the best split of a square product is near the cube root of the tiles.
  int64_t last_parts = 0;
  for (int64_t s = 1; s <= (split_k ? std::min<int64_t>({K, max_tiles, 64}) : 1); ++s) {
    const Split k = even_split(K, s);
    if (k.parts == last_parts) continue;
    last_parts = k.parts;
    const double kc = static_cast<double>(k.chunk), shares = static_cast<double>(k.parts);
    // Each reduce vertex receives the partials of its share of C and adds them.
    const Split reduce =
        k.parts > 1 ? plan_reduce_of_shares(k.parts, M * N, target, max_tiles) : even_split(M * N, 1);
    const double reduce_cycles =
        k.parts > 1 ? reduce_of_shares_cycles(k.parts, M * N, target, max_tiles) : 0.0;
    for (int64_t pr : candidate_part_counts(M, max_tiles / k.parts)) {
      for (int64_t pc : candidate_part_counts(N, max_tiles / (k.parts * pr))) {
        Candidate c;
        c.plan.grid = {even_split(M, pr), even_split(N, pc)};
        c.plan.k = k;
        const double r = static_cast<double>(c.plan.grid.rows.chunk),
                     cols = static_cast<double>(c.plan.grid.cols.chunk);
        const double vertices =
            static_cast<double>(c.plan.grid.rows.parts * c.plan.grid.cols.parts * k.parts);
        // A block of rows of A and a block of columns of B (their K range) arrive over the
        // exchange; the output (or partial) block is produced in place.
        const double in_bytes = 4.0 * (r * kc + kc * cols);
        c.held = in_bytes + 4.0 * r * cols;
        c.cost = m.vertex_overhead_cycles +
                 matmul_amp_cycles(target, c.plan.grid.rows.chunk, c.plan.grid.cols.chunk, k.chunk) +
                 in_bytes / m.exchange_bytes_per_cycle + m.vertex_spread_cycles * vertices;
        c.plan.reduce = reduce;
        if (k.parts > 1) {
          // A reduce vertex's tile still holds the partial block it computed.
          const double chunk = static_cast<double>(c.plan.reduce.chunk);
          c.cost += reduce_cycles;
          c.held = std::max(c.held, 4.0 * r * cols + 4.0 * chunk * (shares + 1));
        }
        candidates.push_back(c);
      }
    }
  }
  // Ties go to the first candidate: fewer K shares, then fewer rows and columns of blocks.
  for (double budget : {available_memory_bytes(target), tile_bytes - operands_share}) {
    const Candidate* best = nullptr;
    for (const Candidate& c : candidates) {
      if (c.held <= budget && (!best || c.cost < best->cost * 0.999)) best = &c;
    }
    if (best) return best->plan;
  }
  const Candidate* smallest = &candidates.front();
  for (const Candidate& c : candidates) {
    if (c.held < smallest->held) smallest = &c;
  }
  return smallest->plan;
}

} // namespace ipu::lowering
