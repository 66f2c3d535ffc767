// A fresh mkdtemp directory per test, removed with everything in it when the test ends; and
// write_plain, which writes a test file byte for byte.
#pragma once

#include <doctest/doctest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <ios>
#include <string>
#include <system_error>

namespace ipu::testing {

class TempDir {
public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "ipucc_test_XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    m_path = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(m_path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return m_path; }
  std::string file(const std::string& name) const { return m_path + "/" + name; }

private:
  std::string m_path;
};

// Writes `content` to `path` as it is, replacing any file there.
inline void write_plain(const std::string& path, const std::string& content) {
  std::ofstream f(path, std::ios::binary);
  f.write(content.data(), static_cast<std::streamsize>(content.size()));
  REQUIRE(f.good());
}

} // namespace ipu::testing
