#include "cli/ipu_tracks.h"

#include <algorithm>
#include <set>

namespace ipu::cli {

std::string ipu_process_name(const format::Executable& executable, uint32_t ipu) {
  std::string name = "IPU " + std::to_string(ipu);
  const auto& stages = executable.pipeline().stage_ipu();
  for (int s = 0; s < stages.size(); ++s) {
    if (stages[s] == ipu) name += " · stage " + std::to_string(s);
  }
  return name;
}

std::vector<uint32_t> compute_set_ipus(const format::Executable& executable,
                                       const format::ComputeSet& compute_set) {
  const uint32_t tiles_per_ipu = std::max<uint32_t>(1, executable.target().tiles_per_ipu());
  std::set<uint32_t> ipus;
  for (const format::Vertex& vertex : compute_set.vertices())
    ipus.insert(vertex.tile() / tiles_per_ipu);
  if (ipus.empty()) return {0};
  return {ipus.begin(), ipus.end()};
}

} // namespace ipu::cli
