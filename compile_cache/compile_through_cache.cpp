#include "compile_cache/compile_through_cache.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>

#include "cache/cache_dir.h"
#include "cache/cache_stats.h"
#include "cache/file_lock.h"
#include "cache/local_store.h"
#include "cache/remote_store.h"
#include "compile_cache/compiler_identity.h"
#include "compile_cache/executable_key.h"
#include "runtime/base/file_io.h"
#include "runtime/format/executable_file.h"
#include "runtime/format/executable_summary.h"
#include "runtime/format/hyper_parameters.h"

namespace ipu::compile_cache {
namespace {

// 2: the model's structure (model_structure_sha256) instead of its whole file (model_sha256).
// 3: training options by the values the compile uses. 4: the optimizer's hyper-parameter values
// are run-time values, keyed only by what they change of the program (hyper_parameters_read).
constexpr const char* kKeySchemaVersion = "4";

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Bytes a summary-only lookup reads of the executable: its header and a summary of up to
// almost 64 KiB (a larger one is read whole).
constexpr uint64_t kSummaryReadBytes = uint64_t{1} << 16;

// Whether an entry's summary shows that its executable serves this compile as it is
// (serve_from_cache changes nothing), so a summary-only hit need not read the rest.
using SummaryServes = std::function<bool(const format::ExecutableSummary&)>;

// The cache side of one compile: lookups that may hit, and the bookkeeping around them.
class CacheSession {
public:
  // With `summary_serves`, a hit it accepts fills only CachedCompile::summary and size.
  CacheSession(cache::LocalStore& store, const cache::Manifest& manifest, const WarningSink& warn,
               SummaryServes summary_serves)
      : m_store(store), m_manifest(manifest), m_key(manifest.key()), m_warn(warn),
        m_summary_serves(std::move(summary_serves)) {}

  // Loads the entry if the cache has a sound one; a damaged entry, or one holding an executable
  // compiled for another key, never runs: it is moved aside for inspection and the model
  // compiled again. Takes the key's lock after a first miss and looks again, so concurrent
  // compiles of one key compile once; the lock is then held until this session ends (after the
  // store).
  bool try_hit(CachedCompile& out) {
    if (try_hit_once(out, false)) return true;
    auto locked = m_store.lock_key(m_key);
    if (!locked.ok()) {
      write_failed(locked.status());
      return false;
    }
    m_key_lock.emplace(std::move(*locked));
    return try_hit_once(out, true); // another process may have compiled it while we waited
  }

  // Statistics are bookkeeping: failing to update them warns, never fails the compile.
  void count(const cache::CacheStats& delta) {
    if (!m_writable) return;
    Status s = cache::add_stats(m_store.root(), delta);
    if (!s.ok()) write_failed(s);
  }

  // A cache that cannot be written (read-only, full, someone else's) still serves hits. The
  // first failed write turns writing off for the rest of the compile with one warning, so the
  // user hears of it once and no half-done bookkeeping follows.
  bool writable() const { return m_writable; }
  void write_failed(const Status& status) {
    if (!m_writable) return;
    m_writable = false;
    m_warn(status.message() + "; the cache cannot be written: nothing is stored or counted");
  }

  cache::CacheStats& delta() { return m_delta; }

private:
  // `holding_lock`: no other compile of this key is between writing its executable and its
  // manifest, so an executable without a manifest is a dead put worth reporting.
  bool try_hit_once(CachedCompile& out, bool holding_lock) {
    auto found = m_store.lookup(m_manifest, m_summary_serves ? kSummaryReadBytes : UINT64_MAX);
    if (!found.ok()) {
      say(found.status().message());
      return false;
    }
    for (const auto& w : found->warnings)
      say(w);
    if (found->uncommitted_executable && holding_lock) {
      say(found->path +
          ": executable without its manifest (a compile that died before committing); treated as a "
          "cache miss");
    }
    if (!found->hit) return false;
    if (m_summary_serves) {
      if (serve_summary(*found, out)) return true;
      // The whole executable decides, and names what is wrong if anything is.
      found = m_store.lookup(m_manifest);
      if (!found.ok() || !found->hit) return false;
    }
    auto loaded = format::load_executable(found->executable, found->path);
    const Status usable =
        loaded.ok() ? check_cache_entry(loaded->executable, m_manifest, found->path) : loaded.status();
    if (usable.ok()) {
      out.framed = std::move(found->executable);
      out.loaded = std::move(*loaded);
      return true;
    }
    Status moved = m_store.quarantine(m_key);
    if (moved.ok()) {
      m_delta.corrupt_found += 1;
      say(usable.message() + "; moved to " + m_store.corrupt_dir() + "; recompiling");
    } else {
      say(usable.message() + "; recompiling (" + moved.message() + ")");
    }
    return false;
  }

