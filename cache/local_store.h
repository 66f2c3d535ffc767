// The on-disk, content-addressed store of compiled executables.
//
// Layout under the store directory:
//   entries/<key[0:2]>/<key>.ipuexe    the executable bytes
//   entries/<key[0:2]>/<key>.manifest  the canonical manifest text, whose SHA-256 is <key>
// The manifest is the commit marker: it is written last, and an executable without a matching
// manifest is never returned.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cache/manifest.h"
#include "runtime/base/status.h"

namespace ipu::cache {

struct LookupResult {
  bool hit = false;
  std::string key;              // the full key, also when looked up by prefix
  std::string path;             // the .ipuexe path of the entry (set on a miss too)
  std::string executable_bytes; // empty unless hit
  std::string manifest_text;    // the stored canonical manifest; empty unless hit
  std::vector<std::string> warnings;
};

class LocalStore {
public:
  // Creates `dir` and its subfolders as needed (mkdir -p). Fails with an error naming `dir` if it
  // cannot be created or is not a directory.
  static StatusOr<LocalStore> open(const std::string& dir);

  const std::string& dir() const { return m_dir; }

  // Path of the entry's executable (<dir>/entries/<key[0:2]>/<key>.ipuexe), or "" if `key` is not
  // a valid key, so no path is ever built from unchecked text.
  std::string entry_path(const std::string& key) const;
  // Path of the entry's manifest, or "" if `key` is not a valid key.
  std::string manifest_path(const std::string& key) const;

  // A hit only if the stored manifest equals manifest.canonical_text() exactly and the executable
  // is readable. Anything inconsistent is a miss with a warning, never an error: a damaged cache
  // must not stop a compile. Touches the executable's mtime on a hit (for LRU eviction).
  StatusOr<LookupResult> lookup(const Manifest& manifest);

  // Stores `executable_bytes` under manifest.key(): executable first, manifest last, each written
  // atomically. On failure no partial entry is left; a full disk is ResourceExhausted.
  Status put(const Manifest& manifest, std::string_view executable_bytes);

  // Loads an entry by full key or by a unique prefix of at least 8 lowercase hex characters.
  // Invalid text or an ambiguous prefix is InvalidArgument, no entry is NotFound, an entry whose
  // manifest does not hash to its key or whose executable is missing is DataLoss.
  StatusOr<LookupResult> load_by_key(const std::string& key_or_prefix);

private:
  explicit LocalStore(std::string dir) : m_dir(std::move(dir)) {}

  std::string shard_dir(const std::string& key) const;

  std::string m_dir;
};

} // namespace ipu::cache
