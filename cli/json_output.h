// Every --json output of both tools is one object with "schema_version" (docs/json.md).
#pragma once

#include <nlohmann/json.hpp>

namespace ipu::cli {

inline constexpr int kJsonSchemaVersion = 1;

inline nlohmann::json json_document(const char* tool, const char* command) {
  return {{"schema_version", kJsonSchemaVersion}, {"tool", tool}, {"command", command}};
}

} // namespace ipu::cli