  // A hit from the header and summary alone: sound, recorded for this key, and serving as it is.
  bool serve_summary(const cache::LookupResult& found, CachedCompile& out) const {
    const std::string_view head = found.executable.bytes;
    StatusOr<uint64_t> end = format::executable_summary_end(head, found.executable_size, found.path);
    if (!end.ok() || *end > head.size()) return false;
    StatusOr<format::ExecutableSummary> summary =
        format::parse_executable_summary(head, found.executable_size, found.path);
    if (!summary.ok() || !check_executable_key(summary->manifest(), m_manifest, found.path).ok() ||
        !m_summary_serves(*summary)) {
      return false;
    }
    out.summary = std::move(*summary);
    out.size = found.executable_size;
    return true;
  }

  // The lookup runs twice (before and after taking the key's lock) and usually finds the same
  // trouble twice (a stored manifest that does not match): the user hears of it once.
  void say(const std::string& message) {
    if (m_said.insert(message).second) m_warn(message);
  }

  cache::LocalStore& m_store;
  const cache::Manifest& m_manifest;
  std::string m_key;
  const WarningSink& m_warn;
  SummaryServes m_summary_serves;
  cache::CacheStats m_delta;
  std::optional<cache::FileLock> m_key_lock;
  std::set<std::string> m_said;
  bool m_writable = true;
};

void set_recorded_weights(format::Executable& exe, const std::string& digest) {
  for (auto& entry : *exe.mutable_manifest()) {
    if (entry.name() == kWeightsField) {
      entry.set_value(digest);
      return;
    }
  }
  auto* entry = exe.add_manifest();
  entry->set_name(kWeightsField);
  entry->set_value(digest);
}

// Frames what `out` holds after a change to it.
void reframe(CachedCompile& out) {
  out.framed =
      FileBytes::owning(format::serialize_executable(out.loaded.executable, out.loaded.initial_data));
}

// The hyper-parameters and learning-rate schedule are not keyed: a hit compiled with other values
// gets this compile's as its defaults, as if compiled with them (docs/cache.md).
void use_run_time_defaults(CachedCompile& out, const frontend::LoadedModel& model,
                           const compiler::CompileOptions& options) {
  const std::optional<compiler::RunTimeDefaults> defaults = compiler::run_time_defaults(model, options);
  if (!defaults) return;
  format::Executable& exe = out.loaded.executable;
  if (format::hyper_parameter_defaults(exe) == defaults->values &&
      exe.learning_rate_schedule() == defaults->learning_rate_schedule) {
    return;
  }
  format::set_hyper_parameter_defaults(exe, defaults->values);
  exe.set_learning_rate_schedule(defaults->learning_rate_schedule);
  reframe(out);
}

// Gives every weight of `loaded` the initial value the model holds for it, in the message. The
// structures match (equal keys), so each weight has a value of its size; anything else is
// reported, never run.
Status use_model_weights(format::LoadedExecutable& loaded, const frontend::LoadedModel& model) {
  const std::string& model_path = model.path();
  IPU_ASSIGN_OR_RETURN(auto weights, model.weights());
  for (auto& tensor : *loaded.executable.mutable_tensors()) {
    const std::string_view held = loaded.initial_data.of(tensor);
    if (tensor.role() != format::WEIGHT || held.empty()) continue;
    auto value = weights.find(tensor.name());
    if (value == weights.end() || value->second.size() != held.size()) {
      return data_loss(model_path + ": weight '" + tensor.name() +
                       "' of the cached executable has no value of " + std::to_string(held.size()) +
                       " bytes in the model");
    }
    tensor.clear_initial_data();
    tensor.set_initial_value(value->second);
  }
  return Status();
}

// The remote side of one compile: consulted after a local miss, uploaded to after a compile.
// Nothing it returns is trusted: the manifest must equal the expected one byte for byte, the
// executable must parse and belong to the key (compile_cache/executable_key.h). A failed request warns and
// turns the remote cache off for the rest of the compile; a rejected entry warns too but is then
// replaced by the upload of this compile. A 404 is a plain miss. One warning per compile at most.
class RemoteSession {
public:
  RemoteSession(cache::RemoteStore remote, bool read_only, const WarningSink& warn)
      : m_remote(std::move(remote)), m_read_only(read_only), m_warn(warn) {}

