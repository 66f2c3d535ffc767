#include "runtime/base/sha256.h"

#include <openssl/evp.h>

#include <cstdlib>

namespace ipu {

struct Sha256::Impl {
  EVP_MD_CTX* ctx = nullptr;
};

Sha256::Sha256() : m_impl(std::make_unique<Impl>()) {
  m_impl->ctx = EVP_MD_CTX_new();
  // Allocation failure of a digest context is not recoverable in any useful way.
  if (m_impl->ctx == nullptr || EVP_DigestInit_ex(m_impl->ctx, EVP_sha256(), nullptr) != 1) std::abort();
}

Sha256::~Sha256() {
  EVP_MD_CTX_free(m_impl->ctx);
}

void Sha256::update(const void* data, size_t size) {
  EVP_DigestUpdate(m_impl->ctx, data, size);
}

std::array<uint8_t, 32> Sha256::finish() {
  std::array<uint8_t, 32> out{};
  unsigned int len = 0;
  EVP_DigestFinal_ex(m_impl->ctx, out.data(), &len);
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
