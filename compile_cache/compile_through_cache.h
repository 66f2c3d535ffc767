// Compile through the cache: look the executable up, and on a miss take the key's lock, look
// again, compile, store and enforce the size limit. Shared by `ipucc compile` and `ipurun MODEL`
// so both use one key, one lock and one set of counters. The model file is read and parsed once
// (frontend::LoadedModel): its fingerprint and the options that default from it make the key, and
// a miss compiles that same parse.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cache/manifest.h"
#include "compile_cache/cache_outcome.h"
#include "compiler/driver/compile.h"
#include "compiler/frontend/loaded_model.h"
#include "runtime/base/file_io.h"
#include "runtime/base/status.h"
#include "runtime/format/initial_data.h"

namespace ipu::compile_cache {

// Every input that changes the compiled program (docs/cache.md): its key is the cache key. The
// model's weight values are not among them: a hit whose executable holds other values gets the
// model's (compile_through_cache).
cache::Manifest make_manifest(const compiler::CompileOptions& options, const frontend::LoadedModel& model);

struct CachedCompileRequest {
  compiler::CompileOptions options; // options.model_path names the model file
  std::string cache_dir;            // "": cache::default_cache_dir()
  bool use_cache = true;            // false: neither read nor write the cache
  bool force = false;               // compile even on a hit (the result is stored)
  // A hit whose executable serves as it is (its weights and run-time defaults are the model's) may
  // fill CachedCompile::summary alone, from the few kilobytes ahead of the payload: `ipucc compile`
  // prints a hit without inflating it. Its checksum and verification stay where it runs.
  bool summary_only = false;
  // Compile even on a hit and return the IR text (--dump-ir, and --dump-ir-after as the options
  // name it).
  bool keep_ir = false;
  // When set: compile even on a hit and fill it (compiler::compile_model), also when the compile
  // fails because a tile overflows (--report FILE.html).
  compiler::CompileReport* report = nullptr;
  // When set and a compile fails because a tile overflows: the memory plan that did not fit
  // (`ipucc compile --json`). Unlike `report`, it makes no hit compile.
  lowering::MemoryReport* overflow = nullptr;
  uint64_t max_size = 0;         // eviction limit after a store
  std::string remote_url;        // "": no remote cache (docs/cache.md, "Remote cache")
  bool remote_read_only = false; // look the remote cache up, never upload
};

struct CachedCompile {
  std::string key;
  CacheOutcome outcome = CacheOutcome::kMiss;
  std::string entry;                 // the entry's .ipuexe path; "" if the executable is not in the cache
  format::ExecutableSummary summary; // always
  uint64_t size = 0;                 // of the framed executable, in bytes
  // Both empty after a hit served by its summary alone (CachedCompileRequest::summary_only).
  FileBytes framed;                 // the framed executable: on a local hit, the entry's file mapped
  format::LoadedExecutable loaded;  // on a local hit, its initial values are `framed`'s data section
  compiler::CompileTimings timings; // zero on a hit
  std::string ir_text;
  std::vector<compiler::GraphPassRun> passes; // the compile's; none on a hit
  std::vector<std::string> notes;             // the compile's (compiler::CompileResult::notes); none on a hit
  double seconds = 0;                         // wall time of the whole call
};

// Called once per problem that only degrades caching (unusable directory, corrupt entry,
// failed put): the compile goes on.
using WarningSink = std::function<void(const std::string&)>;

// Errors are the model file's (NotFound, IoError) or the compiler's; cache trouble never fails
// a compile, it is reported through `warn`.
StatusOr<CachedCompile> compile_through_cache(const CachedCompileRequest& request, const WarningSink& warn);

} // namespace ipu::compile_cache
