// Identity of the compiler linked into this binary, for cache keys: version and source commit
// plus a digest of the compiler's libraries taken at build time, so ipucc and ipurun of one
// build share entries and two different builds never do, even from one commit with local
// changes.
#pragma once

#include <string>

namespace ipu::compile_cache {

std::string compiler_build_identity();

} // namespace ipu::compile_cache
