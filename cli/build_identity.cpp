#include "cli/build_identity.h"

#include "runtime/base/file_io.h"
#include "runtime/base/sha256.h"

#ifndef IPUCC_GIT_COMMIT
#define IPUCC_GIT_COMMIT "unknown"
#endif
#ifndef IPUCC_VERSION
#define IPUCC_VERSION "0.0.0"
#endif

namespace ipu::cli {

std::string compiler_build_identity() {
  static const std::string identity = [] {
    std::string id = std::string(IPUCC_VERSION) + "+" + IPUCC_GIT_COMMIT;
    auto self = read_file("/proc/self/exe");
    if (self.ok()) id += "+" + sha256_hex(*self).substr(0, 16);
    return id;
  }();
  return identity;
}

std::string version_string() { return std::string(IPUCC_VERSION) + " (" + IPUCC_GIT_COMMIT + ")"; }

}  // namespace ipu::cli
