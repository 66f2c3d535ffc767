#include "cli/resolve_executable.h"

#include <sys/stat.h>

#include "cache/cache_dir.h"
#include "cache/local_store.h"
#include "cache/manifest.h"
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
  return cached;
}

bool names_a_model(const std::string& name) { return name.ends_with(".onnx") || name.ends_with(".json"); }

}  // namespace ipu::cli
