#include "cache/cache_dir.h"

#include <cstdlib>

namespace ipu::cache {
namespace {

// Empty counts as unset: `IPUCC_CACHE_DIR= ipucc ...` is a common way to clear a variable.
std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

std::string join(const std::string& dir, const char* leaf) {
  if (!dir.empty() && dir.back() == '/') return dir + leaf;
  return dir + "/" + leaf;
}

} // namespace

std::string default_cache_dir() {
  if (std::string dir = env("IPUCC_CACHE_DIR"); !dir.empty()) return dir;
  if (std::string xdg = env("XDG_CACHE_HOME"); !xdg.empty() && xdg.front() == '/') return join(xdg, "ipucc");
  if (std::string home = env("HOME"); !home.empty()) return join(join(home, ".cache"), "ipucc");
  return "./.ipucc-cache";
}

} // namespace ipu::cache
