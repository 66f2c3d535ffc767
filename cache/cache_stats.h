// Persistent cache counters in <dir>/stats.json, and the lock that serialises every
// read-modify-write of the cache's bookkeeping files (stats.json and size).
#pragma once

#include <cstdint>
#include <string>

#include "cache/dir_handle.h"
#include "cache/file_lock.h"
#include "runtime/base/status.h"

namespace ipu::cache {

struct CacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t compiles_avoided = 0; // = hits: compiles a hit made unnecessary
  uint64_t corrupt_found = 0;    // entries quarantined into <dir>/corrupt
  uint64_t evictions = 0;        // entries removed by the size limit or `ipucc cache gc/evict`
  uint64_t remote_hits = 0;      // local misses found in the remote cache (also compiles avoided)
  uint64_t remote_misses = 0;    // local misses the remote cache did not have (404)
  uint64_t remote_errors = 0;    // remote lookups or uploads that failed, and rejected remote entries
};

// The lock that serialises every read-modify-write of the bookkeeping files (stats.json, size):
// an exclusive flock on <dir>/stats.lock. Not reentrant.
StatusOr<FileLock> lock_stats(const DirHandle& dir);

// The counters of the cache at `dir`: all zero if stats.json does not exist yet. Unknown fields
// are ignored, missing ones are zero; text that is not a JSON object of counters is DataLoss.
StatusOr<CacheStats> read_stats(const DirHandle& dir);

// Adds `delta` to the stored counters under the stats lock (read, add, write atomically). A
// failure must never fail a compile: callers warn and go on.
Status add_stats(const DirHandle& dir, const CacheStats& delta);

// The stats.json text of `stats` (exposed for tests).
std::string stats_json_text(const CacheStats& stats);
StatusOr<CacheStats> parse_stats_json(const std::string& text);

} // namespace ipu::cache
