#include "compiler/lowering/stage_partition.h"

#include <algorithm>
#include <bitset>
#include <limits>
#include <optional>

#include "compiler/lowering/memory_plan.h"

namespace ipu::lowering {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

template <typename T> T at_or_zero(const std::vector<T>& values, size_t i) {
  return i < values.size() ? values[i] : T{};
}

// Costs of the stage holding units [begin, end), from prefix sums and, for memory, the fullest
// tile of every run of units (computed once: O(units² × tiles)).
class Chain {
public:
  explicit Chain(const StagePartitionProblem& p) : m_problem(p) {
    m_cycles.push_back(0);
    m_forward.push_back(0);
    m_accumulators.push_back(0);
    for (const StageUnit& u : p.units) {
      m_cycles.push_back(m_cycles.back() + u.cycles);
      m_forward.push_back(m_forward.back() + u.forward_cycles);
      m_accumulators.push_back(m_accumulators.back() + u.memory.accumulator_tile_bytes);
    }
    measure_fullest_tiles();
  }
  size_t size() const { return m_problem.units.size(); }
  // Both directions of the cut after unit `after`: what a split moves there.
  double cut(size_t after) const {
    return m_problem.forward_cut_cycles.at(after) + m_problem.backward_cut_cycles.at(after);
  }
  // The forward pass of units [begin, end) as a stage, and its sends forward.
  double forward(size_t begin, size_t end) const {
    return m_forward[end] - m_forward[begin] + (end < size() ? m_problem.forward_cut_cycles.at(end - 1) : 0);
  }
  // Its backward pass (after the forward pass again, when it recomputes) and its sends back.
  double backward(size_t begin, size_t end) const {
    const double forward_pass = m_forward[end] - m_forward[begin];
    return m_cycles[end] - m_cycles[begin] - forward_pass + (m_problem.recompute ? forward_pass : 0) +
           (begin > 0 ? m_problem.backward_cut_cycles.at(begin - 1) : 0);
  }
  double cycles(size_t begin, size_t end) const { return forward(begin, end) + backward(begin, end); }
  // The memory bound of units [begin, end) as stage `stage` (stage_partition.h).
  uint64_t bytes(size_t begin, size_t end, size_t stage) const {
    const StagePartitionProblem& p = m_problem;
    const size_t run = begin * (size() + 1) + end;
    uint64_t out =
        m_fullest_tile[run] + static_cast<uint64_t>(at_or_zero(p.stash_depth, stage)) * m_stash[run];
    if (p.accumulates) out += m_accumulators[end] - m_accumulators[begin];
    if (begin > 0) {
      out += static_cast<uint64_t>(at_or_zero(p.forward_depth, stage - 1)) *
             at_or_zero(p.forward_cut_tile_bytes, begin - 1);
    }
    if (end < size()) {
      out += static_cast<uint64_t>(at_or_zero(p.backward_depth, stage)) *
             at_or_zero(p.backward_cut_tile_bytes, end - 1);
    }
    return out;
  }
  bool refused(size_t begin, size_t end) const {
    return std::any_of(m_problem.refused.begin(), m_problem.refused.end(), [&](const std::pair<int, int>& r) {
      return begin <= static_cast<size_t>(r.first) && static_cast<size_t>(r.second) <= end;
    });
  }
  bool fits(size_t begin, size_t end, size_t stage) const {
    return !refused(begin, end) && bytes(begin, end, stage) <= m_problem.bytes_per_tile;
  }

private:
  // m_fullest_tile[begin * (n + 1) + end]: the fullest tile of units [begin, end) together, by
  // the per-tile sums and peaks of the header's bound; m_stash[...]: one micro-batch's stash
  // slot of theirs on any tile. Activations a unit receives from an earlier unit count only when
  // that unit is in an earlier stage: within the stage the producer's own tensor serves.
  void measure_fullest_tiles() {
    const size_t n = size();
    size_t tiles = 0;
    uint32_t codelet_words = 1;
    for (const StageUnit& u : m_problem.units) {
      tiles = std::max(tiles, u.memory.resident.size());
      for (const auto& ids : u.memory.codelets) {
        for (uint32_t id : ids)
          codelet_words = std::max(codelet_words, id / 64 + 1);
      }
    }
    m_fullest_tile.assign(n * (n + 1), 0);
    m_stash.assign(n * (n + 1), 0);
    const bool accumulates = m_problem.accumulates;
    for (size_t begin = 0; begin < n; ++begin) {
      std::vector<uint64_t> lasting(tiles, 0), peak(tiles, 0), code(tiles * codelet_words, 0);
      uint64_t stash = 0;
      for (size_t end = begin + 1; end <= n; ++end) {
        const UnitMemory& m = m_problem.units[end - 1].memory;
        stash += m_problem.recompute ? m.input_stash_tile_bytes : m.stash_tile_bytes;
        for (const UnitMemory::Arrival& a : m.arrivals) {
          if (a.source_unit >= begin) continue;
          stash += a.stash_tile_bytes;
          for (const auto& [tile, bytes] : a.tile_bytes) {
            if (tile < tiles) lasting[tile] += bytes;
          }
        }
        m_stash[begin * (n + 1) + end] = stash;
        uint64_t fullest = 0;
        for (size_t t = 0; t < tiles; ++t) {
          if (t < m.resident.size()) {
            const uint64_t held = m.held_for_update[t];
            lasting[t] += m.resident[t] + m.carried[t] + (accumulates ? 0 : held);
            peak[t] = std::max(peak[t], m.transient[t] + (accumulates ? held : 0));
            for (uint32_t id : m.codelets[t])
              code[t * codelet_words + id / 64] |= uint64_t{1} << (id % 64);
          }
          uint64_t codelets = 0;
          for (uint32_t w = 0; w < codelet_words; ++w)
            codelets += std::bitset<64>(code[t * codelet_words + w]).count();
          fullest = std::max(fullest, lasting[t] + peak[t] + codelets * m_problem.code_bytes_per_codelet);
        }
        m_fullest_tile[begin * (n + 1) + end] = fullest;
      }
    }
  }