  // The remote entry of `manifest`, verified, into out.framed / out.loaded.
  bool try_hit(const cache::Manifest& manifest, CachedCompile& out, cache::CacheStats& delta) {
    const std::string key = manifest.key();
    auto fetched = m_remote.fetch(key);
    if (!fetched.ok()) {
      if (fetched.status().code() == StatusCode::kNotFound) {
        delta.remote_misses += 1;
      } else {
        failed(fetched.status(), delta);
      }
      return false;
    }
    const std::string where = m_remote.url() + "/" + key.substr(0, 2) + "/" + key;
    auto checked = check_fetched_entry(fetched->manifest_text, fetched->executable_bytes, manifest, where);
    if (!checked.ok()) {
      rejected(checked.status().message(), delta);
      return false;
    }
    out.framed = FileBytes::owning(std::move(fetched->executable_bytes));
    out.loaded.executable = std::move(*checked);
    delta.remote_hits += 1;
    return true;
  }

  // Uploads a compiled entry unless read-only or the remote cache already failed.
  void upload(const cache::Manifest& manifest, std::string_view bytes, cache::CacheStats& delta) {
    if (m_read_only || m_failed) return;
    Status put = m_remote.put(manifest.key(), manifest.canonical_text(), bytes);
    if (!put.ok()) failed(put, delta);
  }

private:
  void failed(const Status& status, cache::CacheStats& delta) {
    delta.remote_errors += 1;
    m_failed = true;
    warn_once(status.message() + "; remote cache " + m_remote.url() + " not used for this compile");
  }

  void rejected(const std::string& why, cache::CacheStats& delta) {
    delta.remote_errors += 1;
    warn_once(why + "; remote entry rejected" + (m_read_only ? "" : ", to be replaced after compiling"));
  }

  void warn_once(const std::string& message) {
    if (m_warned) return;
    m_warned = true;
    m_warn(message);
  }

