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
    IPU_ASSIGN_OR_RETURN(format::Executable exe, format::read_executable_file(name));
    return ResolvedExecutable{std::move(exe), name};
  }
  IPU_ASSIGN_OR_RETURN(cache::LocalStore store, cache::LocalStore::open(cache_dir.empty() ? cache::default_cache_dir() : cache_dir));
  IPU_ASSIGN_OR_RETURN(cache::LookupResult entry, store.load_by_key(name));
  const std::string origin = "cache entry " + entry.key;
  IPU_ASSIGN_OR_RETURN(format::Executable exe, format::parse_executable(entry.executable_bytes, origin));
  return ResolvedExecutable{std::move(exe), origin};
}

}  // namespace ipu::cli
