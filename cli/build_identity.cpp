#include "cli/build_identity.h"

#ifndef IPUCC_GIT_COMMIT
#define IPUCC_GIT_COMMIT "unknown"
#endif
#ifndef IPUCC_VERSION
#define IPUCC_VERSION "0.0.0"
#endif

namespace ipu::cli {

std::string version_string() {
  return std::string(IPUCC_VERSION) + " (" + IPUCC_GIT_COMMIT + ")";
}

} // namespace ipu::cli
