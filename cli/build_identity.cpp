#include "cli/build_identity.h"

// IPUCC_VERSION and IPUCC_GIT_COMMIT come from CMake (the top-level CMakeLists.txt resolves the
// commit, "unknown" outside a git checkout), so the two identities can never disagree.

namespace ipu::cli {

std::string version_string() {
  return std::string(IPUCC_VERSION) + " (" + IPUCC_GIT_COMMIT + ")";
}

} // namespace ipu::cli
