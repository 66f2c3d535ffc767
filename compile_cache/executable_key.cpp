#include "compile_cache/executable_key.h"

#include <utility>
#include <vector>

#include "runtime/format/executable_file.h"
#include "runtime/format/verifier.h"

namespace ipu::compile_cache {

StatusOr<cache::Manifest> recorded_manifest(const RecordedManifest& recorded, const std::string& origin) {
  std::vector<std::pair<std::string, std::string>> entries;
  entries.reserve(recorded.size());
  for (const auto& entry : recorded) {
    if (entry.name() != kWeightsField) entries.emplace_back(entry.name(), entry.value());
  }
  StatusOr<cache::Manifest> manifest = cache::Manifest::from_entries(entries);
  if (!manifest.ok()) return data_loss(origin + ": the executable's recorded " + manifest.status().message());
  return manifest;
}

std::string recorded_weights(const RecordedManifest& recorded) {
  for (const auto& entry : recorded) {
    if (entry.name() == kWeightsField) return entry.value();
  }
  return "";
}

Status check_executable_key(const RecordedManifest& recorded_entries, const cache::Manifest& expected,
                            const std::string& origin) {
  IPU_ASSIGN_OR_RETURN(cache::Manifest recorded, recorded_manifest(recorded_entries, origin));
  if (recorded == expected) return Status();
  if (recorded.entries().empty()) {
    return data_loss(origin + ": the executable records no manifest, so it belongs to no cache key, not " +
                     expected.key());
  }
  const std::vector<std::string> differing = recorded.differences(expected);
  return data_loss(origin + ": the executable was compiled for cache key " + recorded.key() + ", not " +
                   expected.key() + " (its manifest differs in '" + differing.front() + "')");
}

Status check_cache_entry(const format::Executable& exe, const cache::Manifest& expected,
                         const std::string& origin) {
  IPU_RETURN_IF_ERROR(check_executable_key(exe.manifest(), expected, origin));
  IPU_RETURN_IF_ERROR_CTX(format::verify_executable(exe), origin);
  IPU_RETURN_IF_ERROR_CTX(format::verify_host_contract(exe), origin);
  return Status();
}

StatusOr<format::Executable> check_fetched_entry(std::string_view manifest_text,
                                                 std::string_view executable_bytes,
                                                 const cache::Manifest& expected, const std::string& where) {
  if (manifest_text != expected.canonical_text())
    return data_loss(where + ".manifest: differs from the expected manifest");
  IPU_ASSIGN_OR_RETURN(format::Executable exe, format::parse_executable(executable_bytes, where + ".ipuexe"));
  IPU_RETURN_IF_ERROR(check_cache_entry(exe, expected, where + ".ipuexe"));
  return exe;
}

} // namespace ipu::compile_cache
