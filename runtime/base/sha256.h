// SHA-256 (OpenSSL's low-level functions; sha256.cpp says why not EVP): cache keys and content
// checksums.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace ipu {

class Sha256 {
public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(const void* data, size_t size);
  void update(std::string_view text) { update(text.data(), text.size()); }
  std::array<uint8_t, 32> finish();

private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

std::array<uint8_t, 32> sha256(const void* data, size_t size);
std::string sha256_hex(std::string_view data);
std::string to_hex(const uint8_t* data, size_t size);

} // namespace ipu
