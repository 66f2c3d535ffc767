#include "compiler/passes/memory_plan.h"

#include <algorithm>
#include <map>
#include <set>

#include "runtime/format/verifier.h"

namespace ipu::passes {
namespace {

bool lives_whole_program(format::TensorRole role) {
  return role != format::ACTIVATION && role != format::GRADIENT;
}

std::string with_commas(uint64_t n) {
  std::string s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

}  // namespace

MemoryPlan plan_memory(const format::Executable& exe, const std::vector<uint32_t>& order,
                       const std::vector<lowering::ComputeSetRecord>& records, const target::TargetSpec& target) {
  const uint32_t tiles = target.total_tiles();
  std::vector<uint64_t> fixed(tiles, 0);

  // Vertex descriptors and one copy of each codelet's code per tile.
  std::vector<std::set<uint32_t>> codelets(tiles);
  for (const auto& cs : exe.compute_sets()) {
    for (const auto& v : cs.vertices()) {
      fixed[v.tile()] += target.cycles.vertex_state_bytes;
      codelets[v.tile()].insert(v.codelet());
    }
  }
  for (uint32_t t = 0; t < tiles; ++t) fixed[t] += codelets[t].size() * target.cycles.codelet_code_bytes;

  // Live range of each temporary, in positions of `order`.
  std::map<uint32_t, std::pair<size_t, size_t>> live;
  for (size_t pos = 0; pos < order.size(); ++pos) {
    for (uint32_t tensor : records[order[pos]].tensors) {
      auto [it, inserted] = live.try_emplace(tensor, pos, pos);
      if (!inserted) it->second.second = pos;
    }
  }

  std::vector<std::map<uint32_t, uint64_t>> at(order.size());
  for (int i = 0; i < exe.tensors_size(); ++i) {
    const format::Tensor& t = exe.tensors(i);
    const uint64_t width = format::dtype_size(t.dtype());
    const bool whole = lives_whole_program(t.role());
    auto range = live.find(static_cast<uint32_t>(i));
    if (!whole && range == live.end()) continue;  // an alias never touched on its own
    for (const auto& iv : t.mapping()) {
      const uint64_t bytes = (iv.end() - iv.begin()) * width;
      if (whole) {
        fixed[iv.tile()] += bytes;
      } else {
        for (size_t pos = range->second.first; pos <= range->second.second; ++pos) at[pos][iv.tile()] += bytes;
      }
    }
  }
  for (size_t pos = 0; pos < order.size(); ++pos) {
    for (const auto& [tile, bytes] : records[order[pos]].received_bytes) at[pos][tile] += bytes;
  }

  MemoryPlan plan;
  plan.peak_per_tile = fixed;
  for (const auto& step : at) {
    for (const auto& [tile, bytes] : step) plan.peak_per_tile[tile] = std::max(plan.peak_per_tile[tile], fixed[tile] + bytes);
  }
  for (uint32_t t = 0; t < tiles; ++t) {
    plan.total_bytes += plan.peak_per_tile[t];
    if (plan.peak_per_tile[t] > 0) ++plan.tiles_used;
    if (plan.peak_per_tile[t] > plan.fullest.peak_bytes) plan.fullest = {t, plan.peak_per_tile[t], {}};
    if (plan.peak_per_tile[t] > target.bytes_per_tile) plan.overflowing.push_back({t, plan.peak_per_tile[t], {}});
  }
  std::sort(plan.overflowing.begin(), plan.overflowing.end(),
            [](const TileUsage& a, const TileUsage& b) { return a.peak_bytes > b.peak_bytes; });

  // Name the largest tensors on the tiles a person will look at.
  auto fill_largest = [&](TileUsage& usage) {
    for (const auto& t : exe.tensors()) {
      uint64_t bytes = 0;
      for (const auto& iv : t.mapping()) {
        if (iv.tile() == usage.tile) bytes += (iv.end() - iv.begin()) * format::dtype_size(t.dtype());
      }
      if (bytes > 0) usage.largest_tensors.emplace_back(t.name(), bytes);
    }
    std::sort(usage.largest_tensors.begin(), usage.largest_tensors.end(),
              [](const auto& a, const auto& b) { return a.second > b.second; });
    if (usage.largest_tensors.size() > 3) usage.largest_tensors.resize(3);
  };
  fill_largest(plan.fullest);
  for (size_t i = 0; i < std::min<size_t>(plan.overflowing.size(), 3); ++i) fill_largest(plan.overflowing[i]);
  return plan;
}

std::string describe_overflow(const MemoryPlan& plan, const target::TargetSpec& target, size_t limit) {
  std::string out = std::to_string(plan.overflowing.size()) + " tile(s) out of memory";
  for (size_t i = 0; i < std::min(limit, plan.overflowing.size()); ++i) {
    const TileUsage& u = plan.overflowing[i];
    out += "\ntile " + std::to_string(u.tile) + " needs " + with_commas(u.peak_bytes) + " bytes of " +
           with_commas(target.bytes_per_tile);
    if (!u.largest_tensors.empty()) {
      out += "; largest tensors there:";
      for (size_t j = 0; j < u.largest_tensors.size(); ++j) {
        out += (j ? ", " : " ") + u.largest_tensors[j].first + " " + with_commas(u.largest_tensors[j].second);
      }
    }
  }
  return out;
}

}  // namespace ipu::passes
