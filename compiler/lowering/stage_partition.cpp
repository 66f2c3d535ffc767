#include "compiler/lowering/stage_partition.h"

#include <algorithm>
#include <limits>

#include "compiler/lowering/memory_plan.h"

namespace ipu::lowering {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// Costs of the stage holding units [begin, end), from prefix sums.
class Chain {
public:
  explicit Chain(const StagePartitionProblem& p) : m_problem(p) {
    m_cycles.push_back(0);
    m_bytes.push_back(0);
    for (const StageUnit& u : p.units) {
      m_cycles.push_back(m_cycles.back() + u.cycles);
      m_bytes.push_back(m_bytes.back() + u.tile_bytes);
    }
  }
  size_t size() const { return m_problem.units.size(); }
  // Both directions of the cut after unit `after`: what a split moves there.
  double cut(size_t after) const {
    return m_problem.forward_cut_cycles.at(after) + m_problem.backward_cut_cycles.at(after);
  }
  double cycles(size_t begin, size_t end) const {
    return m_cycles[end] - m_cycles[begin] + (begin > 0 ? m_problem.backward_cut_cycles.at(begin - 1) : 0) +
           (end < size() ? m_problem.forward_cut_cycles.at(end - 1) : 0);
  }
  uint64_t bytes(size_t begin, size_t end) const { return m_bytes[end] - m_bytes[begin]; }
  bool fits(size_t begin, size_t end) const { return bytes(begin, end) <= m_problem.bytes_per_tile; }

private:
  const StagePartitionProblem& m_problem;
  std::vector<double> m_cycles;
  std::vector<uint64_t> m_bytes;
};

// best[k][i]: the best value of splitting the first i units into k stages, and where its last
// stage begins. `combine(previous, begin, end)` gives the value of adding stage [begin, end) to
// a split of the first `begin` units worth `previous`, or infinity if that stage is not allowed.
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
        const double v = combine(best[k - 1][j], j, i);
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
      [&](double previous, size_t begin, size_t end) {
        return chain.fits(begin, end) ? std::max(previous, chain.cycles(begin, end)) : kInfinity;
      },
      bottleneck);
  if (bottleneck == kInfinity) {
    // Name the fullest stage of the split whose fullest stage is emptiest.
    double fullest = 0;
    const std::vector<int> first = best_split(
        chain, p.stages,
        [&](double previous, size_t begin, size_t end) {
          return std::max(previous, static_cast<double>(chain.bytes(begin, end)));
        },
        fullest);
    size_t worst = 0;
    for (size_t s = 0; s < first.size(); ++s) {
      if (chain.bytes(static_cast<size_t>(first[s]), end_of(first, s)) >
          chain.bytes(static_cast<size_t>(first[worst]), end_of(first, worst)))
        worst = s;
    }
    const size_t begin = static_cast<size_t>(first[worst]), end = end_of(first, worst);
    return resource_exhausted(
        "no split into " + std::to_string(p.stages) + " pipeline stages fits one IPU each: in the best, " +
        describe_stage(p, worst, begin, end) + " needs about " + with_commas(chain.bytes(begin, end)) +
        " bytes on its fullest tile, more than " + with_commas(p.bytes_per_tile) + " (the sum of its " +
        p.unit_kind + "s' fullest tiles, each lowered alone); give more stages or a smaller --batch-size");
  }
  double moved = 0;
  StagePartition out;
  out.first_unit = best_split(
      chain, p.stages,
      [&](double previous, size_t begin, size_t end) {
        if (!chain.fits(begin, end) || chain.cycles(begin, end) > bottleneck) return kInfinity;
        return previous + (begin > 0 ? chain.cut(begin - 1) : 0);
      },
      moved);
  for (size_t s = 0; s < out.first_unit.size(); ++s) {
    const size_t begin = static_cast<size_t>(out.first_unit[s]), end = end_of(out.first_unit, s);
    out.stage_cycles.push_back(chain.cycles(begin, end));
    out.stage_tile_bytes.push_back(chain.bytes(begin, end));
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
