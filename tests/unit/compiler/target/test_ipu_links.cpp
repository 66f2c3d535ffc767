// The IPU-Link ladder of poplibs' multi-IPU model (compiler/target/ipu_links.h) on hand-traced
// routes, and an exchange's cycles as its busiest group of links.
#include <doctest/doctest.h>

#include "compiler/target/ipu_links.h"

namespace ipu::testing {
namespace {

using target::IpuLinkKind;

std::vector<std::pair<IpuLinkKind, uint32_t>> route(uint32_t from, uint32_t to) {
  std::vector<std::pair<IpuLinkKind, uint32_t>> out;
  for (const target::IpuLinkGroup& g : target::ipu_link_route(from, to))
    out.emplace_back(g.kind, g.ipu);
  return out;
}

TEST_CASE("ipu links: routes follow poplibs' ladder") {
  using P = std::vector<std::pair<IpuLinkKind, uint32_t>>;
  CHECK(route(0, 1) == P{{IpuLinkKind::kPartner, 0}});
  CHECK(route(3, 2) == P{{IpuLinkKind::kPartner, 3}});
  // 1 -> 2: across IPU 1's rung to IPU 0, then up one pair.
  CHECK(route(1, 2) == P{{IpuLinkKind::kCrossing, 1}, {IpuLinkKind::kUp, 0}});
  CHECK(route(0, 4) == P{{IpuLinkKind::kUp, 0}, {IpuLinkKind::kUp, 2}});
  CHECK(route(5, 0) == P{{IpuLinkKind::kCrossing, 5}, {IpuLinkKind::kDown, 4}, {IpuLinkKind::kDown, 2}});
  CHECK(target::links_in(IpuLinkKind::kPartner) == 4);
  CHECK(target::links_in(IpuLinkKind::kUp) == 2);
}

TEST_CASE("ipu links: an exchange takes as long as its busiest group of links") {
  target::TargetSpec mk2;
  const double link = mk2.cycles.ipu_link_bytes_per_cycle;
  // Alone, a copy to the partner runs over 4 links, one to the next pair over 2.
  CHECK(target::ipu_link_cycles(mk2, {{0, 1, 4000}}) == doctest::Approx(4000 / (4 * link)));
  CHECK(target::ipu_link_cycles(mk2, {{1, 2, 4000}}) == doctest::Approx(4000 / (2 * link)));
  // A pipeline's boundaries 0->1, 1->2, 2->3 use different links: together they take as long as
  // the slowest of them, not their sum.
  CHECK(target::ipu_link_cycles(mk2, {{0, 1, 8000}, {1, 2, 4000}, {2, 3, 1000}}) ==
        doctest::Approx(4000 / (2 * link)));
  // Two copies through IPU 0's up links share them.
  CHECK(target::ipu_link_cycles(mk2, {{0, 2, 3000}, {1, 2, 1000}}) == doctest::Approx(4000 / (2 * link)));
  CHECK(target::ipu_link_cycles(mk2, {}) == 0);
  // A split, not knowing yet which IPUs a cut falls between, charges the slower neighbour hop.
  CHECK(target::neighbour_link_cycles(mk2, 4000) == doctest::Approx(4000 / (2 * link)));
}

} // namespace
} // namespace ipu::testing
