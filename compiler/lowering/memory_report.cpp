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
