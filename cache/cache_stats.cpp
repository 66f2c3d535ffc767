#include "cache/cache_stats.h"

#include <nlohmann/json.hpp>
#include <utility>

namespace ipu::cache {
namespace {

struct Field {
  const char* name;
  uint64_t CacheStats::*member;
};

constexpr Field kFields[] = {
    {"hits", &CacheStats::hits},
    {"misses", &CacheStats::misses},
    {"compiles_avoided", &CacheStats::compiles_avoided},
    {"corrupt_found", &CacheStats::corrupt_found},
    {"evictions", &CacheStats::evictions},
    {"remote_hits", &CacheStats::remote_hits},
    {"remote_misses", &CacheStats::remote_misses},
    {"remote_errors", &CacheStats::remote_errors},
};

} // namespace

StatusOr<FileLock> lock_stats(const DirHandle& dir) {
  return dir.lock("stats.lock");
}

std::string stats_json_text(const CacheStats& stats) {
  nlohmann::json j = nlohmann::json::object();
  for (const Field& f : kFields)
    j[f.name] = stats.*f.member;
  return j.dump(2) + "\n";
}

// A JSON object of non-negative integer counters; unknown fields are ignored, missing ones zero.
StatusOr<CacheStats> parse_stats_json(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return data_loss("malformed stats: not a JSON object");
  CacheStats stats;
  for (const Field& f : kFields) {
    if (!j.contains(f.name)) continue;
    if (!j[f.name].is_number_unsigned())
      return data_loss(std::string("malformed stats: expected a count for ") + f.name);
    stats.*f.member = j[f.name].get<uint64_t>();
  }
  return stats;
}

StatusOr<CacheStats> read_stats(const DirHandle& dir) {
  const std::string path = dir.path_of("stats.json");
  StatusOr<std::string> text = dir.read("stats.json");
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kNotFound) return CacheStats();
    return text.status();
  }
  StatusOr<CacheStats> parsed = parse_stats_json(*text);
  if (!parsed.ok()) return data_loss(path + ": " + parsed.status().message());
  return parsed;
}

Status add_stats(const DirHandle& dir, const CacheStats& delta) {
  StatusOr<FileLock> lock = lock_stats(dir);
  if (!lock.ok()) return lock.status();
  StatusOr<CacheStats> current = read_stats(dir);
  // A damaged stats file is replaced rather than blocking every later update.
  CacheStats stats = current.ok() ? *current : CacheStats();
  for (const Field& f : kFields)
    stats.*f.member += delta.*f.member;
  // Counters are not worth an fsync on every hit (about 1 ms): a power loss can at worst lose them,
  // and a damaged file is replaced (above).
  Status written =
      dir.write_atomic("stats.json", stats_json_text(stats), DirHandle::Durability::kSurvivesProcessDeath);
  if (!written.ok()) return written;
  if (!current.ok()) return Status(current.status().code(), current.status().message() + " (counters reset)");
  return Status();
}

} // namespace ipu::cache