  const StagePartitionProblem& m_problem;
  std::vector<double> m_cycles, m_forward;
  std::vector<uint64_t> m_stash, m_accumulators, m_fullest_tile;
};

// best[k][i]: the best value of splitting the first i units into k stages, and where its last
// stage begins. `combine(previous, stage, begin, end)` gives the value of adding stage number
// `stage` = [begin, end) to a split of the first `begin` units worth `previous`, or infinity if
// that stage is not allowed.
template <typename Combine>
std::vector<int> best_split(const Chain& chain, int stages, Combine combine, double& value) {
  const size_t n = chain.size(), k_max = static_cast<size_t>(stages);
  std::vector<std::vector<double>> best(k_max + 1, std::vector<double>(n + 1, kInfinity));
  std::vector<std::vector<size_t>> begin_of_last(k_max + 1, std::vector<size_t>(n + 1, 0));
  best[0][0] = 0;
  for (size_t k = 1; k <= k_max; ++k) {
    for (size_t i = k; i <= n; ++i) {
      for (size_t j = k - 1; j < i; ++j) {
        if (best[k - 1][j] == kInfinity) continue;
        const double v = combine(best[k - 1][j], k - 1, j, i);
        if (v < best[k][i]) {
          best[k][i] = v;
          begin_of_last[k][i] = j;
        }
      }
    }
  }
  value = best[k_max][n];
  std::vector<int> first(k_max, 0);
  if (value == kInfinity) return first;
  for (size_t k = k_max, i = n; k > 0; --k) {
    i = begin_of_last[k][i];
    first[k - 1] = static_cast<int>(i);
  }
  return first;
}

// Forward-pass bounds the grouped schedule's search tries: the distinct forward passes of every
// run of units, at most this many of them evenly spaced (each bound is a pass of best_split).
constexpr size_t kMaxForwardBounds = 256;

struct PhaseBounds {
  double forward = 0;  // the slowest stage's forward pass
  double backward = 0; // the slowest stage's backward pass
};

// The split whose slowest forward pass plus slowest backward pass is least, as its two bounds:
// for each bound on the forward pass, the least slowest backward pass of the splits within it.
// Called once a split within memory is known to exist.
PhaseBounds fastest_phases(const Chain& chain, int stages) {
  std::vector<double> bounds;
  for (size_t begin = 0; begin < chain.size(); ++begin) {
    for (size_t end = begin + 1; end <= chain.size(); ++end)
      bounds.push_back(chain.forward(begin, end));
  }
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  if (bounds.size() > kMaxForwardBounds) {
    std::vector<double> spaced;
    for (size_t i = 0; i < kMaxForwardBounds; ++i)
      spaced.push_back(bounds[(i + 1) * bounds.size() / kMaxForwardBounds - 1]); // keeps the largest
    bounds = std::move(spaced);
  }
  PhaseBounds best{kInfinity, kInfinity};
  for (double forward : bounds) {
    double backward = 0;
    best_split(
        chain, stages,
        [&](double previous, size_t stage, size_t begin, size_t end) {
          if (!chain.fits(begin, end, stage) || chain.forward(begin, end) > forward) return kInfinity;
          return std::max(previous, chain.backward(begin, end));
        },
        backward);
    if (forward + backward < best.forward + best.backward) best = {forward, backward};
  }
  return best;
}

std::string describe_stage(const StagePartitionProblem& p, size_t stage, size_t begin, size_t end) {
  const std::string& first = p.units[begin].name;
  if (end - begin == 1) return p.unit_kind + " '" + first + "' alone";
  return "stage " + std::to_string(stage) + " (" + p.unit_kind + "s '" + first + "' to '" +
         p.units[end - 1].name + "')";
}

} // namespace

