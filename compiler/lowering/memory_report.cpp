#include "compiler/lowering/memory_report.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "runtime/format/verifier.h"

namespace ipu::lowering {

MemoryReport report_memory(const format::Executable& exe, const MemoryPlan& plan,
                           const target::TargetSpec& target) {
  MemoryReport report;
  report.ipus = target.num_ipus;
  report.tiles_per_ipu = target.tiles_per_ipu;
  report.bytes_per_tile = target.bytes_per_tile;
  report.peak_per_tile = plan.peak_per_tile;
  report.split_per_tile = plan.split_per_tile;
  report.fullest_per_ipu = plan.fullest_per_ipu;
  report.overflowing_tiles = static_cast<uint32_t>(plan.overflowing.size());
  report.total_bytes = plan.total_bytes;
  // Runs of consecutive steps merged to at most kLivenessPoints, each keeping the run's fullest
  // values, so no peak is lost to the merge.
  const size_t steps = plan.liveness.size();
  const size_t per_point = std::max<size_t>(1, (steps + kLivenessPoints - 1) / kLivenessPoints);
  for (size_t first = 0; first < steps; first += per_point) {
    LiveStep merged = plan.liveness[first];
    for (size_t i = first + 1; i < std::min(steps, first + per_point); ++i) {
      for (size_t ipu = 0; ipu < merged.total_per_ipu.size(); ++ipu) {
        merged.fullest_tile_per_ipu[ipu] =
            std::max(merged.fullest_tile_per_ipu[ipu], plan.liveness[i].fullest_tile_per_ipu[ipu]);
        merged.total_per_ipu[ipu] = std::max(merged.total_per_ipu[ipu], plan.liveness[i].total_per_ipu[ipu]);
      }
    }
    report.liveness_names.push_back(exe.compute_sets(static_cast<int>(merged.compute_set)).name());
    report.liveness.push_back(std::move(merged));
  }

  std::vector<TensorFootprint> tensors;
  for (const format::Tensor& t : exe.tensors()) {
    TensorFootprint footprint;
    footprint.name = t.name();
    footprint.role = format::TensorRole_Name(t.role());
    std::transform(footprint.role.begin(), footprint.role.end(), footprint.role.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    std::map<uint32_t, uint64_t> per_tile;
    for (const auto& iv : t.mapping())
      per_tile[iv.tile()] += (iv.end() - iv.begin()) * format::dtype_size(t.dtype());
    for (const auto& [tile, bytes] : per_tile) {
      footprint.bytes += bytes;
      footprint.largest_part = std::max(footprint.largest_part, bytes);
    }
    footprint.tiles = static_cast<uint32_t>(per_tile.size());
    if (footprint.bytes > 0) tensors.push_back(std::move(footprint));
  }
  // Equal sizes keep the executable's order, so the list is the same on every run.
  std::stable_sort(tensors.begin(), tensors.end(),
                   [](const TensorFootprint& a, const TensorFootprint& b) { return a.bytes > b.bytes; });
  if (tensors.size() > kLargestTensors) tensors.resize(kLargestTensors);
  report.largest_tensors = std::move(tensors);
  return report;
}

} // namespace ipu::lowering
