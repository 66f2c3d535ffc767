// Identity of the running compiler build, for cache keys: the source commit plus a digest of
// the executable file itself, so two different builds never share cache entries even when
// built from the same commit with local changes.
#pragma once

#include <string>

namespace ipu::cli {

std::string compiler_build_identity();
std::string version_string();  // "ipucc 0.1.0 (<commit>)"

}  // namespace ipu::cli