  cache::RemoteStore m_remote;
  bool m_read_only = false;
  const WarningSink& m_warn;
  bool m_failed = false;
  bool m_warned = false;
};

// The cache is an accelerator: if it cannot be opened, compile anyway and say so once.
std::unique_ptr<cache::LocalStore> open_local_store(const CachedCompileRequest& request,
                                                    const WarningSink& warn, CacheOutcome& outcome) {
  if (request.use_cache) {
    auto opened =
        cache::LocalStore::open(request.cache_dir.empty() ? cache::default_cache_dir() : request.cache_dir);
    if (opened.ok()) return std::make_unique<cache::LocalStore>(std::move(*opened));
    warn(opened.status().message() + "; compiling without the cache");
  }
  outcome = CacheOutcome::kDisabled;
  return nullptr;
}

// Where a lookup found the entry: in the local cache, or in the remote one (then stored locally
// too when the local cache can be written).
struct CacheLookup {
  bool hit = false;
  bool remote_hit = false;
  bool in_local_cache = false;
};

// The local cache, then the remote one: a found entry goes into out.framed / out.loaded.
CacheLookup look_up(const CachedCompileRequest& request, const cache::Manifest& manifest,
                    cache::LocalStore& store, CacheSession& session, std::optional<RemoteSession>& remote,
                    CachedCompile& out) {
  CacheLookup found;
  found.hit = session.try_hit(out);
  found.in_local_cache = found.hit;
  if (!found.hit && remote) {
    found.remote_hit = remote->try_hit(manifest, out, session.delta());
    if (found.remote_hit && session.writable()) {
      Status put = store.put(manifest, out.framed.bytes, request.options.model_path);
      if (put.ok()) {
        found.in_local_cache = true;
      } else {
        session.write_failed(put);
      }
    }
  }
  return found;
}

// Makes a found entry this compile's (the model's weights, this compile's run-time defaults) and
// counts the lookup. False when there is nothing to serve: a miss, or a hit the model's weights
// do not fit, which then compiles.
bool serve_from_cache(const CacheLookup& found, const frontend::LoadedModel& model,
                      const std::string& weights_sha256, const compiler::CompileOptions& options,
                      cache::LocalStore& store, CacheSession& session, const WarningSink& warn,
                      CachedCompile& out) {
  bool hit = found.hit, remote_hit = found.remote_hit;
  if ((hit || remote_hit) && !out.framed.bytes.empty() &&
      recorded_weights(out.loaded.executable.manifest()) != weights_sha256) {
    // The entry was compiled from a model with the same structure and other weight values.
    Status swapped = use_model_weights(out.loaded, model);
    if (swapped.ok()) {
      set_recorded_weights(out.loaded.executable, weights_sha256);
      reframe(out);
    } else {
      warn(swapped.message() + "; recompiling");
      hit = remote_hit = false;
    }
  }
  if ((hit || remote_hit) && !out.framed.bytes.empty()) use_run_time_defaults(out, model, options);
  if (hit || remote_hit) {
    out.outcome = hit ? CacheOutcome::kHit : CacheOutcome::kRemoteHit;
    session.delta().hits = hit ? 1 : 0;
    session.delta().compiles_avoided = 1;
  } else {
    session.delta().misses = 1;
  }
  session.count(session.delta());
  if (!hit && !remote_hit) return false;
  if (found.in_local_cache) out.entry = store.entry_path(out.key);
  return true;
}

// Compiles `model` into `out`, its executable recording the manifest, the weights it holds and
// the compiler's build.
Status compile_for_cache(const CachedCompileRequest& request, frontend::LoadedModel&& model,
                         const cache::Manifest& manifest, const std::string& weights_sha256,
                         CachedCompile& out) {
  compiler::CompileReport memory_only;
  memory_only.with_executable = false;
  compiler::CompileReport* report = request.report     ? request.report
                                    : request.overflow ? &memory_only
                                                       : nullptr;
  StatusOr<compiler::CompileResult> attempt =
      compiler::compile_model(std::move(model), request.options, report);
  if (!attempt.ok()) {
    // A copy: the caller's `report` keeps its plan for the HTML report.
    if (request.overflow && attempt.status().code() == StatusCode::kResourceExhausted)
      *request.overflow = report->memory;
    return attempt.status();
  }
  compiler::CompileResult compiled = std::move(*attempt);
  out.loaded.executable = std::move(compiled.executable);
  format::Executable& exe = out.loaded.executable;
  for (const auto& [name, value] : manifest.entries()) {
    auto* entry = exe.add_manifest();
    entry->set_name(name);
    entry->set_value(value);
  }
  set_recorded_weights(exe, weights_sha256);
  exe.set_compiler_build(compiler_build_identity());
  out.timings = compiled.timings;
  out.notes = std::move(compiled.notes);
  if (request.keep_ir) out.ir_text = std::move(compiled.ir_text);
  out.passes = std::move(compiled.passes);
  reframe(out);
  return Status();
}

// Stores the compiled entry locally, uploads it to the remote cache, then holds the local cache
// to its size limit.
void store_compiled(const CachedCompileRequest& request, const cache::Manifest& manifest,
                    cache::LocalStore* store, std::optional<CacheSession>& session,
                    std::optional<RemoteSession>& remote, CachedCompile& out) {
  if (session && session->writable()) {
    Status put = store->put(manifest, out.framed.bytes, request.options.model_path);
    if (put.ok()) {
      out.entry = store->entry_path(out.key);
    } else {
      session->write_failed(put);
    }
  }
  if (remote) {
    cache::CacheStats delta;
    remote->upload(manifest, out.framed.bytes, delta);
    if (delta.remote_errors) session->count(delta);
  }
  if (session && session->writable()) {
    auto evicted = store->evict_to(request.max_size);
    if (!evicted.ok()) {
      session->write_failed(evicted.status());
    } else if (!evicted->empty()) {
      cache::CacheStats delta;
      delta.evictions = evicted->size();
      session->count(delta);
    }
  }
}

// With request.summary_only: the test a hit's summary passes when its executable serves this
// compile unchanged, i.e. holds the model's weights and this compile's run-time defaults.
SummaryServes summary_serves(const CachedCompileRequest& request, const frontend::LoadedModel& model,
                             const std::string& weights_sha256) {
  if (!request.summary_only) return nullptr;
  return [weights_sha256, defaults = compiler::run_time_defaults(model, request.options)](
             const format::ExecutableSummary& summary) {
    if (recorded_weights(summary.manifest()) != weights_sha256) return false;
    return !defaults || (format::hyper_parameter_defaults(summary) == defaults->values &&
                         summary.learning_rate_schedule() == defaults->learning_rate_schedule);
  };
}

// The summary and size of what `out` holds, unless a summary-only hit already gave them.
StatusOr<CachedCompile> finished(std::chrono::steady_clock::time_point start, CachedCompile&& out) {
  if (!out.framed.bytes.empty()) {
    out.summary = format::summarize(out.loaded.executable);
    out.size = out.framed.bytes.size();
  }
  out.seconds = seconds_since(start);
  return std::move(out);
}

} // namespace

cache::Manifest make_manifest(const compiler::CompileOptions& options, const frontend::LoadedModel& model) {
  cache::Manifest m;
  m.set("key_schema", kKeySchemaVersion);
  m.set("format_version", std::to_string(format::kFormatVersion));
  m.set("compiler_build", compiler_build_identity());
  m.set("model_structure_sha256", model.fingerprint().structure_sha256);
  for (auto& [name, value] : compiler::codegen_options(model, options))
    m.set("option." + name, value);
  return m;
}

StatusOr<CachedCompile> compile_through_cache(const CachedCompileRequest& request, const WarningSink& warn) {
  const auto start = std::chrono::steady_clock::now();
  IPU_ASSIGN_OR_RETURN(std::string model_text, read_file(request.options.model_path));
  frontend::LoadedModel model = frontend::LoadedModel::parse(model_text, request.options.model_path);
  model_text = std::string(); // the parse holds all a compile needs: the file's bytes go before it
  const frontend::ModelFingerprint fingerprint = model.fingerprint(); // a copy: a miss compiles `model` away
  const cache::Manifest manifest = make_manifest(request.options, model);
  CachedCompile out;
  out.key = manifest.key();
  out.outcome = request.force ? CacheOutcome::kForced : CacheOutcome::kMiss;

  std::unique_ptr<cache::LocalStore> store = open_local_store(request, warn, out.outcome);
  std::optional<CacheSession> session;
  if (store)
    session.emplace(*store, manifest, warn, summary_serves(request, model, fingerprint.weights_sha256));
  // The remote cache backs a usable local one: its entries are always stored locally first.
  std::optional<RemoteSession> remote;
  if (session && !request.remote_url.empty()) {
    cache::RemoteLimits limits;
    // No larger file is an executable this build reads: its header and the payload the format
    // accepts (an incompressible payload at the cap would exceed it and be compiled instead).
    limits.max_executable_bytes =
        format::kHeaderSize + format::kMaxSummaryBytes + format::kMaxPayloadBytes + format::kMaxDataBytes;
    auto created = cache::RemoteStore::create(request.remote_url, limits);
    if (!created.ok()) return created.status();
    remote.emplace(std::move(*created), request.remote_read_only, warn);
  }
  // --force, --dump-ir and an HTML report compile whatever the cache holds and are not counted as
  // lookups.
  if (session && !request.force && !request.keep_ir && request.report == nullptr) {
    const CacheLookup found = look_up(request, manifest, *store, *session, remote, out);
    if (serve_from_cache(found, model, fingerprint.weights_sha256, request.options, *store, *session, warn,
                         out)) {
      return finished(start, std::move(out));
    }
  }

  IPU_RETURN_IF_ERROR(
      compile_for_cache(request, std::move(model), manifest, fingerprint.weights_sha256, out));
  store_compiled(request, manifest, store.get(), session, remote, out);
  return finished(start, std::move(out));
}

} // namespace ipu::compile_cache
