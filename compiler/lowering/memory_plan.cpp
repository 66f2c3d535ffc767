#include "compiler/lowering/memory_plan.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "runtime/format/verifier.h"

namespace ipu::lowering {

bool lives_whole_program(format::TensorRole role) {
  return role != format::ACTIVATION && role != format::GRADIENT;
}

bool stashed_per_micro_batch(format::TensorRole role) {
  return role == format::INPUT || role == format::LABEL || role == format::ACTIVATION;
}

std::map<uint32_t, std::pair<size_t, size_t>>
temporary_live_ranges(const std::vector<uint32_t>& order, const std::vector<ComputeSetRecord>& records) {
  std::map<uint32_t, std::pair<size_t, size_t>> live;
  for (size_t pos = 0; pos < order.size(); ++pos) {
    for (uint32_t tensor : records[order[pos]].tensors) {
      auto [it, inserted] = live.try_emplace(tensor, pos, pos);
      if (!inserted) it->second.second = pos;
    }
  }
  return live;
}

std::string with_commas(uint64_t n) {
  std::string s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3)
    s.insert(static_cast<size_t>(i), ",");
  return s;
}

namespace {

// What the tiles hold: all program long, each tile's resident tensors, vertex descriptors and
// code; per position of the order, each tile's bytes of live temporaries and of receive buffers.
struct TileContents {
  std::vector<uint64_t> resident, vertices;
  // One copy of each codelet's code per tile.
  std::vector<std::set<uint32_t>> codelets;
  // Live range of each temporary, in positions of the order.
  std::map<uint32_t, std::pair<size_t, size_t>> live;
  std::vector<std::map<uint32_t, uint64_t>> temporaries, received;

