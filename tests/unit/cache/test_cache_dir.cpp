#include <doctest/doctest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "cache/cache_dir.h"

using ipu::cache::default_cache_dir;

namespace {

// Saves the variables default_cache_dir() reads and restores them exactly (set or unset) on
// destruction, so the test leaves the process environment as it found it.
class EnvGuard {
public:
  EnvGuard() {
    for (const char* name : kNames) {
      const char* value = std::getenv(name);
      m_saved.emplace_back(value == nullptr ? std::nullopt : std::optional<std::string>(value));
    }
  }
  ~EnvGuard() {
    for (size_t i = 0; i < std::size(kNames); ++i) {
      if (m_saved[i]) {
        ::setenv(kNames[i], m_saved[i]->c_str(), 1);
      } else {
        ::unsetenv(kNames[i]);
      }
    }
  }
  EnvGuard(const EnvGuard&) = delete;
  EnvGuard& operator=(const EnvGuard&) = delete;

private:
  static constexpr const char* kNames[] = {"IPUCC_CACHE_DIR", "XDG_CACHE_HOME", "HOME"};
  std::vector<std::optional<std::string>> m_saved;
};

} // namespace

TEST_CASE("default cache dir follows the environment in priority order") {
  EnvGuard guard;
  ::setenv("IPUCC_CACHE_DIR", "/custom/cache", 1);
  ::setenv("XDG_CACHE_HOME", "/xdg", 1);
  ::setenv("HOME", "/home/user", 1);
  CHECK(default_cache_dir() == "/custom/cache");

  ::setenv("IPUCC_CACHE_DIR", "", 1);
  CHECK(default_cache_dir() == "/xdg/ipucc");
  ::unsetenv("IPUCC_CACHE_DIR");
  CHECK(default_cache_dir() == "/xdg/ipucc");
  ::setenv("XDG_CACHE_HOME", "/xdg/", 1);
  CHECK(default_cache_dir() == "/xdg/ipucc");

  ::setenv("XDG_CACHE_HOME", "", 1);
  CHECK(default_cache_dir() == "/home/user/.cache/ipucc");
  ::setenv("XDG_CACHE_HOME", "relative/xdg", 1);
  CHECK(default_cache_dir() == "/home/user/.cache/ipucc");
  ::unsetenv("XDG_CACHE_HOME");
  CHECK(default_cache_dir() == "/home/user/.cache/ipucc");

  ::setenv("HOME", "", 1);
  CHECK(default_cache_dir() == "./.ipucc-cache");
  ::unsetenv("HOME");
  CHECK(default_cache_dir() == "./.ipucc-cache");
}

TEST_CASE("cache dir environment guard restores variables") {
  const char* before = std::getenv("HOME");
  std::optional<std::string> saved = before ? std::optional<std::string>(before) : std::nullopt;
  {
    EnvGuard guard;
    ::setenv("HOME", "/elsewhere", 1);
  }
  const char* after = std::getenv("HOME");
  CHECK((after ? std::optional<std::string>(after) : std::nullopt) == saved);
}
