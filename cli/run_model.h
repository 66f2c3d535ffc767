// `ipurun MODEL`: the executable of a model and options, from the cache or compiled into it
// through the same path as `ipucc compile` (compile_cache/compile_through_cache.h). In a build without the
// compiler (-DIPUCC_BUILD_COMPILER=OFF) this is Unsupported.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "cli/compile_flags.h"
#include "cli/resolve_executable.h"
#include "runtime/base/status.h"

namespace ipu::cli {

// `default_mode` applies when flags.mode is empty. Cache problems are reported through `warn`
// and never fail the run; `max_size` is the eviction limit after a compile.
StatusOr<ResolvedExecutable> executable_for_model(const std::string& model, const CompileFlags& flags,
                                                  const CacheUseFlags& cache, uint64_t max_size,
                                                  const std::string& default_mode,
                                                  const std::function<void(const std::string&)>& warn);

} // namespace ipu::cli
