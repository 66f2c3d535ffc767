// What `ipurun EXECUTABLE` may name: an executable file, or a cache key (or a unique prefix of
// at least 8 hex digits) in the cache directory. A model (cli/run_model.h) is resolved apart.
//
// Whatever exists at the path EXECUTABLE is read as a file, and must be an executable: a directory,
// a device or other bytes are DataLoss (exit 7, like a corrupt executable). A missing path with
// '/' or '.' is a missing file (NotFound, exit 6). Any other name is a key: BadOption (exit 2, a
// usage error) when it is not 8 to 64 lowercase hex digits or when it prefixes several entries,
// NotFound when no entry has it.
#pragma once

#include <optional>
#include <string>

#include "compile_cache/cache_outcome.h"
#include "runtime/base/status.h"
#include "runtime/format/initial_data.h"

namespace ipu::cli {

struct ResolvedExecutable {
  format::LoadedExecutable loaded;
  std::string origin;                               // the file, "cache entry <key>", or the model file
  std::string key;                                  // the cache key, "" for an executable file
  std::optional<compile_cache::CacheOutcome> cache; // models only
  double compile_seconds = 0;                       // models only: time spent looking up and compiling
  std::string note; // models only: what the model chose for defaulted options (model_defaults_note)
};

StatusOr<ResolvedExecutable> resolve_executable(const std::string& name, const std::string& cache_dir);

// True if `name` is a model to compile rather than an executable: it ends in .onnx or .json.
bool names_a_model(const std::string& name);

} // namespace ipu::cli
