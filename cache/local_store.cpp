#include "cache/local_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "runtime/base/file_io.h"
#include "runtime/base/sha256.h"

namespace ipu::cache {
namespace {

namespace fs = std::filesystem;

constexpr size_t kMinPrefixLength = 8;
constexpr size_t kMaxListedCandidates = 5;
constexpr std::string_view kExecutableSuffix = ".ipuexe";
constexpr std::string_view kManifestSuffix = ".manifest";

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
    } else if (file_exists(result.path)) {
      // A put that crashed before its commit marker, or a manifest removed by hand.
      result.warnings.push_back(stored_path + ": manifest missing for cached executable of key " +
                                result.key + " (treated as a cache miss)");
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

Status LocalStore::put(const Manifest& manifest, std::string_view executable_bytes) {
  const std::string text = manifest.canonical_text();
  const std::string key = sha256_hex(text);
  const std::string exe_path = entry_path(key);
  const std::string stored_path = manifest_path(key);
  IPU_RETURN_IF_ERROR(make_directories(shard_dir(key)));

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
  return Status();
}

StatusOr<LookupResult> LocalStore::load_by_key(const std::string& key_or_prefix) {
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
  touch(result.path, result.warnings);
  return result;
}

} // namespace ipu::cache
