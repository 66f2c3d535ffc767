#include "compile_cache/cache_outcome.h"

namespace ipu::compile_cache {

std::string cache_outcome_name(CacheOutcome outcome) {
  switch (outcome) {
  case CacheOutcome::kHit:
    return "hit";
  case CacheOutcome::kRemoteHit:
    return "remote-hit";
  case CacheOutcome::kMiss:
    return "miss";
  case CacheOutcome::kForced:
    return "forced";
  case CacheOutcome::kDisabled:
    return "disabled";
  }
  return "unknown"; // not reached: every enumerator is handled above (-Wswitch)
}

} // namespace ipu::compile_cache
