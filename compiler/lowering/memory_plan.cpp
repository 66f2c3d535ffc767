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

// What the tiles hold all program long: each tile's resident tensors, vertex descriptors and
// code; and which temporaries start and stop living at each position of the order.
struct TileContents {
  std::vector<uint64_t> resident, vertices;
  // One copy of each codelet's code per tile.
  std::vector<std::set<uint32_t>> codelets;
  // Live range of each temporary, in positions of the order.
  std::map<uint32_t, std::pair<size_t, size_t>> live;
  // The temporaries whose live range starts, and ends, at each position: a tile's bytes of
  // temporaries change only there, so the plan sweeps the order once instead of holding every
  // position's bytes per tile (positions times tiles, gigabytes for BERT).
  std::vector<std::vector<uint32_t>> starting, ending;

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
  c.starting.resize(order.size());
  c.ending.resize(order.size());
  for (int i = 0; i < exe.tensors_size(); ++i) {
    const format::Tensor& t = exe.tensors(i);
    if (lives_whole_program(t.role())) {
      for (const auto& iv : t.mapping())
        c.resident[iv.tile()] += (iv.end() - iv.begin()) * format::dtype_size(t.dtype());
      continue;
    }
    auto range = c.live.find(static_cast<uint32_t>(i));
    if (range == c.live.end()) continue; // an alias never touched on its own
    c.starting[range->second.first].push_back(static_cast<uint32_t>(i));
    c.ending[range->second.second].push_back(static_cast<uint32_t>(i));
  }
  return c;
}

// Bytes per tile of what is live at the sweep's position (temporaries and receive buffers), with
// each IPU's sum, and which IPUs changed since their fullest tile was last found.
class LiveBytes {
public:
  LiveBytes(const TileContents& contents, const format::Executable& exe, const target::TargetSpec& target)
      : m_contents(contents), m_exe(exe), m_target(target), m_bytes(target.total_tiles(), 0),
        m_sum_per_ipu(target.num_ipus, 0), m_fullest_per_ipu(target.num_ipus, 0),
        m_dirty(target.num_ipus, true) {}

  // Adds (or, with sign -1, removes) tensor `index`'s bytes on each tile it is mapped to, calling
  // grew(tile) for each tile that gained.
  template <typename Grew> void add_tensor(uint32_t index, int sign, Grew&& grew) {
    const format::Tensor& t = m_exe.tensors(static_cast<int>(index));
    const uint64_t width = format::dtype_size(t.dtype());
    for (const auto& iv : t.mapping())
      add(iv.tile(), (iv.end() - iv.begin()) * width, sign, grew);
  }

  template <typename Grew> void add(uint32_t tile, uint64_t bytes, int sign, Grew&& grew) {
    if (bytes == 0) return;
    const uint32_t ipu = tile / m_target.tiles_per_ipu;
    if (sign > 0) {
      m_bytes[tile] += bytes;
      m_sum_per_ipu[ipu] += bytes;
      grew(tile);
    } else {
      m_bytes[tile] -= bytes;
      m_sum_per_ipu[ipu] -= bytes;
    }
    m_dirty[ipu] = true;
  }

  uint64_t on(uint32_t tile) const { return m_bytes[tile]; }
  uint64_t sum_on(uint32_t ipu) const { return m_sum_per_ipu[ipu]; }

  // The most any of the IPU's tiles holds now, what lives all program long included.
  uint64_t fullest_on(uint32_t ipu) {
    if (m_dirty[ipu]) {
      uint64_t fullest = 0;
      for (uint32_t t = ipu * m_target.tiles_per_ipu; t < (ipu + 1) * m_target.tiles_per_ipu; ++t)
        fullest = std::max(fullest, m_contents.fixed_on(t, m_target) + m_bytes[t]);
      m_fullest_per_ipu[ipu] = fullest;
      m_dirty[ipu] = false;
    }
    return m_fullest_per_ipu[ipu];
  }

private:
  const TileContents& m_contents;
  const format::Executable& m_exe;
  const target::TargetSpec& m_target;
  std::vector<uint64_t> m_bytes, m_sum_per_ipu, m_fullest_per_ipu;
  std::vector<bool> m_dirty;
};

