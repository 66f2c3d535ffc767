// What `ipurun EXECUTABLE` may name: an executable file, or a cache key (or a unique prefix of
// at least 8 hex digits) in the cache directory.
#pragma once

#include <string>

#include "runtime/base/status.h"
#include "runtime/format/executable.pb.h"

namespace ipu::cli {

struct ResolvedExecutable {
  format::Executable executable;
  std::string origin;  // the file, or "cache entry <key>"
};

StatusOr<ResolvedExecutable> resolve_executable(const std::string& name, const std::string& cache_dir);

}  // namespace ipu::cli
