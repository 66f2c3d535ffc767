// `ipucc cache stats|list|show|verify|gc|evict|clear`: inspect and manage the executable cache.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace ipu::cli {

// Registers the subcommand; the returned callback runs it and gives the exit code, or -1 if
// `ipucc cache` was not the command given.
std::function<int()> add_cache_command(CLI::App& app);

// "30d", "12h", "45m", "10s", "2w" in seconds; nullopt if malformed.
std::optional<int64_t> parse_age(const std::string& text);

} // namespace ipu::cli