  uint64_t fixed_on(uint32_t t, const target::TargetSpec& target) const {
    return resident[t] + vertices[t] * target.cycles.vertex_state_bytes +
           codelets[t].size() * target.cycles.codelet_code_bytes;
  }
};

TileContents tile_contents(const format::Executable& exe, const std::vector<uint32_t>& order,
                           const std::vector<lowering::ComputeSetRecord>& records,
                           const target::TargetSpec& target) {
  const uint32_t tiles = target.total_tiles();
  TileContents c;
  c.resident.assign(tiles, 0);
  c.vertices.assign(tiles, 0);

  // Vertex descriptors and one copy of each codelet's code per tile.
  c.codelets.resize(tiles);
  for (const auto& cs : exe.compute_sets()) {
    for (const auto& v : cs.vertices()) {
      ++c.vertices[v.tile()];
      c.codelets[v.tile()].insert(v.codelet());
    }
  }
  c.live = temporary_live_ranges(order, records);

  // Per position of `order`, per tile: bytes of live temporaries, and of receive buffers.
  c.temporaries.resize(order.size());
  c.received.resize(order.size());
  for (int i = 0; i < exe.tensors_size(); ++i) {
    const format::Tensor& t = exe.tensors(i);
    const uint64_t width = format::dtype_size(t.dtype());
    const bool whole = lives_whole_program(t.role());
    auto range = c.live.find(static_cast<uint32_t>(i));
    if (!whole && range == c.live.end()) continue; // an alias never touched on its own
    for (const auto& iv : t.mapping()) {
      const uint64_t bytes = (iv.end() - iv.begin()) * width;
      if (whole) {
        c.resident[iv.tile()] += bytes;
      } else {
        for (size_t pos = range->second.first; pos <= range->second.second; ++pos)
          c.temporaries[pos][iv.tile()] += bytes;
      }
    }
  }
  for (size_t pos = 0; pos < order.size(); ++pos)
    c.received[pos] = records[order[pos]].received_bytes;
  return c;
}

// Breaks down a tile a person will look at: what is on it at its fullest moment, position `pos`
// of `order` (none when it holds only resident data).
void break_down(TileUsage& usage, const TileContents& c, std::optional<size_t> pos,
                const format::Executable& exe, const std::vector<uint32_t>& order,
                const target::TargetSpec& target) {
  const uint32_t tile = usage.tile;
  if (pos) usage.compute_set = exe.compute_sets(static_cast<int>(order[*pos])).name();
  usage.vertices = c.vertices[tile];
  usage.vertex_state_bytes = c.vertices[tile] * target.cycles.vertex_state_bytes;
  usage.codelets = c.codelets[tile].size();
  usage.code_bytes = usage.codelets * target.cycles.codelet_code_bytes;
  if (pos) {
    auto it = c.received[*pos].find(tile);
    if (it != c.received[*pos].end()) usage.exchange_bytes = it->second;
  }
  std::vector<std::pair<std::string, uint64_t>> tensors;
  for (int i = 0; i < exe.tensors_size(); ++i) {
    const format::Tensor& t = exe.tensors(i);
    const bool whole = lives_whole_program(t.role());
    auto range = c.live.find(static_cast<uint32_t>(i));
    const bool live_then = whole || (pos && range != c.live.end() && range->second.first <= *pos &&
                                     *pos <= range->second.second);
    if (!live_then) continue;
    uint64_t bytes = 0;
    for (const auto& iv : t.mapping()) {
      if (iv.tile() == tile) bytes += (iv.end() - iv.begin()) * format::dtype_size(t.dtype());
    }
    if (bytes == 0) continue;
    usage.tensor_bytes += bytes;
    tensors.emplace_back(t.name(), bytes);
  }
  std::sort(tensors.begin(), tensors.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  constexpr size_t kNamed = 3;
  usage.other_tensors = tensors.size() > kNamed ? tensors.size() - kNamed : 0;
  if (tensors.size() > kNamed) tensors.resize(kNamed);
  usage.largest_tensors = std::move(tensors);
}

} // namespace

MemoryPlan plan_memory(const format::Executable& exe, const std::vector<uint32_t>& order,
                       const std::vector<lowering::ComputeSetRecord>& records,
                       const target::TargetSpec& target) {
  const uint32_t tiles = target.total_tiles();
  const TileContents c = tile_contents(exe, order, records, target);
  auto fixed_on = [&](uint32_t t) { return c.fixed_on(t, target); };

  // What each IPU's tiles hold all program long: the floor of its liveness.
  const uint32_t ipus = target.num_ipus;
  std::vector<uint64_t> fixed_max(ipus, 0), fixed_sum(ipus, 0);
  for (uint32_t t = 0; t < tiles; ++t) {
    const uint32_t ipu = t / target.tiles_per_ipu;
    fixed_max[ipu] = std::max(fixed_max[ipu], fixed_on(t));
    fixed_sum[ipu] += fixed_on(t);
  }

  // Each tile's fullest moment: the position where its temporaries and receive buffers peak.
  MemoryPlan plan;
  plan.peak_per_tile.resize(tiles);
  plan.split_per_tile.resize(tiles);
  plan.liveness.reserve(order.size());
  std::vector<std::optional<size_t>> peak_at(tiles);
  std::vector<uint64_t> moving(tiles, 0);
  for (size_t pos = 0; pos < order.size(); ++pos) {
    std::map<uint32_t, uint64_t> here = c.temporaries[pos];
    for (const auto& [tile, bytes] : c.received[pos])
      here[tile] += bytes;
    LiveStep step{order[pos], fixed_max, fixed_sum};
    for (const auto& [tile, bytes] : here) {
      if (bytes > moving[tile]) {
        moving[tile] = bytes;
        peak_at[tile] = pos;
      }
      const uint32_t ipu = tile / target.tiles_per_ipu;
      step.fullest_tile_per_ipu[ipu] = std::max(step.fullest_tile_per_ipu[ipu], fixed_on(tile) + bytes);
      step.total_per_ipu[ipu] += bytes;
    }
    plan.liveness.push_back(std::move(step));
  }
  for (uint32_t t = 0; t < tiles; ++t) {
    plan.peak_per_tile[t] = fixed_on(t) + moving[t];
    TileSplit& split = plan.split_per_tile[t];
    split.vertex_state_bytes = c.vertices[t] * target.cycles.vertex_state_bytes;
    split.code_bytes = c.codelets[t].size() * target.cycles.codelet_code_bytes;
    split.tensor_bytes = c.resident[t];
    if (peak_at[t]) {
      const size_t pos = *peak_at[t];
      if (auto it = c.temporaries[pos].find(t); it != c.temporaries[pos].end())
        split.tensor_bytes += it->second;
      if (auto it = c.received[pos].find(t); it != c.received[pos].end()) split.exchange_bytes = it->second;
    }
    plan.total_bytes += plan.peak_per_tile[t];
    if (plan.peak_per_tile[t] > 0) ++plan.tiles_used;
    TileUsage usage;
    usage.tile = t;
    usage.peak_bytes = plan.peak_per_tile[t];
    if (usage.peak_bytes > plan.fullest.peak_bytes) plan.fullest = usage;
    if (usage.peak_bytes > target.bytes_per_tile) plan.overflowing.push_back(usage);
  }
  std::sort(plan.overflowing.begin(), plan.overflowing.end(),
            [](const TileUsage& a, const TileUsage& b) { return a.peak_bytes > b.peak_bytes; });

  // Break down the tiles a person will look at: what is on them at their fullest moment.
  auto break_down_at_peak = [&](TileUsage& usage) {
    break_down(usage, c, peak_at[usage.tile], exe, order, target);
  };
  break_down_at_peak(plan.fullest);
  for (size_t i = 0; i < std::min<size_t>(plan.overflowing.size(), 3); ++i)
    break_down_at_peak(plan.overflowing[i]);
  for (uint32_t ipu = 0; ipu < target.num_ipus; ++ipu) {
    std::vector<uint32_t> used;
    for (uint32_t t = ipu * target.tiles_per_ipu; t < (ipu + 1) * target.tiles_per_ipu; ++t) {
      if (plan.peak_per_tile[t] > 0) used.push_back(t);
    }
    const size_t shown = std::min(kBrokenDownPerIpu, used.size());
    // The lowest tile number first among equals, so the choice does not depend on the sort.
    std::partial_sort(used.begin(), used.begin() + static_cast<std::ptrdiff_t>(shown), used.end(),
                      [&](uint32_t a, uint32_t b) {
                        return plan.peak_per_tile[a] != plan.peak_per_tile[b]
                                   ? plan.peak_per_tile[a] > plan.peak_per_tile[b]
                                   : a < b;
                      });
    for (size_t i = 0; i < shown; ++i) {
      TileUsage usage;
      usage.tile = used[i];
      usage.peak_bytes = plan.peak_per_tile[used[i]];
      break_down_at_peak(usage);
      plan.fullest_per_ipu.push_back(std::move(usage));
    }
  }
  return plan;
}

std::string describe_overflow(const MemoryPlan& plan, const target::TargetSpec& target, size_t limit) {
  std::string out = std::to_string(plan.overflowing.size()) + " tile(s) out of memory";
  for (size_t i = 0; i < std::min(limit, plan.overflowing.size()); ++i) {
    const TileUsage& u = plan.overflowing[i];
    out += "\ntile " + std::to_string(u.tile) + " needs " + with_commas(u.peak_bytes) + " bytes of " +
           with_commas(target.bytes_per_tile);
    if (!u.compute_set.empty()) out += " in compute set '" + u.compute_set + "'";
    out += ": tensors " + with_commas(u.tensor_bytes);
    if (!u.largest_tensors.empty()) {
      out += " (largest:";
      for (size_t j = 0; j < u.largest_tensors.size(); ++j) {
        out += (j ? ", " : " ") + u.largest_tensors[j].first + " " + with_commas(u.largest_tensors[j].second);
      }
      if (u.other_tensors > 0) out += " and " + std::to_string(u.other_tensors) + " more";
      out += ")";
    }
    out += ", exchange buffers " + with_commas(u.exchange_bytes) + ", vertex state " +
           with_commas(u.vertex_state_bytes) + " (" + std::to_string(u.vertices) + " vertices), code " +
           with_commas(u.code_bytes) + " (" + std::to_string(u.codelets) + " codelets)";
  }
  return out;
}

} // namespace ipu::lowering
