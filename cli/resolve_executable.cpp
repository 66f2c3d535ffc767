#include "cli/resolve_executable.h"

#include <sys/stat.h>

#include "cache/cache_dir.h"
#include "cache/local_store.h"
#include "cache/manifest.h"
#include "compile_cache/executable_key.h"
#include "runtime/format/executable_file.h"

namespace ipu::cli {
namespace {

// A name that can only mean a file: a path or a file name with an extension. Keys are bare hex.
bool looks_like_a_path(const std::string& name) {
  return name.find_first_of("/.") != std::string::npos;
}

StatusOr<ResolvedExecutable> read_file_executable(const std::string& name, const struct stat* st) {
  if (st && S_ISDIR(st->st_mode)) return data_loss(name + ": is a directory, not an ipucc executable");
  // A device such as /dev/zero would be read without end; a FIFO (a shell's <(...)) is fine.
  if (st && !S_ISREG(st->st_mode) && !S_ISFIFO(st->st_mode)) {
    return data_loss(name + ": is not a regular file, not an ipucc executable");
  }
  ResolvedExecutable file;
  IPU_ASSIGN_OR_RETURN(file.loaded, format::load_executable_file(name));
  file.origin = name;
  return file;
}

} // namespace

StatusOr<ResolvedExecutable> resolve_executable(const std::string& name, const std::string& cache_dir) {
  struct stat st {};
  if (::stat(name.c_str(), &st) == 0) return read_file_executable(name, &st);
  if (looks_like_a_path(name)) return read_file_executable(name, nullptr); // missing: NotFound, exit 6
  if (!cache::is_hex_prefix(name)) {
    return bad_option(name + ": no file of that name, and not a cache key or key prefix (expected 8 to 64 "
                             "lowercase hex characters)");
  }
  IPU_ASSIGN_OR_RETURN(cache::LocalStore store,
                       cache::LocalStore::open(cache_dir.empty() ? cache::default_cache_dir() : cache_dir));
  StatusOr<cache::LookupResult> entry = store.load_by_key(name);
  if (!entry.ok()) {
    const Status& status = entry.status();
    // Too few digits, or an ambiguous prefix: the command line must say more, as for `ipucc cache show`.
    return status.code() == StatusCode::kInvalidArgument ? bad_option(status.message()) : status;
  }
  ResolvedExecutable cached;
  cached.origin = "cache entry " + entry->key;
  cached.key = entry->key;
  IPU_ASSIGN_OR_RETURN(cached.loaded, format::load_executable(std::move(entry->executable), cached.origin));
  // load_by_key checked that the manifest hashes to the key; the executable must belong to it.
  IPU_ASSIGN_OR_RETURN(cache::Manifest manifest, cache::Manifest::parse(entry->manifest_text));
  Status belongs =
      compile_cache::check_executable_key(cached.loaded.executable.manifest(), manifest, entry->path);
  if (!belongs.ok())
    return Status(belongs.code(), belongs.message() + " (run 'ipucc cache verify' to quarantine it)");
  return cached;
}

bool names_a_model(const std::string& name) {
  return name.ends_with(".onnx") || name.ends_with(".json");
}

} // namespace ipu::cli