StatusOr<StagePartition> partition_stages(const StagePartitionProblem& p) {
  const size_t n = p.units.size();
  if (p.stages < 1 || static_cast<size_t>(p.stages) > n) {
    return bad_option("--pipeline-stages " + std::to_string(p.stages) + " needs at least as many " +
                      p.unit_kind + "s, the model has " + std::to_string(n));
  }
  const Chain chain(p);
  auto end_of = [&](const std::vector<int>& first, size_t s) {
    return s + 1 < first.size() ? static_cast<size_t>(first[s + 1]) : n;
  };

  // The smallest bottleneck, then the least data moved among splits that reach it.
  double bottleneck = 0;
  best_split(
      chain, p.stages,
      [&](double previous, size_t stage, size_t begin, size_t end) {
        return chain.fits(begin, end, stage) ? std::max(previous, chain.cycles(begin, end)) : kInfinity;
      },
      bottleneck);
  if (bottleneck == kInfinity) {
    // Name the fullest stage of the split whose fullest stage is emptiest.
    double fullest = 0;
    const std::vector<int> first = best_split(
        chain, p.stages,
        [&](double previous, size_t stage, size_t begin, size_t end) {
          if (chain.refused(begin, end)) return kInfinity;
          return std::max(previous, static_cast<double>(chain.bytes(begin, end, stage)));
        },
        fullest);
    if (fullest == kInfinity) {
      return resource_exhausted("no split into " + std::to_string(p.stages) +
                                " pipeline stages is left that the memory plan did not refuse; give more "
                                "stages or a smaller --batch-size");
    }
    auto stage_bytes = [&](size_t s) {
      return chain.bytes(static_cast<size_t>(first[s]), end_of(first, s), s);
    };
    size_t worst = 0;
    for (size_t s = 0; s < first.size(); ++s) {
      if (stage_bytes(s) > stage_bytes(worst)) worst = s;
    }
    const size_t begin = static_cast<size_t>(first[worst]), end = end_of(first, worst);
    return resource_exhausted(
        "no split into " + std::to_string(p.stages) + " pipeline stages fits one IPU each: in the best, " +
        describe_stage(p, worst, begin, end) + " needs about " + with_commas(stage_bytes(worst)) +
        " bytes on its fullest tile, more than " + with_commas(p.bytes_per_tile) + " (its " + p.unit_kind +
        "s' resident data and activations kept for the backward pass added up per tile, the largest of " +
        "their short-lived peaks, and its stash slots); give more stages or a smaller --batch-size");
  }
  // Grouped: the slowest forward pass plus the slowest backward pass, the least such sum.
  std::optional<PhaseBounds> phases;
  if (p.phased) phases = fastest_phases(chain, p.stages);
  double moved = 0;
  StagePartition out;
  out.first_unit = best_split(
      chain, p.stages,
      [&](double previous, size_t stage, size_t begin, size_t end) {
        if (!chain.fits(begin, end, stage)) return kInfinity;
        if (phases
                ? chain.forward(begin, end) > phases->forward || chain.backward(begin, end) > phases->backward
                : chain.cycles(begin, end) > bottleneck) {
          return kInfinity;
        }
        return previous + (begin > 0 ? chain.cut(begin - 1) : 0);
      },
      moved);
  for (size_t s = 0; s < out.first_unit.size(); ++s) {
    const size_t begin = static_cast<size_t>(out.first_unit[s]), end = end_of(out.first_unit, s);
    out.stage_cycles.push_back(chain.cycles(begin, end));
    out.stage_tile_bytes.push_back(chain.bytes(begin, end, s));
  }
  return out;
}

double stage_imbalance(const std::vector<double>& stage_cycles) {
  double total = 0, slowest = 0;
  for (double c : stage_cycles) {
    total += c;
    slowest = std::max(slowest, c);
  }
  return total > 0 ? slowest * static_cast<double>(stage_cycles.size()) / total : 1.0;
}

} // namespace ipu::lowering
