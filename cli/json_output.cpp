#include "cli/json_output.h"

namespace ipu::cli {

nlohmann::json all_reduce_json(const format::Estimates& estimates, const format::Target& target) {
  if (!estimates.has_all_reduce()) return nullptr;
  const format::AllReduceEstimate& a = estimates.all_reduce();
  const double cycles = a.ipu_link_cycles() + a.gw_link_cycles();
  return {{"bytes", a.bytes()},
          {"replicas", a.replicas()},
          {"replicas_per_pod", a.replicas_per_pod()},
          {"pods", a.pods()},
          {"ipu_link_cycles", a.ipu_link_cycles()},
          {"gw_link_cycles", a.gw_link_cycles()},
          {"cycles", cycles},
          {"seconds", cycles / target.clock_hz()}};
}

} // namespace ipu::cli
