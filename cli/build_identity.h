// The version both tools print.
#pragma once

#include <string>

namespace ipu::cli {

std::string version_string(); // "0.1.0 (<commit>)"

} // namespace ipu::cli
