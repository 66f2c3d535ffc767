#include "compiler/ops/channel_reduce_plan.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace ipu::ir {
namespace {

// Candidate part counts: powers of two below n, and n.
std::vector<int64_t> candidate_parts(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t p = 1; p < n; p *= 2)
    out.push_back(p);
  out.push_back(n);
  return out;
}

lowering::Split even(int64_t items, int64_t parts) {
  const int64_t chunk = (items + parts - 1) / parts;
  return {(items + chunk - 1) / chunk, chunk};
}

} // namespace

ChannelReduceWork channel_reduce_work(const std::vector<int64_t>& shape) {
  ChannelReduceWork w;
  w.N = shape[0];
  w.C = shape[1];
  for (size_t i = 2; i < shape.size(); ++i)
    w.S *= shape[i];
  return w;
}

ChannelReducePlan plan_channel_reduce(const ChannelReduceWork& w, const target::TargetSpec& target) {
  const auto& m = target.cycles;
  const auto tiles = static_cast<int64_t>(target.tiles_per_ipu);
  const double budget = lowering::tile_budget_bytes(target);
  ChannelReducePlan best, smallest;
  double best_cycles = std::numeric_limits<double>::infinity(), smallest_bytes = best_cycles;
  for (int64_t cp : candidate_parts(w.C)) {
    for (int64_t np : candidate_parts(w.N)) {
      for (int64_t sp : candidate_parts(w.S)) {
        const ChannelReducePlan plan{even(w.C, cp), even(w.N, np), even(w.S, sp)};
        const int64_t vertices = plan.channels.parts * plan.parts();
        if (vertices > tiles) continue;
        const double elements =
            static_cast<double>(plan.channels.chunk * plan.samples.chunk * plan.positions.chunk);
        const double received = w.element_bytes * static_cast<double>(w.inputs) * elements;
        const double held = received + 4.0 * static_cast<double>(w.values_per_part * plan.channels.chunk);
        // The combine: each channel's parts, spread over as many tiles as there are channels, in a
        // compute set of its own (its sync and its vertices' launch).
        const double combined =
            plan.parts() > 1
                ? static_cast<double>(plan.parts() * w.values_per_part) *
                      std::ceil(static_cast<double>(w.C) / static_cast<double>(std::min(w.C, tiles)))
                : 0.0;
        const double combine_set =
            plan.parts() > 1 ? target::sync_cycles(target, 1) + m.vertex_overhead_cycles : 0.0;
        const double cycles =
            m.vertex_overhead_cycles + elements * w.ops_per_element / m.vector_flops_per_cycle +
            received / m.exchange_bytes_per_cycle + m.vertex_spread_cycles * static_cast<double>(vertices) +
            combined / m.partial_sum_flops_per_cycle + 4.0 * combined / m.exchange_bytes_per_cycle +
            combine_set;
        if (held <= budget && cycles < best_cycles * 0.999) {
          best = plan;
          best_cycles = cycles;
        }
        if (held < smallest_bytes) {
          smallest = plan;
          smallest_bytes = held;
        }
      }
    }
  }
  return std::isinf(best_cycles) ? smallest : best;
}

std::vector<lowering::Region> channel_block_regions(uint32_t tensor, const ChannelReduceWork& w, int64_t cb,
                                                    int64_t ce, int64_t nb, int64_t ne, int64_t sb,
                                                    int64_t se) {
  if (sb == 0 && se == w.S) return {lowering::block_region(tensor, nb, ne, cb * w.S, ce * w.S, w.C * w.S)};
  std::vector<lowering::Region> regions;
  for (int64_t c = cb; c < ce; ++c)
    regions.push_back(lowering::block_region(tensor, nb, ne, c * w.S + sb, c * w.S + se, w.C * w.S));
  return regions;
}

std::vector<int64_t> channel_block_params(const ChannelReduceWork& w, const ChannelBlock& b, int64_t parts) {
  using P = format::params::BatchStatistics;
  static_assert(format::same_layout<P, format::params::BatchNormGradStats>);
  return format::make_params<P>({{P::kN, w.N},
                                 {P::kC, w.C},
                                 {P::kS, w.S},
                                 {P::kCBegin, b.cb},
                                 {P::kCEnd, b.ce},
                                 {P::kNBegin, b.nb},
                                 {P::kNEnd, b.ne},
                                 {P::kSBegin, b.sb},
                                 {P::kSEnd, b.se},
                                 {P::kParts, parts},
                                 {P::kPart, b.part}});
}

} // namespace ipu::ir
