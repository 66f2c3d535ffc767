// The one place the tools print errors, warnings and notes: "<tool>: error: <message>", each extra
// line of a multi-line message indented under it.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "runtime/base/status.h"

namespace ipu::cli {

void print_error(const char* tool, const std::string& message);
void print_warning(const char* tool, const std::string& message);
// Something the user should know once that is neither wrong nor risky ("<tool>: note: ...").
void print_note(const char* tool, const std::string& message);
// Prints a command-line parsing error (help and version requests print normally) and returns
// the exit code: 0 for help and version, kExitUsage otherwise.
int fail_usage(const char* tool, CLI::App& app, const CLI::ParseError& error);
// Prints the error and returns its exit code.
int fail(const char* tool, const Status& status);
int fail(const char* tool, const Status& status, int exit_code);

} // namespace ipu::cli
