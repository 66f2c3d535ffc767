#include "runtime/base/sha256.h"

// OpenSSL's low-level SHA-256 functions, not EVP. Both run the same implementation (SHA-NI where
// the CPU has it, 1.6 GB/s here), but the first EVP digest of a process initialises the library:
// it reads openssl.cnf, registers every cipher and digest by name and loads the default provider,
// and frees it all at exit. That measured 2.5 to 3 ms per process, half of what a cache hit of
// `ipucc compile` costs over `ipucc --version`; the low-level functions need none of it. OpenSSL
// 3.0 deprecates them (in favour of EVP) but keeps them through the 3.x series; the suppression
// is confined to this file.
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>

namespace ipu {

struct Sha256::Impl {
  SHA256_CTX ctx;
};

Sha256::Sha256() : m_impl(std::make_unique<Impl>()) {
  SHA256_Init(&m_impl->ctx);
}

Sha256::~Sha256() = default;

void Sha256::update(const void* data, size_t size) {
  SHA256_Update(&m_impl->ctx, data, size);
}

std::array<uint8_t, 32> Sha256::finish() {
  std::array<uint8_t, 32> out{};
  SHA256_Final(out.data(), &m_impl->ctx);
  return out;
}

std::array<uint8_t, 32> sha256(const void* data, size_t size) {
  Sha256 h;
  h.update(data, size);
  return h.finish();
}

std::string to_hex(const uint8_t* data, size_t size) {
  static const char* digits = "0123456789abcdef";
  std::string out(size * 2, '0');
  for (size_t i = 0; i < size; ++i) {
    out[2 * i] = digits[data[i] >> 4];
    out[2 * i + 1] = digits[data[i] & 15];
  }
  return out;
}

std::string sha256_hex(std::string_view data) {
  auto digest = sha256(data.data(), data.size());
  return to_hex(digest.data(), digest.size());
}

} // namespace ipu
