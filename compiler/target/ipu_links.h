// The IPU-Links between the IPUs of one replica, as poplibs' multi-IPU IPUModel lays them out
// (poplibs_test/Util.cpp, addGlobalExchangeConstraints; docs/cycle_model_sources.md): a ladder
// whose rungs are the IPU pairs (0, 1), (2, 3), ... An IPU reaches its partner over 4 links. To
// reach another pair it first crosses its own rung when the destination is on the ladder's other
// side (2 links), then climbs up or down one pair at a time (2 links per step). Each group of links
// carries everything routed through it at the links' combined rate, and groups run at once.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/target/target.h"

namespace ipu::target {

enum class IpuLinkKind : uint8_t {
  kPartner,  // to the other IPU of the pair: 4 links
  kCrossing, // across the rung, on the way to another pair: 2 links
  kUp,       // from pair p to pair p + 1: 2 links
  kDown,     // from pair p to pair p − 1: 2 links
};

// The links of one kind leaving one IPU.
struct IpuLinkGroup {
  IpuLinkKind kind;
  uint32_t ipu;
  bool operator<(const IpuLinkGroup& other) const {
    return kind != other.kind ? kind < other.kind : ipu < other.ipu;
  }
};

uint32_t links_in(IpuLinkKind kind);

// The groups a copy from IPU `from` to IPU `to` (of one replica; from != to) passes through.
std::vector<IpuLinkGroup> ipu_link_route(uint32_t from, uint32_t to);

struct IpuTransfer {
  uint32_t from = 0;
  uint32_t to = 0;
  double bytes = 0;
};

// Cycles of one exchange in which all `transfers` move at once: the busiest group of links sets
// the pace, each link at CycleModel::ipu_link_bytes_per_cycle.
double ipu_link_cycles(const TargetSpec& target, const std::vector<IpuTransfer>& transfers);

// Cycles to move `bytes` from one IPU to the next by the slower of the two hops neighbouring IPUs
// have (to the next pair: across the rung, then up, 2 links each): what a split charges a cut
// before it knows which IPUs the cut will fall between.
double neighbour_link_cycles(const TargetSpec& target, double bytes);

} // namespace ipu::target
