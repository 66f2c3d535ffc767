#include "compiler/target/ipu_links.h"

#include <algorithm>
#include <map>

namespace ipu::target {

uint32_t links_in(IpuLinkKind kind) {
  switch (kind) {
  case IpuLinkKind::kPartner:
    return 4;
  case IpuLinkKind::kCrossing:
  case IpuLinkKind::kUp:
  case IpuLinkKind::kDown:
    return 2;
  }
  return 2;
}

std::vector<IpuLinkGroup> ipu_link_route(uint32_t from, uint32_t to) {
  if (from / 2 == to / 2) return {{IpuLinkKind::kPartner, from}};
  std::vector<IpuLinkGroup> route;
  uint32_t at = from;
  if (at % 2 != to % 2) {
    route.push_back({IpuLinkKind::kCrossing, at});
    at ^= 1U;
  }
  while (at != to) {
    if (at < to) {
      route.push_back({IpuLinkKind::kUp, at});
      at += 2;
    } else {
      route.push_back({IpuLinkKind::kDown, at});
      at -= 2;
    }
  }
  return route;
}

double ipu_link_cycles(const TargetSpec& target, const std::vector<IpuTransfer>& transfers) {
  std::map<IpuLinkGroup, double> bytes_through;
  for (const IpuTransfer& t : transfers) {
    for (const IpuLinkGroup& group : ipu_link_route(t.from, t.to))
      bytes_through[group] += t.bytes;
  }
  double slowest = 0;
  for (const auto& [group, bytes] : bytes_through)
    slowest = std::max(slowest, bytes / (links_in(group.kind) * target.cycles.ipu_link_bytes_per_cycle));
  return slowest;
}

double neighbour_link_cycles(const TargetSpec& target, double bytes) {
  return ipu_link_cycles(target, {{1, 2, bytes}});
}

} // namespace ipu::target
