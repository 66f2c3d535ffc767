#include "cli/run_model.h"

#include "cli/compile_options.h"
#include "compile_cache/compile_through_cache.h"

namespace ipu::cli {

StatusOr<ResolvedExecutable> executable_for_model(const std::string& model, const CompileFlags& flags,
                                                  const CacheUseFlags& cache, uint64_t max_size,
                                                  const std::string& default_mode,
                                                  const std::function<void(const std::string&)>& warn) {
  compile_cache::CachedCompileRequest request;
  IPU_ASSIGN_OR_RETURN(request.options, to_compile_options(flags, model, default_mode));
  request.cache_dir = cache.cache_dir;
  request.use_cache = !cache.no_cache;
  request.max_size = max_size;
  // check_usage in ipurun_main.cpp has rejected a malformed URL.
  StatusOr<std::string> remote = remote_cache_url(cache);
  request.remote_url = remote.ok() ? *remote : "";
  request.remote_read_only = remote_cache_read_only(cache);
  IPU_ASSIGN_OR_RETURN(compile_cache::CachedCompile compiled,
                       compile_cache::compile_through_cache(request, warn));
  ResolvedExecutable resolved;
  resolved.loaded = std::move(compiled.loaded);
  resolved.origin = model;
  resolved.key = compiled.key;
  resolved.cache = compiled.outcome;
  resolved.compile_seconds = compiled.seconds;
  resolved.note = model_defaults_note(flags, model, compiled.summary);
  return resolved;
}

} // namespace ipu::cli
