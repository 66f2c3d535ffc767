#include "cache/local_store.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <tuple>
#include <utility>

#include "cache/cache_stats.h"
#include "runtime/base/sha256.h"

namespace ipu::cache {
namespace {

namespace fs = std::filesystem;

constexpr size_t kMinPrefixLength = 8;
constexpr size_t kMaxListedCandidates = 5;
constexpr std::string_view kExecutableSuffix = ".ipuexe";
constexpr std::string_view kManifestSuffix = ".manifest";
constexpr std::string_view kModelNoteSuffix = ".model";

std::string executable_name(const std::string& key) {
  return key + std::string(kExecutableSuffix);
}
std::string manifest_name(const std::string& key) {
  return key + std::string(kManifestSuffix);
}
std::string model_note_name(const std::string& key) {
  return key + std::string(kModelNoteSuffix);
}

// Removal is best effort: it runs on a path that is already failing, or on a note.
void remove_quietly(const DirHandle& dir, const std::string& name) {
  (void)dir.remove(name);
}

int64_t mtime_ns(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

// The size of the regular file `name`, 0 if it is missing or anything else.
uint64_t file_bytes(const DirHandle& dir, const std::string& name) {
  struct stat st {};
  if (!dir.lstat(name, st) || !S_ISREG(st.st_mode)) return 0;
  return static_cast<uint64_t>(st.st_size);
}

uint64_t entry_bytes(const DirHandle& shard, const std::string& key) {
  return file_bytes(shard, executable_name(key)) + file_bytes(shard, manifest_name(key));
}

uint64_t sum_bytes(const std::vector<EntryInfo>& entries) {
  uint64_t total = 0;
  for (const EntryInfo& e : entries)
    total += e.bytes;
  return total;
}

StatusOr<uint64_t> parse_size_file(const std::string& text) {
  uint64_t value = 0;
  size_t i = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    uint64_t digit = static_cast<uint64_t>(text[i] - '0');
    if (value > (UINT64_MAX - digit) / 10) return data_loss("size too large");
    value = value * 10 + digit;
  }
  if (i == 0 || (i < text.size() && text.substr(i) != "\n")) return data_loss("malformed size file");
  return value;
}

// Marks an entry as recently used. A read-only shared cache cannot be touched, which only makes
// eviction order less precise, so permission errors stay silent.
void touch(const DirHandle& shard, const std::string& name, std::vector<std::string>& warnings) {
  const int err = shard.touch(name);
  if (err == 0 || err == EACCES || err == EPERM || err == EROFS) return;
  warnings.push_back(shard.path_of(name) + ": cannot update modification time: " + std::strerror(err));
}

// An entry's executable and its file's size: mapped whole, or with a `limit`, its first bytes read.
StatusOr<std::pair<FileBytes, uint64_t>> read_executable(const DirHandle& shard, const std::string& name,
                                                         uint64_t limit) {
  if (limit == UINT64_MAX) {
    IPU_ASSIGN_OR_RETURN(FileBytes whole, shard.map(name));
    const uint64_t size = whole.bytes.size();
    return std::pair{std::move(whole), size};
  }
  IPU_ASSIGN_OR_RETURN(FileHead head, shard.read_head(name, limit));
  return std::pair{FileBytes::owning(std::move(head.bytes)), head.file_size};
}

} // namespace

StatusOr<LocalStore> LocalStore::open(const std::string& dir) {
  if (dir.empty()) return invalid_argument("cache directory path is empty");
  std::string root = dir;
  while (root.size() > 1 && root.back() == '/')
    root.pop_back();
  StatusOr<DirHandle> root_dir = DirHandle::open(root, /*create=*/true);
  StatusOr<DirHandle> entries = root_dir.ok() ? root_dir->open_subdir("entries", /*create=*/true)
                                              : StatusOr<DirHandle>(root_dir.status());
  if (!entries.ok()) {
    const Status& status = entries.status();
    return Status(status.code(), root + ": cannot open cache directory: " + status.message());
  }
  return LocalStore(std::move(root), std::move(root_dir).value(), std::move(entries).value());
}

std::string LocalStore::shard_dir(const std::string& key) const {
  return m_entries.path_of(key.substr(0, 2));
}

StatusOr<DirHandle> LocalStore::open_shard(const std::string& key, bool create) const {
  return m_entries.open_subdir(key.substr(0, 2), create);
}

std::string LocalStore::entry_path(const std::string& key) const {
  if (!is_valid_key(key)) return "";
  return shard_dir(key) + "/" + executable_name(key);
}

std::string LocalStore::manifest_path(const std::string& key) const {
  if (!is_valid_key(key)) return "";
  return shard_dir(key) + "/" + manifest_name(key);
}

std::string LocalStore::model_note_path(const std::string& key) const {
  if (!is_valid_key(key)) return "";
  return shard_dir(key) + "/" + model_note_name(key);
}

StatusOr<LookupResult> LocalStore::lookup(const Manifest& manifest, uint64_t executable_limit) {
  LookupResult result;
  const std::string expected = manifest.canonical_text();
  result.key = sha256_hex(expected);
  result.path = entry_path(result.key);
  const std::string stored_path = manifest_path(result.key);

  StatusOr<DirHandle> shard = open_shard(result.key, /*create=*/false);
  if (!shard.ok()) {
    if (shard.status().code() != StatusCode::kNotFound) {
      result.warnings.push_back(shard.status().message() + " (treated as a cache miss)");
    }
    return result;
  }
  StatusOr<std::string> stored = shard->read(manifest_name(result.key));
  if (!stored.ok()) {
    if (stored.status().code() != StatusCode::kNotFound) {
      result.warnings.push_back(stored.status().message() + " (treated as a cache miss)");
    } else {
      struct stat st {};
      result.uncommitted_executable = shard->lstat(executable_name(result.key), st);
    }
    return result;
  }
  if (*stored != expected) {
    // Same key, different text: a corrupted or edited entry (or a SHA-256 collision). Name the
    // first field that differs so `ipucc cache explain` users can see what changed.
    std::string detail;
    StatusOr<Manifest> parsed = Manifest::parse(*stored);
    if (!parsed.ok()) {
      detail = "stored manifest is malformed: " + parsed.status().message();
    } else {
      std::vector<std::string> differing = manifest.differences(*parsed);
      detail = differing.empty() ? std::string("stored manifest text differs")
                                 : "first differing field '" + differing.front() + "'";
    }
    result.warnings.push_back(stored_path + ": stored manifest does not match key " + result.key + ", " +
                              detail + " (treated as a cache miss)");
    return result;
  }
  auto executable = read_executable(*shard, executable_name(result.key), executable_limit);
  if (!executable.ok()) {
    result.warnings.push_back(executable.status().message() + " (treated as a cache miss)");
    return result;
  }
  result.hit = true;
  std::tie(result.executable, result.executable_size) = std::move(executable).value();
  result.manifest_text = std::move(stored).value();
  touch(*shard, executable_name(result.key), result.warnings);
  return result;
}

Status LocalStore::put(const Manifest& manifest, std::string_view executable_bytes,
                       const std::string& model_file) {
  const std::string text = manifest.canonical_text();
  const std::string key = sha256_hex(text);
  IPU_ASSIGN_OR_RETURN(DirHandle shard, open_shard(key, /*create=*/true));
  const uint64_t old_bytes = entry_bytes(shard, key);

  // Both files are replaced atomically, so a reader sees whole files only; an entry being
  // rewritten holds an executable built from the same inputs (the key covers them all), so an
  // old manifest beside a new executable is still a true pair. Removing the manifest first
  // would make concurrent readers see spurious misses.
  Status status = shard.write_atomic(executable_name(key), executable_bytes);
  if (status.ok()) status = shard.write_atomic(manifest_name(key), text);
  if (!status.ok()) {
    remove_quietly(shard, manifest_name(key));
    remove_quietly(shard, executable_name(key));
    return status;
  }
  if (!model_file.empty()) {
    std::error_code ec;
    const fs::path absolute = fs::absolute(model_file, ec).lexically_normal();
    if (!ec) (void)shard.write_atomic(model_note_name(key), absolute.string() + "\n");
  }
  // The running size is bookkeeping: the entry is committed even if it cannot be updated (the
  // next total_bytes() or eviction rescans a missing or damaged size file).
  StatusOr<FileLock> lock = lock_stats(m_root);
  if (!lock.ok()) return lock.status();
  return adjust_size_locked(static_cast<int64_t>(entry_bytes(shard, key)) - static_cast<int64_t>(old_bytes));
}

Status LocalStore::write_size(uint64_t total) const {
  return m_root.write_atomic("size", std::to_string(total) + "\n");
}

Status LocalStore::adjust_size_locked(int64_t delta) {
  StatusOr<std::string> text = m_root.read("size");
  StatusOr<uint64_t> current = text.ok() ? parse_size_file(*text) : StatusOr<uint64_t>(text.status());
  uint64_t total = 0;
  if (current.ok()) {
    int64_t next = static_cast<int64_t>(*current) + delta;
    total = next < 0 ? 0 : static_cast<uint64_t>(next);
  } else {
    // No (usable) running total: the scan already includes this change.
    StatusOr<std::vector<EntryInfo>> entries = list();
    if (!entries.ok()) return entries.status();
    total = sum_bytes(*entries);
  }
  return write_size(total);
}

StatusOr<std::vector<EntryInfo>> LocalStore::list() const {
  std::vector<EntryInfo> out;
  IPU_ASSIGN_OR_RETURN(std::vector<DirChild> shards, m_entries.list());
  for (const DirChild& shard_child : shards) {
    // A link is never followed: whatever it points to holds no entries of this store.
    if (shard_child.kind != DirChild::Kind::kDirectory) continue;
    StatusOr<DirHandle> shard = m_entries.open_subdir(shard_child.name, /*create=*/false);
    if (!shard.ok()) {
      if (shard.status().code() == StatusCode::kNotFound) continue; // removed meanwhile
      return shard.status();
    }
    StatusOr<std::vector<DirChild>> children = shard->list();
    if (!children.ok()) {
      if (children.status().code() == StatusCode::kNotFound) continue;
      return children.status();
    }
    for (const DirChild& child : *children) {
      const std::string& name = child.name;
      if (child.kind != DirChild::Kind::kFile) continue;
      if (name.size() <= kManifestSuffix.size() || !name.ends_with(kManifestSuffix)) continue;
      std::string key = name.substr(0, name.size() - kManifestSuffix.size());
      if (!is_valid_key(key) || key.substr(0, 2) != shard_child.name) continue;
      EntryInfo info;
      info.key = key;
      struct stat st {};
      if (!shard->lstat(name, st) || !S_ISREG(st.st_mode)) continue; // removed meanwhile
      info.bytes = static_cast<uint64_t>(st.st_size);
      info.last_use_ns = mtime_ns(st);
      if (shard->lstat(executable_name(key), st) && S_ISREG(st.st_mode)) {
        info.executable_present = true;
        info.bytes += static_cast<uint64_t>(st.st_size);
        info.last_use_ns = mtime_ns(st);
      }
      StatusOr<std::string> text = shard->read(name);
      if (text.ok()) {
        StatusOr<Manifest> parsed = Manifest::parse(*text);
        if (parsed.ok()) {
          info.manifest_ok = sha256_hex(*text) == key;
          info.manifest = parsed->entries();
          for (const auto& [field, value] : info.manifest) {
            if (field == "model_structure_sha256") info.model_structure_sha256 = value;
            if (field == "model_sha256") info.model_sha256 = value;
            if (field.starts_with("option.")) info.options[field.substr(7)] = value;
          }
        }
      }
      if (StatusOr<std::string> note = shard->read(model_note_name(key));
          note.ok() && note->ends_with("\n")) {
        info.model_file = note->substr(0, note->size() - 1);
      }
      out.push_back(std::move(info));
    }
  }
  std::sort(out.begin(), out.end(), [](const EntryInfo& a, const EntryInfo& b) { return a.key < b.key; });
  return out;
}

Status LocalStore::remove_locked(const std::string& key) {
  if (!is_valid_key(key)) return invalid_argument(key + ": not a cache key");
  StatusOr<DirHandle> shard = open_shard(key, /*create=*/false);
  if (!shard.ok()) {
    if (shard.status().code() == StatusCode::kNotFound)
      return not_found(key + ": no cache entry with this key");
    return shard.status();
  }
  const uint64_t bytes = entry_bytes(*shard, key);
  bool found = false;
  for (const std::string& name : {manifest_name(key), executable_name(key)}) {
    Status removed = shard->remove(name);
    if (removed.ok()) {
      found = true;
    } else if (removed.code() != StatusCode::kNotFound) {
      return removed;
    }
  }
  remove_quietly(*shard, model_note_name(key));
  if (!found) return not_found(key + ": no cache entry with this key");
  return adjust_size_locked(-static_cast<int64_t>(bytes));
}

Status LocalStore::remove(const std::string& key) {
  StatusOr<FileLock> lock = lock_stats(m_root);
  if (!lock.ok()) return lock.status();
  return remove_locked(key);
}

StatusOr<std::vector<std::string>> LocalStore::clear() {
  std::vector<std::string> removed;
  StatusOr<FileLock> lock = lock_stats(m_root);
  if (!lock.ok()) return lock.status();
  IPU_ASSIGN_OR_RETURN(std::vector<EntryInfo> entries, list());
  for (const EntryInfo& e : entries) {
    Status status = remove_locked(e.key);
    if (!status.ok() && status.code() != StatusCode::kNotFound) return status;
    removed.push_back(e.key);
  }
  // Links are never entries; one planted among them goes, and what it points to stays.
  IPU_ASSIGN_OR_RETURN(std::vector<DirChild> shards, m_entries.list());
  for (const DirChild& shard_child : shards) {
    if (shard_child.kind == DirChild::Kind::kLink) {
      Status status = m_entries.remove(shard_child.name);
      if (!status.ok() && status.code() != StatusCode::kNotFound) return status;
      continue;
    }
    if (shard_child.kind != DirChild::Kind::kDirectory) continue;
    StatusOr<DirHandle> shard = m_entries.open_subdir(shard_child.name, /*create=*/false);
    if (!shard.ok()) continue;
    StatusOr<std::vector<DirChild>> children = shard->list();
    if (!children.ok()) continue;
    for (const DirChild& child : *children) {
      if (child.kind != DirChild::Kind::kLink) continue;
      Status status = shard->remove(child.name);
      if (!status.ok() && status.code() != StatusCode::kNotFound) return status;
    }
  }
  return removed;
}

StatusOr<FileLock> LocalStore::lock_key(const std::string& key) {
  if (!is_valid_key(key)) return invalid_argument(key + ": not a cache key");
  IPU_ASSIGN_OR_RETURN(DirHandle locks, m_root.open_subdir("locks", /*create=*/true));
  return locks.lock(key + ".lock");
}

Status LocalStore::quarantine(const std::string& key) {
  if (!is_valid_key(key)) return invalid_argument(key + ": not a cache key");
  IPU_ASSIGN_OR_RETURN(DirHandle corrupt, m_root.open_subdir("corrupt", /*create=*/true));
  StatusOr<FileLock> lock = lock_stats(m_root);
  if (!lock.ok()) return lock.status();
  StatusOr<DirHandle> shard = open_shard(key, /*create=*/false);
  if (!shard.ok()) {
    if (shard.status().code() == StatusCode::kNotFound)
      return not_found(key + ": no cache entry with this key");
    return shard.status();
  }
  const uint64_t bytes = entry_bytes(*shard, key);
  bool found = false;
  // The manifest (the commit marker) goes first, so the entry stops being a hit at once.
  for (const std::string& name : {manifest_name(key), executable_name(key)}) {
    Status moved = shard->move(name, corrupt, name);
    if (moved.ok()) {
      found = true;
    } else if (moved.code() != StatusCode::kNotFound) {
      return moved;
    }
  }
  remove_quietly(*shard, model_note_name(key));
  if (!found) return not_found(key + ": no cache entry with this key");
  return adjust_size_locked(-static_cast<int64_t>(bytes));
}

StatusOr<uint64_t> LocalStore::total_bytes() {
  StatusOr<std::string> text = m_root.read("size");
  if (text.ok()) {
    StatusOr<uint64_t> value = parse_size_file(*text);
    if (value.ok()) return value;
  }
  return rescan_total_bytes();
}

StatusOr<uint64_t> LocalStore::rescan_total_bytes() {
  StatusOr<FileLock> lock = lock_stats(m_root);
  if (!lock.ok()) return lock.status();
  StatusOr<std::vector<EntryInfo>> entries = list();
  if (!entries.ok()) return entries.status();
  const uint64_t total = sum_bytes(*entries);
  IPU_RETURN_IF_ERROR(write_size(total));
  return total;
}

StatusOr<std::vector<std::string>> LocalStore::evict_to(uint64_t max_bytes) {
  std::vector<std::string> evicted;
  StatusOr<uint64_t> running = total_bytes();
  if (running.ok() && *running <= max_bytes) return evicted; // the common case: no scan
  StatusOr<FileLock> lock = lock_stats(m_root);
  if (!lock.ok()) return lock.status();
  StatusOr<std::vector<EntryInfo>> entries = list();
  if (!entries.ok()) return entries.status();
  uint64_t total = sum_bytes(*entries);
  std::sort(entries->begin(), entries->end(), [](const EntryInfo& a, const EntryInfo& b) {
    return a.last_use_ns != b.last_use_ns ? a.last_use_ns < b.last_use_ns : a.key < b.key;
  });
  for (const EntryInfo& e : *entries) {
    if (total <= max_bytes) break;
    StatusOr<DirHandle> shard = open_shard(e.key, /*create=*/false);
    if (!shard.ok() && shard.status().code() != StatusCode::kNotFound) {
      (void)write_size(total); // keep the running total true to what was removed
      return shard.status();
    }
    if (shard.ok()) {
      for (const std::string& name : {manifest_name(e.key), executable_name(e.key)}) {
        Status removed = shard->remove(name);
        if (!removed.ok() && removed.code() != StatusCode::kNotFound) {
          (void)write_size(total);
          return removed;
        }
      }
      remove_quietly(*shard, model_note_name(e.key));
    }
    total -= e.bytes;
    evicted.push_back(e.key);
  }
  IPU_RETURN_IF_ERROR(write_size(total));
  return evicted;
}

StatusOr<std::vector<std::string>> LocalStore::evict_older_than(int64_t cutoff_ns) {
  std::vector<std::string> evicted;
  StatusOr<FileLock> lock = lock_stats(m_root);
  if (!lock.ok()) return lock.status();
  StatusOr<std::vector<EntryInfo>> entries = list();
  if (!entries.ok()) return entries.status();
  std::sort(entries->begin(), entries->end(), [](const EntryInfo& a, const EntryInfo& b) {
    return a.last_use_ns != b.last_use_ns ? a.last_use_ns < b.last_use_ns : a.key < b.key;
  });
  for (const EntryInfo& e : *entries) {
    if (e.last_use_ns >= cutoff_ns) break;
    IPU_RETURN_IF_ERROR(remove_locked(e.key));
    evicted.push_back(e.key);
  }
  return evicted;
}

StatusOr<LookupResult> LocalStore::load_by_key(const std::string& key_or_prefix, bool touch_entry) {
  if (key_or_prefix.size() < kMinPrefixLength || !is_hex_prefix(key_or_prefix)) {
    return invalid_argument(key_or_prefix + ": not a cache key or key prefix (expected " +
                            std::to_string(kMinPrefixLength) + " to 64 lowercase hex characters)");
  }
  // Prefixes are at least 8 characters, so every candidate lives in one shard directory.
  StatusOr<DirHandle> shard = open_shard(key_or_prefix, /*create=*/false);
  if (!shard.ok()) {
    if (shard.status().code() == StatusCode::kNotFound) {
      return not_found(key_or_prefix + (is_valid_key(key_or_prefix)
                                            ? ": no cache entry with this key"
                                            : ": no cache entry with this key prefix"));
    }
    return shard.status();
  }
  std::string key = key_or_prefix;
  if (!is_valid_key(key)) {
    std::vector<std::string> candidates;
    IPU_ASSIGN_OR_RETURN(std::vector<DirChild> children, shard->list());
    for (const DirChild& child : children) {
      const std::string& name = child.name;
      if (child.kind != DirChild::Kind::kFile) continue;
      if (name.size() <= kManifestSuffix.size() || !name.ends_with(kManifestSuffix)) continue;
      std::string stem = name.substr(0, name.size() - kManifestSuffix.size());
      if (is_valid_key(stem) && stem.starts_with(key_or_prefix)) candidates.push_back(std::move(stem));
    }
    if (candidates.empty()) return not_found(key_or_prefix + ": no cache entry with this key prefix");
    if (candidates.size() > 1) {
      std::sort(candidates.begin(), candidates.end());
      std::string message = key_or_prefix + ": ambiguous key prefix, matches " +
                            std::to_string(candidates.size()) + " cache entries: ";
      for (size_t i = 0; i < candidates.size() && i < kMaxListedCandidates; ++i) {
        if (i > 0) message += ", ";
        message += candidates[i];
      }
      if (candidates.size() > kMaxListedCandidates) message += ", ...";
      return invalid_argument(message);
    }
    key = candidates.front();
  }

  LookupResult result;
  result.key = key;
  result.path = entry_path(key);
  const std::string stored_path = manifest_path(key);
  StatusOr<std::string> text = shard->read(manifest_name(key));
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kNotFound)
      return not_found(key + ": no cache entry with this key");
    return text.status();
  }
  // There is no requested manifest to compare with here, so check the entry against its own key.
  if (sha256_hex(*text) != key) return data_loss(stored_path + ": manifest does not hash to its key");
  StatusOr<Manifest> parsed = Manifest::parse(*text);
  if (!parsed.ok()) return data_loss(stored_path + ": " + parsed.status().message());
  StatusOr<FileBytes> executable = shard->map(executable_name(key));
  if (!executable.ok()) {
    if (executable.status().code() == StatusCode::kNotFound) {
      return data_loss(result.path + ": executable missing for committed cache entry");
    }
    return executable.status();
  }
  result.hit = true;
  result.executable = std::move(executable).value();
  result.manifest_text = std::move(text).value();
  if (touch_entry) touch(*shard, executable_name(key), result.warnings);
  return result;
}

} // namespace ipu::cache
