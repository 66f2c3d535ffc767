// The on-disk, content-addressed store of compiled executables.
//
// Layout under the store directory:
//   entries/<key[0:2]>/<key>.ipuexe    the executable bytes
//   entries/<key[0:2]>/<key>.manifest  the canonical manifest text, whose SHA-256 is <key>
//   entries/<key[0:2]>/<key>.model     the model file the entry was stored for (its absolute
//                                      path): a note for `cache list`, not part of the key
//   corrupt/<key>.ipuexe, corrupt/<key>.manifest   quarantined entries (never returned)
//   size                               running total of the entries' bytes (see total_bytes)
//   stats.json, stats.lock             counters and their lock (cache/cache_stats.h)
//   locks/<key>.lock                   one per key compiled (lock_key)
// The manifest is the commit marker: it is written last, and an executable without a matching
// manifest is never returned. Everything below the store directory is reached through directory
// descriptors and never through a symbolic link (cache/dir_handle.h): a link where the store
// keeps a directory, a file or a lock is an error naming it, or a miss with a warning on a lookup.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cache/dir_handle.h"
#include "cache/file_lock.h"
#include "cache/manifest.h"
#include "runtime/base/status.h"

namespace ipu::cache {

struct LookupResult {
  bool hit = false;
  std::string key;  // the full key, also when looked up by prefix
  std::string path; // the .ipuexe path of the entry (set on a miss too)
  // Empty unless hit: the executable file mapped, or its first bytes when lookup was given a limit.
  FileBytes executable;
  uint64_t executable_size = 0; // the executable file's size, on a hit
  std::string manifest_text;    // the stored canonical manifest; empty unless hit
  // The executable exists without its manifest: a put in progress in another process, or one
  // that died before committing. Only the holder of the key's lock can tell which.
  bool uncommitted_executable = false;
  std::vector<std::string> warnings;
};

// One committed entry, as list() sees it.
struct EntryInfo {
  std::string key;
  uint64_t bytes = 0;       // executable + manifest
  int64_t last_use_ns = 0;  // mtime of the .ipuexe (of the manifest if the executable is missing)
  bool manifest_ok = false; // the manifest parses and hashes to the key
  bool executable_present = false;
  std::string model_structure_sha256; // from the manifest, "" if absent
  std::string model_sha256;           // of key schema 1 manifests (the whole model file), "" if absent
  std::map<std::string, std::string> options;  // the manifest's option.* values, prefix removed
  std::map<std::string, std::string> manifest; // every manifest entry (empty if malformed)
  std::string model_file; // the model it was stored for (<key>.model), "" if not recorded
};

class LocalStore {
public:
  // Creates `dir` and its subfolders as needed (mkdir -p). Fails with an error naming `dir` if it
  // cannot be created or is not a directory.
  static StatusOr<LocalStore> open(const std::string& dir);

  const std::string& dir() const { return m_dir; }
  // The store directory, for its bookkeeping files (cache/cache_stats.h).
  const DirHandle& root() const { return m_root; }

  // Path of the entry's executable (<dir>/entries/<key[0:2]>/<key>.ipuexe), or "" if `key` is not
  // a valid key, so no path is ever built from unchecked text.
  std::string entry_path(const std::string& key) const;
  // Path of the entry's manifest, or "" if `key` is not a valid key.
  std::string manifest_path(const std::string& key) const;
  // Path of the entry's note of its model file, or "" if `key` is not a valid key.
  std::string model_note_path(const std::string& key) const;

  // A hit only if the stored manifest equals manifest.canonical_text() exactly and the executable
  // is readable. Anything inconsistent is a miss with a warning, never an error: a damaged cache
  // must not stop a compile. Touches the executable's mtime on a hit (for LRU eviction). Maps the
  // executable, or with an `executable_limit` reads its first bytes only: a hit that needs only the
  // executable's summary reads a few kilobytes of it.
  StatusOr<LookupResult> lookup(const Manifest& manifest, uint64_t executable_limit = UINT64_MAX);

  // Stores `executable_bytes` under manifest.key(): executable first, manifest last, each written
  // atomically. On failure no partial entry is left; a full disk is ResourceExhausted. Then, as a
  // note for `cache list`, the absolute path of `model_file` (if given); the entry stands without it.
  Status put(const Manifest& manifest, std::string_view executable_bytes, const std::string& model_file = "");

  // Loads an entry by full key or by a unique prefix of at least 8 lowercase hex characters.
  // Invalid text or an ambiguous prefix is InvalidArgument, no entry is NotFound, an entry whose
  // manifest does not hash to its key or whose executable is missing is DataLoss.
  // `touch` marks the entry as used (for LRU eviction); inspection commands pass false. The
  // executable is mapped (LookupResult::executable), not read.
  StatusOr<LookupResult> load_by_key(const std::string& key_or_prefix, bool touch_entry = true);

  // Every committed entry (one with a manifest), sorted by key.
  StatusOr<std::vector<EntryInfo>> list() const;

  // Deletes the entry's files. NotFound if neither exists.
  Status remove(const std::string& key);

  // Deletes every entry (returning their keys), and every symbolic link found among the shard
  // directories or in them: the link itself, never what it points to.
  StatusOr<std::vector<std::string>> clear();

  // Moves the entry's files into <dir>/corrupt/ so they are never returned again but can be
  // inspected. For callers that found the entry's bytes damaged (the executable format is
  // checked outside this library). NotFound if neither file exists.
  Status quarantine(const std::string& key);

  // Serialises compiles of one key across processes (<dir>/locks/<key>.lock): the first to
  // miss compiles while the others wait, then find its entry. A killed holder releases it.
  StatusOr<FileLock> lock_key(const std::string& key);
  std::string corrupt_dir() const { return m_dir + "/corrupt"; }

  // The running total kept in <dir>/size (recomputed by a scan if the file is missing or bad).
  StatusOr<uint64_t> total_bytes();
  // The total by scanning every entry; also rewrites <dir>/size to match.
  StatusOr<uint64_t> rescan_total_bytes();

  // If the running total exceeds `max_bytes`, scans the entries and removes the least recently
  // used ones (oldest .ipuexe mtime first, ties by key) until the total is <= max_bytes. Returns
  // the evicted keys in eviction order. Holds the stats lock throughout.
  StatusOr<std::vector<std::string>> evict_to(uint64_t max_bytes);

  // Removes entries whose last use is older than `cutoff_ns` (nanoseconds since the epoch).
  StatusOr<std::vector<std::string>> evict_older_than(int64_t cutoff_ns);

private:
  LocalStore(std::string dir, DirHandle root, DirHandle entries)
      : m_dir(std::move(dir)), m_root(std::move(root)), m_entries(std::move(entries)) {}

  std::string shard_dir(const std::string& key) const;
  // entries/<key[0:2]>; with `create`, made if missing.
  StatusOr<DirHandle> open_shard(const std::string& key, bool create) const;
  Status write_size(uint64_t total) const;
  // Adds `delta` to <dir>/size; the caller holds the stats lock.
  Status adjust_size_locked(int64_t delta);
  Status remove_locked(const std::string& key);

  std::string m_dir;
  DirHandle m_root;
  DirHandle m_entries;
};

} // namespace ipu::cache
