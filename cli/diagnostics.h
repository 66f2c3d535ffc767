// The one place the tools print errors and warnings: "<tool>: error: <message>", each extra
// line of a multi-line message indented under it.
#pragma once

#include <string>

#include "runtime/base/status.h"

namespace ipu::cli {

void print_error(const char* tool, const std::string& message);
void print_warning(const char* tool, const std::string& message);
// Prints the error and returns its exit code.
int fail(const char* tool, const Status& status);
int fail(const char* tool, const Status& status, int exit_code);

}  // namespace ipu::cli
