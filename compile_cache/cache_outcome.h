// How a compile through the cache found its executable. Its name is what `ipucc compile` prints
// and both tools emit in --json (docs/json.md), so the names never change.
#pragma once

#include <string>

namespace ipu::compile_cache {

enum class CacheOutcome {
  kHit,       // the local cache had it
  kRemoteHit, // the remote cache had it (and it is now in the local one, if writable)
  kMiss,      // compiled and stored
  kForced,    // compiled on request (--force) whatever the cache held, and stored
  kDisabled,  // compiled without a cache (--no-cache, or the cache could not be opened)
};

// "hit", "remote-hit", "miss", "forced", "disabled".
std::string cache_outcome_name(CacheOutcome outcome);

} // namespace ipu::compile_cache