// Breaks down a tile a person will look at: what is on it at its fullest moment, position `pos`
// of `order` (none when it holds only resident data).
void break_down(TileUsage& usage, const TileContents& c, std::optional<size_t> pos,
                const format::Executable& exe, const std::vector<uint32_t>& order,
                const std::vector<lowering::ComputeSetRecord>& records, const target::TargetSpec& target) {
  const uint32_t tile = usage.tile;
  if (pos) usage.compute_set = exe.compute_sets(static_cast<int>(order[*pos])).name();
  usage.vertices = c.vertices[tile];
  usage.vertex_state_bytes = c.vertices[tile] * target.cycles.vertex_state_bytes;
  usage.codelets = c.codelets[tile].size();
  usage.code_bytes = usage.codelets * target.cycles.codelet_code_bytes;
  if (pos) {
    const std::map<uint32_t, uint64_t>& received = records[order[*pos]].received_bytes;
    if (auto it = received.find(tile); it != received.end()) usage.exchange_bytes = it->second;
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

  // Each tile's fullest moment: the first position where its temporaries and receive buffers
  // peak. Only a tile that gained at a position can peak there.
  MemoryPlan plan;
  plan.peak_per_tile.resize(tiles);
  plan.split_per_tile.resize(tiles);
  plan.liveness.reserve(order.size());
  std::vector<std::optional<size_t>> peak_at(tiles);
  std::vector<uint64_t> moving(tiles, 0), temporaries_at_peak(tiles, 0);
  LiveBytes live(c, exe, target);
  std::vector<uint32_t> grown;
  const auto grew = [&](uint32_t tile) { grown.push_back(tile); };
  const auto ignore = [](uint32_t) {};
  for (size_t pos = 0; pos < order.size(); ++pos) {
    const std::map<uint32_t, uint64_t>& received = records[order[pos]].received_bytes;
    grown.clear();
    for (uint32_t tensor : c.starting[pos])
      live.add_tensor(tensor, +1, grew);
    for (const auto& [tile, bytes] : received)
      live.add(tile, bytes, +1, grew);
    for (uint32_t tile : grown) {
      if (live.on(tile) > moving[tile]) {
        moving[tile] = live.on(tile);
        peak_at[tile] = pos;
        auto it = received.find(tile);
        temporaries_at_peak[tile] = live.on(tile) - (it == received.end() ? 0 : it->second);
      }
    }
    LiveStep step{order[pos], fixed_max, fixed_sum};
    for (uint32_t ipu = 0; ipu < ipus; ++ipu) {
      step.fullest_tile_per_ipu[ipu] = live.fullest_on(ipu);
      step.total_per_ipu[ipu] += live.sum_on(ipu);
    }
    plan.liveness.push_back(std::move(step));
    for (const auto& [tile, bytes] : received)
      live.add(tile, bytes, -1, ignore);
    for (uint32_t tensor : c.ending[pos])
      live.add_tensor(tensor, -1, ignore);
  }
  for (uint32_t t = 0; t < tiles; ++t) {
    plan.peak_per_tile[t] = fixed_on(t) + moving[t];
    TileSplit& split = plan.split_per_tile[t];
    split.vertex_state_bytes = c.vertices[t] * target.cycles.vertex_state_bytes;
    split.code_bytes = c.codelets[t].size() * target.cycles.codelet_code_bytes;
    split.tensor_bytes = c.resident[t] + temporaries_at_peak[t];
    split.exchange_bytes = moving[t] - temporaries_at_peak[t];
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
    break_down(usage, c, peak_at[usage.tile], exe, order, records, target);
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
