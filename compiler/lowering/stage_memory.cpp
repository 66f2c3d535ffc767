#include "compiler/lowering/stage_memory.h"

#include <algorithm>
#include <map>
#include <set>

#include "compiler/lowering/memory_plan.h"
#include "runtime/format/verifier.h"

namespace ipu::lowering {

uint64_t linear_tile_share(int64_t elements, uint32_t tiles, uint64_t element_bytes) {
  const int64_t chunk = std::max<int64_t>(64, ceil_div(elements, tiles));
  return static_cast<uint64_t>(std::min(elements, chunk)) * element_bytes;
}

std::vector<UnitMemory> measure_unit_memory(const format::Executable& exe, const std::vector<uint32_t>& order,
                                            const std::vector<ComputeSetRecord>& records,
                                            const std::vector<StageCopy>& copies, size_t backward_begin,
                                            size_t update_begin, const target::TargetSpec& target) {
  const uint32_t tiles = target.tiles_per_ipu;
  std::vector<UnitMemory> units(exe.target().num_ipus());
  for (UnitMemory& u : units) {
    u.resident.assign(tiles, 0);
    u.carried.assign(tiles, 0);
    u.held_for_update.assign(tiles, 0);
    u.transient.assign(tiles, 0);
    u.codelets.resize(tiles);
  }
  auto unit_of = [&](uint32_t tile) -> UnitMemory& { return units.at(tile / tiles); };

  std::vector<std::set<uint32_t>> codelets(units.size() * tiles);
  for (const auto& cs : exe.compute_sets()) {
    for (const auto& v : cs.vertices()) {
      unit_of(v.tile()).resident[v.tile() % tiles] += target.cycles.vertex_state_bytes;
      codelets[v.tile()].insert(v.codelet());
    }
  }
  for (size_t tile = 0; tile < codelets.size(); ++tile)
    units[tile / tiles].codelets[tile % tiles].assign(codelets[tile].begin(), codelets[tile].end());

  std::map<uint32_t, int> arrived_from; // a forward copy's destination -> the unit that sent it
  for (const StageCopy& c : copies) {
    if (c.phase == ir::Phase::kForward) arrived_from[c.destination] = c.source_stage;
  }
  const std::map<uint32_t, std::pair<size_t, size_t>> live = temporary_live_ranges(order, records);
  // Per position of `order`, per tile: bytes of the short-lived temporaries live there.
  std::vector<std::map<uint32_t, uint64_t>> short_lived(order.size());
  for (int i = 0; i < exe.tensors_size(); ++i) {
    const format::Tensor& t = exe.tensors(i);
    if (t.role() == format::STASH) continue;
    const auto elements = static_cast<int64_t>(format::element_count(t));
    const uint64_t slot_share = linear_tile_share(elements, tiles, format::dtype_size(t.dtype()));
    const auto range = live.find(static_cast<uint32_t>(i));
    const bool touched = range != live.end();
    const bool carried =
        touched && range->second.first < backward_begin && range->second.second >= backward_begin;
    UnitMemory& unit = units.at(t.ipu());
    const auto arrival = arrived_from.find(static_cast<uint32_t>(i));
    if (carried && arrival != arrived_from.end()) {
      UnitMemory::Arrival kept{static_cast<size_t>(arrival->second), slot_share, {}};
      for (const auto& iv : t.mapping())
        kept.tile_bytes.emplace_back(iv.tile() % tiles,
                                     (iv.end() - iv.begin()) * format::dtype_size(t.dtype()));
      unit.arrivals.push_back(std::move(kept));
      continue;
    }
    if (carried && stashed_per_micro_batch(t.role())) {
      unit.stash_tile_bytes += slot_share;
      if (t.role() != format::ACTIVATION) unit.input_stash_tile_bytes += slot_share;
    }
    if (lives_whole_program(t.role())) {
      if (t.role() == format::WEIGHT) {
        unit.accumulator_tile_bytes +=
            linear_tile_share(elements, tiles, format::dtype_size(format::FLOAT32));
      }
      for (const auto& iv : t.mapping())
        unit_of(iv.tile()).resident[iv.tile() % tiles] +=
            (iv.end() - iv.begin()) * format::dtype_size(t.dtype());
      continue;
    }
    if (!touched) continue; // an alias never touched on its own
    const bool held = !carried && range->second.first < update_begin && range->second.second >= update_begin;
    for (const auto& iv : t.mapping()) {
      const uint64_t bytes = (iv.end() - iv.begin()) * format::dtype_size(t.dtype());
      if (carried) {
        unit_of(iv.tile()).carried[iv.tile() % tiles] += bytes;
      } else if (held) {
        unit_of(iv.tile()).held_for_update[iv.tile() % tiles] += bytes;
      } else {
        for (size_t pos = range->second.first; pos <= range->second.second; ++pos)
          short_lived[pos][iv.tile()] += bytes;
      }
    }
  }
  for (size_t pos = 0; pos < order.size(); ++pos) {
    std::map<uint32_t, uint64_t>& here = short_lived[pos];
    for (const auto& [tile, bytes] : records[order[pos]].received_bytes)
      here[tile] += bytes;
    for (const auto& [tile, bytes] : here) {
      uint64_t& peak = unit_of(tile).transient[tile % tiles];
      peak = std::max(peak, bytes);
    }
  }
  return units;
}

} // namespace ipu::lowering
