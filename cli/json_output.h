// Every --json output of both tools is one object with "schema_version" (docs/json.md).
#pragma once

#include <nlohmann/json.hpp>

#include "runtime/format/executable.pb.h"

namespace ipu::cli {

inline constexpr int kJsonSchemaVersion = 1;

inline nlohmann::json json_document(const char* tool, const char* command) {
  return {{"schema_version", kJsonSchemaVersion}, {"tool", tool}, {"command", command}};
}

// The compiler's estimate of one gradient all-reduce across the job's replicas, per link
// (`estimates.all_reduce` of ipucc compile, `all_reduce` of ipurun train; docs/json.md): null for
// an executable of one replica or one compiled before the estimate existed.
nlohmann::json all_reduce_json(const format::Estimates& estimates, const format::Target& target);

} // namespace ipu::cli
