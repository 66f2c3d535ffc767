#include "cli/resolve_executable.h"

#include <sys/stat.h>

#include "cache/cache_dir.h"
#include "cache/local_store.h"
#include "cache/manifest.h"
#include "cli/executable_key.h"
#include "runtime/format/executable_file.h"

namespace ipu::cli {

StatusOr<ResolvedExecutable> resolve_executable(const std::string& name, const std::string& cache_dir) {
  struct stat st {};
  if (::stat(name.c_str(), &st) == 0 || !cache::is_hex_prefix(name)) {
    ResolvedExecutable file;
    IPU_ASSIGN_OR_RETURN(file.executable, format::read_executable_file(name));
    file.origin = name;
    return file;
  }
  IPU_ASSIGN_OR_RETURN(cache::LocalStore store, cache::LocalStore::open(cache_dir.empty() ? cache::default_cache_dir() : cache_dir));
  IPU_ASSIGN_OR_RETURN(cache::LookupResult entry, store.load_by_key(name));
  ResolvedExecutable cached;
  cached.origin = "cache entry " + entry.key;
  cached.key = entry.key;
  IPU_ASSIGN_OR_RETURN(cached.executable, format::parse_executable(entry.executable_bytes, cached.origin));
  // load_by_key checked that the manifest hashes to the key; the executable must belong to it.
  IPU_ASSIGN_OR_RETURN(cache::Manifest manifest, cache::Manifest::parse(entry.manifest_text));
  Status belongs = check_executable_key(cached.executable, manifest, entry.path);
  if (!belongs.ok()) return Status(belongs.code(), belongs.message() + " (run 'ipucc cache verify' to quarantine it)");
  return cached;
}

bool names_a_model(const std::string& name) { return name.ends_with(".onnx") || name.ends_with(".json"); }

}  // namespace ipu::cli
