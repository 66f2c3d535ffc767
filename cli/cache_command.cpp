#include "cli/cache_command.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <optional>
#include <string>

#include "cache/cache_dir.h"
#include "cache/cache_stats.h"
#include "cache/local_store.h"
#include "cli/cache_explain.h"
#include "cli/cache_size.h"
#include "cli/compile_flags.h"
#include "cli/diagnostics.h"
#include "cli/exit_codes.h"
#include "cli/json_output.h"
#include "cli/tool_names.h"
#include "compile_cache/executable_key.h"
#include "runtime/format/executable_file.h"

namespace ipu::cli {
namespace {

struct CacheFlags;
// One per subcommand, on the store --cache-dir names (opened first); the exit code.
using CacheSubcommand = int (*)(const CacheFlags&, cache::LocalStore&);

struct CacheFlags {
  std::string sub;
  CacheSubcommand run = nullptr;
  std::string cache_dir;
  bool json = false;
  std::string key;
  std::optional<std::string> max_size; // gc: unset, the limit compiles keep
  std::string older_than;
  std::string target;   // explain: KEY or MODEL
  CompileFlags compile; // explain MODEL
};

std::string iso_time(int64_t ns) {
  std::time_t seconds = static_cast<std::time_t>(ns / 1000000000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string human_bytes(uint64_t n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(n));
  else
    std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

std::string option_or(const cache::EntryInfo& e, const char* name) {
  auto it = e.options.find(name);
  return it == e.options.end() ? "?" : it->second;
}

nlohmann::json or_null(const std::string& text) {
  return text.empty() ? nlohmann::json() : nlohmann::json(text);
}

nlohmann::json entry_json(const cache::LocalStore& store, const cache::EntryInfo& e) {
  return {{"key", e.key},
          {"path", store.entry_path(e.key)},
          {"bytes", e.bytes},
          {"last_use", iso_time(e.last_use_ns)},
          {"last_use_unix", e.last_use_ns / 1000000000},
          {"model", or_null(e.model_file)},
          {"model_structure_sha256", or_null(e.model_structure_sha256)},
          {"model_sha256", or_null(e.model_sha256)},
          {"options", e.options}};
}

nlohmann::json document(const CacheFlags& f) {
  nlohmann::json d = json_document(kIpuccTool, "cache");
  d["command"] = "cache " + f.sub;
  return d;
}

// Removes keys and counts them as evictions; prints the result.
int report_removed(const CacheFlags& f, cache::LocalStore& store,
                   const StatusOr<std::vector<std::string>>& removed, bool count_as_evictions) {
  if (!removed.ok()) return fail(kIpuccTool, removed.status(), kExitIoError);
  if (count_as_evictions && !removed->empty()) {
    cache::CacheStats delta;
    delta.evictions = removed->size();
    Status s = cache::add_stats(store.root(), delta);
    if (!s.ok()) print_warning(kIpuccTool, s.message() + "; cache statistics not updated");
  }
  auto total = store.total_bytes();
  const uint64_t bytes = total.ok() ? *total : 0;
  if (f.json) {
    nlohmann::json out = document(f);
    out["dir"] = store.dir();
    out["removed"] = *removed;
    out["bytes"] = bytes;
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    std::printf("removed %zu entr%s; %s left in %s\n", removed->size(), removed->size() == 1 ? "y" : "ies",
                human_bytes(bytes).c_str(), store.dir().c_str());
  }
  return kExitOk;
}

// `cache gc`: evicts least recently used entries down to --max-size.
int run_gc(const CacheFlags& f, cache::LocalStore& store) {
  // Without --max-size, the limit every compile evicts down to.
  const std::string limit = f.max_size ? *f.max_size : default_cache_max_size();
  auto max = parse_size(limit);
  if (!max) {
    print_error(kIpuccTool, std::string(f.max_size ? "--max-size" : "$IPUCC_CACHE_MAX_SIZE") +
                                ": invalid size '" + limit + "' (expected bytes or e.g. 1024K, 500M, 2G)");
    return kExitUsage;
  }
  return report_removed(f, store, store.evict_to(*max), true);
}

// `cache evict --older-than AGE`.
int run_evict(const CacheFlags& f, cache::LocalStore& store) {
  auto age = parse_age(f.older_than);
  if (!age) {
    print_error(kIpuccTool,
                "--older-than: invalid age '" + f.older_than + "' (expected e.g. 30d, 12h, 45m, 10s)");
    return kExitUsage;
  }
  const int64_t now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  return report_removed(f, store, store.evict_older_than(now_ns - *age * 1000000000), true);
}

int run_explain(const CacheFlags& f, cache::LocalStore& store) {
  return run_cache_explain(store, f.target, f.compile, f.json);
}

int run_clear(const CacheFlags& f, cache::LocalStore& store) {
  return report_removed(f, store, store.clear(), false);
}

// `cache stats`: the counters, the entries and their size against the limit.
int run_stats(const CacheFlags& f, cache::LocalStore& store) {
  auto entries = store.list();
  if (!entries.ok()) return fail(kIpuccTool, entries.status(), kExitIoError);
  auto stats = cache::read_stats(store.root());
  if (!stats.ok()) print_warning(kIpuccTool, stats.status().message());
  const cache::CacheStats s = stats.ok() ? *stats : cache::CacheStats();
  auto total = store.rescan_total_bytes();
  if (!total.ok()) return fail(kIpuccTool, total.status(), kExitIoError);
  const std::string limit_text = default_cache_max_size();
  auto limit = parse_size(limit_text);
  if (f.json) {
    nlohmann::json out = document(f);
    out["dir"] = store.dir();
    out["hits"] = s.hits;
    out["misses"] = s.misses;
    out["compiles_avoided"] = s.compiles_avoided;
    out["corrupt_found"] = s.corrupt_found;
    out["evictions"] = s.evictions;
    out["remote_hits"] = s.remote_hits;
    out["remote_misses"] = s.remote_misses;
    out["remote_errors"] = s.remote_errors;
    out["entries"] = entries->size();
    out["bytes"] = *total;
    out["limit_bytes"] = limit ? nlohmann::json(*limit) : nlohmann::json();
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    std::printf("cache directory   %s\n", store.dir().c_str());
    std::printf("entries           %zu\n", entries->size());
    std::printf("size              %s of %s\n", human_bytes(*total).c_str(),
                limit ? human_bytes(*limit).c_str() : ("invalid limit " + limit_text).c_str());
    std::printf("hits              %llu\n", static_cast<unsigned long long>(s.hits));
    std::printf("misses            %llu\n", static_cast<unsigned long long>(s.misses));
    std::printf("compiles avoided  %llu\n", static_cast<unsigned long long>(s.compiles_avoided));
    std::printf("corrupt found     %llu\n", static_cast<unsigned long long>(s.corrupt_found));
    std::printf("evictions         %llu\n", static_cast<unsigned long long>(s.evictions));
    std::printf("remote hits       %llu\n", static_cast<unsigned long long>(s.remote_hits));
    std::printf("remote misses     %llu\n", static_cast<unsigned long long>(s.remote_misses));
    std::printf("remote errors     %llu\n", static_cast<unsigned long long>(s.remote_errors));
  }
  return kExitOk;
}

// `cache list`: one line (or JSON object) per entry.
int run_list(const CacheFlags& f, cache::LocalStore& store) {
  auto entries = store.list();
  if (!entries.ok()) return fail(kIpuccTool, entries.status(), kExitIoError);
  if (f.json) {
    nlohmann::json out = document(f);
    out["dir"] = store.dir();
    out["entries"] = nlohmann::json::array();
    for (const auto& e : *entries)
      out["entries"].push_back(entry_json(store, e));
    std::printf("%s\n", out.dump(2).c_str());
    return kExitOk;
  }
  // What tells entries of one model apart most often; the rest is in `cache show`. The key
  // leaves precision out at its default (fp32) and keys inference's optimizer as unused.
  std::vector<std::string> summaries;
  size_t width = 0;
  for (const auto& e : *entries) {
    const auto precision = e.options.find("precision");
    std::string summary = "batch=" + option_or(e, "batch_size") + " mode=" + option_or(e, "mode") +
                          " arch=" + option_or(e, "arch") +
                          " precision=" + (precision == e.options.end() ? "fp32" : precision->second);
    if (const auto optimizer = e.options.find("optimizer");
        optimizer != e.options.end() && optimizer->second != "unused")
      summary += " optimizer=" + optimizer->second;
    width = std::max(width, summary.size());
    summaries.push_back(std::move(summary));
  }
  for (size_t i = 0; i < entries->size(); ++i) {
    const auto& e = (*entries)[i];
    // The model file last: paths have no useful width to align to.
    std::printf("%s  %-*s  %10s  %s  %s\n", e.key.substr(0, 16).c_str(), static_cast<int>(width),
                summaries[i].c_str(), human_bytes(e.bytes).c_str(), iso_time(e.last_use_ns).c_str(),
                e.model_file.empty() ? "-" : e.model_file.c_str());
  }
  return kExitOk;
}

// `cache show KEY`: an entry's manifest and a summary of its executable; exit 6 if it does not
// belong to its key.
int run_show(const CacheFlags& f, cache::LocalStore& store) {
  auto found = store.load_by_key(f.key, /*touch_entry=*/false);
  if (!found.ok()) {
    const StatusCode c = found.status().code();
    return fail(kIpuccTool, found.status(), c == StatusCode::kInvalidArgument ? kExitUsage : kExitIoError);
  }
  auto manifest = cache::Manifest::parse(found->manifest_text);
  auto exe = format::parse_executable(found->executable.bytes, found->path);
  // load_by_key checked that the manifest parses and hashes to the key.
  const Status belongs = !exe.ok() ? exe.status()
                         : !manifest.ok()
                             ? manifest.status()
                             : compile_cache::check_executable_key(exe->manifest(), *manifest, found->path);
  if (f.json) {
    nlohmann::json out = document(f);
    out["key"] = found->key;
    out["path"] = found->path;
    out["bytes"] = found->executable.bytes.size();
    out["manifest"] = manifest.ok() ? nlohmann::json(manifest->entries()) : nlohmann::json();
    if (exe.ok()) {
      out["executable"] = {{"model_name", exe->model_name()},
                           {"mode", exe->mode()},
                           {"target",
                            {{"arch", exe->target().arch()},
                             {"num_ipus", exe->target().num_ipus()},
                             {"tiles_per_ipu", exe->target().tiles_per_ipu()},
                             {"bytes_per_tile", exe->target().bytes_per_tile()}}},
                           {"batch_size", exe->batch_size()},
                           {"steps_per_execution", exe->steps_per_execution()},
                           {"estimates",
                            {{"peak_tile_bytes", exe->estimates().peak_tile_bytes()},
                             {"tiles_used", exe->estimates().tiles_used()},
                             {"total_bytes", exe->estimates().total_bytes()},
                             {"vertices", exe->estimates().vertices()}}}};
      out["error"] = belongs.ok() ? nlohmann::json() : nlohmann::json(belongs.message());
    } else {
      out["executable"] = nullptr;
      out["error"] = exe.status().message();
    }
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    std::printf("key   %s\npath  %s\n", found->key.c_str(), found->path.c_str());
    std::printf("manifest:\n");
    if (manifest.ok()) {
      for (const auto& [name, value] : manifest->entries())
        std::printf("  %s = %s\n", name.c_str(), value.c_str());
    }
    if (exe.ok()) {
      std::printf("executable:\n  model %s, mode %s, target %s x%u (%u tiles, %llu bytes/tile), batch %u, "
                  "steps %u\n",
                  exe->model_name().c_str(), exe->mode().c_str(), exe->target().arch().c_str(),
                  exe->target().num_ipus(), exe->target().tiles_per_ipu(),
                  static_cast<unsigned long long>(exe->target().bytes_per_tile()), exe->batch_size(),
                  exe->steps_per_execution());
      std::printf("  estimates: %u tiles used, peak tile %llu bytes, %llu bytes total, %llu vertices\n",
                  exe->estimates().tiles_used(),
                  static_cast<unsigned long long>(exe->estimates().peak_tile_bytes()),
                  static_cast<unsigned long long>(exe->estimates().total_bytes()),
                  static_cast<unsigned long long>(exe->estimates().vertices()));
    }
  }
  if (!belongs.ok()) {
    print_error(kIpuccTool, belongs.message() + " (run 'ipucc cache verify' to quarantine it)");
    return kExitIoError;
  }
  return kExitOk;
}

// `cache verify`: every entry checked as a hit would check it; corrupt ones quarantined (exit 6).
int run_verify(const CacheFlags& f, cache::LocalStore& store) {
  auto entries = store.list();
  if (!entries.ok()) return fail(kIpuccTool, entries.status(), kExitIoError);
  size_t ok = 0;
  std::vector<nlohmann::json> corrupt;
  for (const auto& e : *entries) {
    std::string problem;
    if (!e.manifest_ok) {
      problem = store.manifest_path(e.key) + ": manifest is malformed or does not hash to its key";
    } else {
      auto found = store.load_by_key(e.key, /*touch_entry=*/false);
      if (!found.ok()) {
        problem = found.status().message();
      } else {
        auto parsed = format::parse_executable(found->executable.bytes, found->path);
        auto manifest = cache::Manifest::parse(found->manifest_text);
        const Status belongs = !parsed.ok() ? parsed.status()
                               : !manifest.ok()
                                   ? manifest.status()
                                   : compile_cache::check_cache_entry(*parsed, *manifest, found->path);
        if (!belongs.ok()) problem = belongs.message();
      }
    }
    if (problem.empty()) {
      ++ok;
      continue;
    }
    Status q = store.quarantine(e.key);
    if (!q.ok())
      print_warning(kIpuccTool, q.message());
    else if (!f.json)
      print_warning(kIpuccTool, problem + "; moved to " + store.corrupt_dir());
    corrupt.push_back({{"key", e.key}, {"error", problem}});
  }
  if (!corrupt.empty()) {
    cache::CacheStats delta;
    delta.corrupt_found = corrupt.size();
    Status s = cache::add_stats(store.root(), delta);
    if (!s.ok()) print_warning(kIpuccTool, s.message() + "; cache statistics not updated");
  }
  if (f.json) {
    nlohmann::json out = document(f);
    out["dir"] = store.dir();
    out["ok"] = ok;
    out["corrupt"] = corrupt.size();
    out["corrupt_entries"] = corrupt;
    out["corrupt_dir"] = store.corrupt_dir();
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    std::printf("%zu ok, %zu corrupt\n", ok, corrupt.size());
  }
  return corrupt.empty() ? kExitOk : kExitIoError;
}

} // namespace

std::optional<int64_t> parse_age(const std::string& text) {
  size_t i = 0;
  int64_t value = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    if (value > 1000000000000LL) return std::nullopt;
    value = value * 10 + (text[i] - '0');
  }
  if (i == 0 || i + 1 != text.size()) return std::nullopt;
  switch (text[i]) {
  case 's':
    return value;
  case 'm':
    return value * 60;
  case 'h':
    return value * 3600;
  case 'd':
    return value * 86400;
  case 'w':
    return value * 7 * 86400;
  default:
    return std::nullopt;
  }
}

std::function<int()> add_cache_command(CLI::App& app) {
  auto flags = std::make_shared<CacheFlags>();
  CLI::App* cmd = app.add_subcommand("cache", "Inspect and manage the executable cache (docs/cache.md)");
  cmd->require_subcommand(1);
  auto common = [&](CLI::App* sub, CacheSubcommand run) {
    sub->add_option("--cache-dir", flags->cache_dir,
                    "Executable cache (default $IPUCC_CACHE_DIR, $XDG_CACHE_HOME/ipucc, ~/.cache/ipucc)");
    sub->add_flag("--json", flags->json, "Print one JSON object (docs/json.md)");
    sub->callback([flags, sub, run]() {
      flags->sub = sub->get_name();
      flags->run = run;
    });
    return sub;
  };
  common(cmd->add_subcommand("stats", "Hit/miss/eviction counters and the cache size"), run_stats);
  common(cmd->add_subcommand("list", "One line per entry: key, model, options, size, last use"), run_list);
  auto* show = common(cmd->add_subcommand("show", "An entry's manifest and executable summary"), run_show);
  show->add_option("key", flags->key, "Key or unique prefix of at least 8 hex digits")->required();
  common(
      cmd->add_subcommand("verify", "Check every entry; move corrupt ones to <dir>/corrupt (exit 6 if any)"),
      run_verify);
  auto* gc = common(cmd->add_subcommand("gc", "Evict least recently used entries down to a size"), run_gc);
  gc->add_option("--max-size", flags->max_size,
                 "Size limit: bytes or e.g. 1024K, 500M, 2G (default $IPUCC_CACHE_MAX_SIZE, else 5G)");
  auto* evict = common(cmd->add_subcommand("evict", "Remove entries not used for a while"), run_evict);
  evict->add_option("--older-than", flags->older_than, "Age: e.g. 30d, 12h, 45m, 10s")->required();
  common(cmd->add_subcommand("clear", "Remove every entry (the statistics are kept)"), run_clear);
  auto* explain =
      common(cmd->add_subcommand("explain", "Why a compile would miss: the manifest of KEY or of MODEL and "
                                            "options against the nearest stored entry"),
             run_explain);
  explain->add_option("target", flags->target, "Key (or unique prefix), or model (.onnx or .json)")
      ->required();
  add_compile_flags(explain, flags->compile, " (when the target is a model)");
  return [flags, cmd]() {
    if (!cmd->parsed()) return -1;
    auto opened =
        cache::LocalStore::open(flags->cache_dir.empty() ? cache::default_cache_dir() : flags->cache_dir);
    if (!opened.ok()) return fail(kIpuccTool, opened.status(), kExitIoError);
    return flags->run(*flags, *opened);
  };
}

} // namespace ipu::cli
