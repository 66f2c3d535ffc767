#include "cli/cache_explain.h"

#include <cstdio>
#include <optional>

#include "cli/compile_options.h"
#include "cli/diagnostics.h"
#include "cli/exit_codes.h"
#include "cli/json_output.h"
#include "cli/resolve_executable.h"
#include "cli/tool_names.h"
#include "compile_cache/compile_through_cache.h"
#include "compiler/frontend/loaded_model.h"
#include "runtime/base/file_io.h"

namespace ipu::cli {
namespace {

struct Difference {
  std::string field;
  std::optional<std::string> stored;    // absent from the entry's manifest
  std::optional<std::string> requested; // absent from the requested manifest
};

struct Nearest {
  const cache::EntryInfo* entry = nullptr;
  std::vector<Difference> differences;
};

std::optional<std::string> value_of(const std::map<std::string, std::string>& entries,
                                    const std::string& name) {
  auto it = entries.find(name);
  return it == entries.end() ? std::nullopt : std::optional<std::string>(it->second);
}

// The sound entry (other than `exclude`) whose manifest differs from `requested` in the fewest
// fields; ties go to the most recently used.
Nearest nearest_entry(const std::vector<cache::EntryInfo>& entries, const cache::Manifest& requested,
                      const std::string& exclude) {
  Nearest best;
  for (const auto& e : entries) {
    if (!e.manifest_ok || e.key == exclude) continue;
    std::vector<Difference> diffs;
    cache::Manifest stored;
    for (const auto& [name, value] : e.manifest)
      stored.set(name, value);
    for (const std::string& name : requested.differences(stored)) {
      diffs.push_back({name, value_of(e.manifest, name), value_of(requested.entries(), name)});
    }
    const bool better = !best.entry || diffs.size() < best.differences.size() ||
                        (diffs.size() == best.differences.size() && e.last_use_ns > best.entry->last_use_ns);
    if (better) best = {&e, std::move(diffs)};
  }
  return best;
}

nlohmann::json optional_json(const std::optional<std::string>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json();
}

} // namespace

int run_cache_explain(cache::LocalStore& store, const std::string& target, const CompileFlags& compile,
                      bool json) {
  cache::Manifest requested;
  std::string exclude; // explaining an entry: compare it with the others
  if (names_a_model(target)) {
    auto text = read_file(target);
    if (!text.ok()) return fail(kIpuccTool, text.status());
    auto options = to_compile_options(compile, target, "train");
    if (!options.ok()) return fail(kIpuccTool, options.status());
    requested = compile_cache::make_manifest(*options, frontend::LoadedModel::parse(*text, target));
  } else {
    auto found = store.load_by_key(target, /*touch_entry=*/false);
    if (!found.ok()) {
      const StatusCode c = found.status().code();
      return fail(kIpuccTool, found.status(), c == StatusCode::kInvalidArgument ? kExitUsage : kExitIoError);
    }
    auto parsed = cache::Manifest::parse(found->manifest_text);
    if (!parsed.ok()) return fail(kIpuccTool, parsed.status().with_context(found->path), kExitIoError);
    requested = std::move(*parsed);
    exclude = found->key;
  }
  const std::string key = requested.key();
  auto entries = store.list();
  if (!entries.ok()) return fail(kIpuccTool, entries.status(), kExitIoError);
  bool hit = false;
  for (const auto& e : *entries)
    hit = hit || (exclude.empty() && e.manifest_ok && e.key == key);
  const Nearest nearest = hit ? Nearest() : nearest_entry(*entries, requested, exclude);

  if (json) {
    nlohmann::json out = json_document(kIpuccTool, "cache explain");
    out["dir"] = store.dir();
    out["key"] = key;
    out["hit"] = hit;
    out["manifest"] = requested.entries();
    if (nearest.entry) {
      nlohmann::json diffs = nlohmann::json::array();
      for (const auto& d : nearest.differences) {
        diffs.push_back({{"field", d.field},
                         {"stored", optional_json(d.stored)},
                         {"requested", optional_json(d.requested)}});
      }
      out["nearest"] = {{"key", nearest.entry->key},
                        {"path", store.entry_path(nearest.entry->key)},
                        {"differences", diffs}};
    } else {
      out["nearest"] = nullptr;
    }
    std::printf("%s\n", out.dump(2).c_str());
    return kExitOk;
  }
  std::printf("%s: key %s\n", target.c_str(), key.substr(0, 16).c_str());
  if (hit) {
    std::printf("  exact hit: %s\n", store.entry_path(key).c_str());
    return kExitOk;
  }
  if (!nearest.entry) {
    std::printf("  %s: no other entry to compare with\n", exclude.empty() ? "miss" : "stored");
    return kExitOk;
  }
  std::printf("  %snearest entry %s differs in %zu field%s:\n", exclude.empty() ? "miss; " : "",
              nearest.entry->key.substr(0, 16).c_str(), nearest.differences.size(),
              nearest.differences.size() == 1 ? "" : "s");
  for (const auto& d : nearest.differences) {
    std::printf("    %-28s stored %s, requested %s\n", d.field.c_str(), d.stored.value_or("(absent)").c_str(),
                d.requested.value_or("(absent)").c_str());
  }
  return kExitOk;
}

} // namespace ipu::cli
