#include "cache/local_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "cache/cache_stats.h"
#include "runtime/base/file_io.h"
#include "runtime/base/sha256.h"

namespace ipu::cache {
namespace {

namespace fs = std::filesystem;

constexpr size_t kMinPrefixLength = 8;
constexpr size_t kMaxListedCandidates = 5;
constexpr std::string_view kExecutableSuffix = ".ipuexe";
constexpr std::string_view kManifestSuffix = ".manifest";
constexpr std::string_view kModelNoteSuffix = ".model";

Status errno_status(const std::string& path, const std::string& what, int err) {
  std::string message = path + ": " + what + ": " + std::strerror(err);
  if (err == ENOENT) return not_found(message);
  return io_error(message);
}

// mkdir -p without exceptions.
Status make_directories(const std::string& path) {
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec) return errno_status(path, "cannot create directory", ec.value());
  // Whatever already exists at the path must be a directory we can put entries into.
  if (!fs::is_directory(path, ec)) return io_error(path + ": exists and is not a directory");
  return Status();
}

// Removal is best effort: it runs on a path that is already failing.
void remove_quietly(const std::string& path) {
  ::unlink(path.c_str());
}

int64_t mtime_ns(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

uint64_t sum_bytes(const std::vector<EntryInfo>& entries) {
  uint64_t total = 0;
  for (const EntryInfo& e : entries) total += e.bytes;
  return total;
}

Status write_size_file(const std::string& path, uint64_t total) {
  return write_file_atomic(path, std::to_string(total) + "\n");
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

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// Marks an entry as recently used. A read-only shared cache cannot be touched, which only makes
// eviction order less precise, so permission errors stay silent.
void touch(const std::string& path, std::vector<std::string>& warnings) {
  if (::utimensat(AT_FDCWD, path.c_str(), nullptr, 0) == 0) return;
  int err = errno;
  if (err == EACCES || err == EPERM || err == EROFS) return;
  warnings.push_back(path + ": cannot update modification time: " + std::strerror(err));
}

} // namespace

StatusOr<LocalStore> LocalStore::open(const std::string& dir) {
  if (dir.empty()) return invalid_argument("cache directory path is empty");
  std::string root = dir;
  while (root.size() > 1 && root.back() == '/')
    root.pop_back();
  Status status = make_directories(root + "/entries");
  if (!status.ok()) return Status(status.code(), root + ": cannot open cache directory: " + status.message());
  return LocalStore(std::move(root));
}

std::string LocalStore::shard_dir(const std::string& key) const {
  return m_dir + "/entries/" + key.substr(0, 2);
}

std::string LocalStore::entry_path(const std::string& key) const {
  if (!is_valid_key(key)) return "";
  return shard_dir(key) + "/" + key + std::string(kExecutableSuffix);
}

std::string LocalStore::manifest_path(const std::string& key) const {
  if (!is_valid_key(key)) return "";
  return shard_dir(key) + "/" + key + std::string(kManifestSuffix);
}

std::string LocalStore::model_note_path(const std::string& key) const {
  if (!is_valid_key(key)) return "";
  return shard_dir(key) + "/" + key + std::string(kModelNoteSuffix);
}

StatusOr<LookupResult> LocalStore::lookup(const Manifest& manifest) {
  LookupResult result;
  const std::string expected = manifest.canonical_text();
  result.key = sha256_hex(expected);
  result.path = entry_path(result.key);
  const std::string stored_path = manifest_path(result.key);

  StatusOr<std::string> stored = read_file(stored_path);
  if (!stored.ok()) {
    if (stored.status().code() != StatusCode::kNotFound) {
      result.warnings.push_back(stored.status().message() + " (treated as a cache miss)");
    } else {
      result.uncommitted_executable = file_exists(result.path);
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
  StatusOr<std::string> bytes = read_file(result.path);
  if (!bytes.ok()) {
    result.warnings.push_back(bytes.status().message() + " (treated as a cache miss)");
    return result;
  }
  result.hit = true;
  result.executable_bytes = std::move(bytes).value();
  result.manifest_text = std::move(stored).value();
  touch(result.path, result.warnings);
  return result;
}

Status LocalStore::put(const Manifest& manifest, std::string_view executable_bytes, const std::string& model_file) {
  const std::string text = manifest.canonical_text();
  const std::string key = sha256_hex(text);
  const std::string exe_path = entry_path(key);
  const std::string stored_path = manifest_path(key);
  IPU_RETURN_IF_ERROR(make_directories(shard_dir(key)));
  const uint64_t old_bytes = entry_bytes(key);

  // Both files are replaced atomically, so a reader sees whole files only; an entry being
  // rewritten holds an executable built from the same inputs (the key covers them all), so an
  // old manifest beside a new executable is still a true pair. Removing the manifest first
  // would make concurrent readers see spurious misses.
  Status status = write_file_atomic(exe_path, executable_bytes);
  if (status.ok()) status = write_file_atomic(stored_path, text);
  if (!status.ok()) {
    remove_quietly(stored_path);
    remove_quietly(exe_path);
    return status;
  }
  if (!model_file.empty()) {
    std::error_code ec;
    const fs::path absolute = fs::absolute(model_file, ec).lexically_normal();
    if (!ec) (void)write_file_atomic(model_note_path(key), absolute.string() + "\n");
  }
  // The running size is bookkeeping: the entry is committed even if it cannot be updated (the
  // next total_bytes() or eviction rescans a missing or damaged size file).
  StatusOr<FileLock> lock = lock_stats(m_dir);
  if (!lock.ok()) return lock.status();
  return adjust_size_locked(static_cast<int64_t>(entry_bytes(key)) - static_cast<int64_t>(old_bytes));
}

uint64_t LocalStore::entry_bytes(const std::string& key) const {
  uint64_t total = 0;
  struct stat st {};
  if (::stat(entry_path(key).c_str(), &st) == 0) total += static_cast<uint64_t>(st.st_size);
  if (::stat(manifest_path(key).c_str(), &st) == 0) total += static_cast<uint64_t>(st.st_size);
  return total;
}

Status LocalStore::adjust_size_locked(int64_t delta) {
  StatusOr<std::string> text = read_file(size_path());
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
  return write_size_file(size_path(), total);
}

StatusOr<std::vector<EntryInfo>> LocalStore::list() const {
  std::vector<EntryInfo> out;
  const std::string root = m_dir + "/entries";
  std::error_code ec;
  fs::directory_iterator shards(root, ec);
  if (ec) {
    if (ec.value() == ENOENT) return out;
    return errno_status(root, "cannot list cache entries", ec.value());
  }
  for (; shards != fs::directory_iterator(); shards.increment(ec)) {
    if (ec) return errno_status(root, "cannot list cache entries", ec.value());
    std::error_code ec2;
    if (!shards->is_directory(ec2)) continue;
    const std::string shard = shards->path().string();
    fs::directory_iterator it(shard, ec2);
    for (; !ec2 && it != fs::directory_iterator(); it.increment(ec2)) {
      std::string name = it->path().filename().string();
      if (name.size() <= kManifestSuffix.size() || !name.ends_with(kManifestSuffix)) continue;
      std::string key = name.substr(0, name.size() - kManifestSuffix.size());
      if (!is_valid_key(key)) continue;
      EntryInfo info;
      info.key = key;
      struct stat st {};
      if (::stat(manifest_path(key).c_str(), &st) != 0) continue;  // removed meanwhile
      info.bytes = static_cast<uint64_t>(st.st_size);
      info.last_use_ns = mtime_ns(st);
      if (::stat(entry_path(key).c_str(), &st) == 0) {
        info.executable_present = true;
        info.bytes += static_cast<uint64_t>(st.st_size);
        info.last_use_ns = mtime_ns(st);
      }
      StatusOr<std::string> text = read_file(manifest_path(key));
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
      if (StatusOr<std::string> note = read_file(model_note_path(key)); note.ok() && note->ends_with("\n")) {
        info.model_file = note->substr(0, note->size() - 1);
      }
      out.push_back(std::move(info));
    }
    if (ec2 && ec2.value() != ENOENT) return errno_status(shard, "cannot list cache entries", ec2.value());
  }
  std::sort(out.begin(), out.end(), [](const EntryInfo& a, const EntryInfo& b) { return a.key < b.key; });
  return out;
}

Status LocalStore::remove_locked(const std::string& key) {
  if (!is_valid_key(key)) return invalid_argument(key + ": not a cache key");
  const uint64_t bytes = entry_bytes(key);
  bool found = false;
  for (const std::string& path : {manifest_path(key), entry_path(key)}) {
    if (::unlink(path.c_str()) == 0) {
      found = true;
    } else if (errno != ENOENT) {
      return errno_status(path, "cannot remove cache entry", errno);
    }
  }
  remove_quietly(model_note_path(key));
  if (!found) return not_found(key + ": no cache entry with this key");
  return adjust_size_locked(-static_cast<int64_t>(bytes));
}

Status LocalStore::remove(const std::string& key) {
  StatusOr<FileLock> lock = lock_stats(m_dir);
  if (!lock.ok()) return lock.status();
  return remove_locked(key);
}

StatusOr<FileLock> LocalStore::lock_key(const std::string& key) {
  if (!is_valid_key(key)) return invalid_argument(key + ": not a cache key");
  IPU_RETURN_IF_ERROR(make_directories(m_dir + "/locks"));
  return FileLock::acquire(m_dir + "/locks/" + key + ".lock");
}

Status LocalStore::quarantine(const std::string& key) {
  if (!is_valid_key(key)) return invalid_argument(key + ": not a cache key");
  IPU_RETURN_IF_ERROR(make_directories(corrupt_dir()));
  StatusOr<FileLock> lock = lock_stats(m_dir);
  if (!lock.ok()) return lock.status();
  const uint64_t bytes = entry_bytes(key);
  bool found = false;
  // The manifest (the commit marker) goes first, so the entry stops being a hit at once.
  for (const auto& [from, suffix] : {std::pair{manifest_path(key), kManifestSuffix},
                                     std::pair{entry_path(key), kExecutableSuffix}}) {
    const std::string to = corrupt_dir() + "/" + key + std::string(suffix);
    if (::rename(from.c_str(), to.c_str()) == 0) {
      found = true;
    } else if (errno != ENOENT) {
      return errno_status(from, "cannot move cache entry to " + corrupt_dir(), errno);
    }
  }
  remove_quietly(model_note_path(key));
  if (!found) return not_found(key + ": no cache entry with this key");
  return adjust_size_locked(-static_cast<int64_t>(bytes));
}

StatusOr<uint64_t> LocalStore::total_bytes() {
  StatusOr<std::string> text = read_file(size_path());
  if (text.ok()) {
    StatusOr<uint64_t> value = parse_size_file(*text);
    if (value.ok()) return value;
  }
  return rescan_total_bytes();
}

StatusOr<uint64_t> LocalStore::rescan_total_bytes() {
  StatusOr<FileLock> lock = lock_stats(m_dir);
  if (!lock.ok()) return lock.status();
  StatusOr<std::vector<EntryInfo>> entries = list();
  if (!entries.ok()) return entries.status();
  const uint64_t total = sum_bytes(*entries);
  IPU_RETURN_IF_ERROR(write_size_file(size_path(), total));
  return total;
}

StatusOr<std::vector<std::string>> LocalStore::evict_to(uint64_t max_bytes) {
  std::vector<std::string> evicted;
  StatusOr<uint64_t> running = total_bytes();
  if (running.ok() && *running <= max_bytes) return evicted;  // the common case: no scan
  StatusOr<FileLock> lock = lock_stats(m_dir);
  if (!lock.ok()) return lock.status();
  StatusOr<std::vector<EntryInfo>> entries = list();
  if (!entries.ok()) return entries.status();
  uint64_t total = sum_bytes(*entries);
  std::sort(entries->begin(), entries->end(), [](const EntryInfo& a, const EntryInfo& b) {
    return a.last_use_ns != b.last_use_ns ? a.last_use_ns < b.last_use_ns : a.key < b.key;
  });
  for (const EntryInfo& e : *entries) {
    if (total <= max_bytes) break;
    for (const std::string& path : {manifest_path(e.key), entry_path(e.key)}) {
      if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
        Status failed = errno_status(path, "cannot remove cache entry", errno);
        (void)write_size_file(size_path(), total);  // keep the running total true to what was removed
        return failed;
      }
    }
    remove_quietly(model_note_path(e.key));
    total -= e.bytes;
    evicted.push_back(e.key);
  }
  IPU_RETURN_IF_ERROR(write_size_file(size_path(), total));
  return evicted;
}

StatusOr<std::vector<std::string>> LocalStore::evict_older_than(int64_t cutoff_ns) {
  std::vector<std::string> evicted;
  StatusOr<FileLock> lock = lock_stats(m_dir);
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
  std::string key = key_or_prefix;
  if (!is_valid_key(key)) {
    // Prefixes are at least 8 characters, so every candidate lives in one shard directory.
    std::vector<std::string> candidates;
    const std::string shard = shard_dir(key_or_prefix);
    std::error_code ec;
    fs::directory_iterator it(shard, ec);
    if (ec && ec.value() != ENOENT) return errno_status(shard, "cannot list cache entries", ec.value());
    for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
      std::string name = it->path().filename().string();
      if (name.size() <= kManifestSuffix.size() || !name.ends_with(kManifestSuffix)) continue;
      std::string stem = name.substr(0, name.size() - kManifestSuffix.size());
      if (is_valid_key(stem) && stem.starts_with(key_or_prefix)) candidates.push_back(std::move(stem));
    }
    if (ec && ec.value() != ENOENT) return errno_status(shard, "cannot list cache entries", ec.value());
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
  StatusOr<std::string> text = read_file(stored_path);
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kNotFound)
      return not_found(key + ": no cache entry with this key");
    return text.status();
  }
  // There is no requested manifest to compare with here, so check the entry against its own key.
  if (sha256_hex(*text) != key) return data_loss(stored_path + ": manifest does not hash to its key");
  StatusOr<Manifest> parsed = Manifest::parse(*text);
  if (!parsed.ok()) return data_loss(stored_path + ": " + parsed.status().message());
  StatusOr<std::string> bytes = read_file(result.path);
  if (!bytes.ok()) {
    if (bytes.status().code() == StatusCode::kNotFound) {
      return data_loss(result.path + ": executable missing for committed cache entry");
    }
    return bytes.status();
  }
  result.hit = true;
  result.executable_bytes = std::move(bytes).value();
  result.manifest_text = std::move(text).value();
  if (touch_entry) touch(result.path, result.warnings);
  return result;
}

} // namespace ipu::cache
