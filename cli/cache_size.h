// Cache size limits as users write them, shared by `ipucc compile`, `ipucc cache gc` and ipurun.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ipu::cli {

// "500M", "2G", "1024K", "1T" (binary units, case-insensitive, optional trailing "B"/"iB") or
// plain bytes; nullopt if malformed or overflowing.
std::optional<uint64_t> parse_size(const std::string& text);

// The size limit used when none is given: $IPUCC_CACHE_MAX_SIZE, else "5G".
std::string default_cache_max_size();

} // namespace ipu::cli
