// libFuzzer target: an untrusted executable file goes through everything `ipurun` does before
// running it: parse_executable (frame, checksum, zstd, protobuf), verify_executable, and
// Engine::create (per-vertex kernel validation, device memory allocation, host task coalescing).
// Programs are never run: a valid executable may legitimately loop for a long time.
//
// Seeds: tests/fuzz/corpus/executable/ (small compiled executables). Because every byte of a
// real frame is covered by the SHA-256 checksum, the harness also feeds the *payload* to the
// parser re-framed with a correct header when the input does not start with the magic: that
// lets the fuzzer mutate the protobuf itself (see kReframe below).
//
// The engine accepts executables of up to half the host's memory, far above libFuzzer's RSS
// limit, so verified executables with more than kMaxFuzzedDevice bytes of tensors are not
// loaded here (the refusal path is covered by tests/unit/runtime/engine).
#include <zstd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "runtime/base/sha256.h"
#include "runtime/engine/engine.h"
#include "runtime/format/executable_file.h"
#include "runtime/format/verifier.h"

namespace {

constexpr char kMagic[8] = {'I', 'P', 'U', 'C', 'C', 'E', 'X', '\x1a'};
constexpr uint64_t kMaxFuzzedDevice = uint64_t{256} << 20;  // bytes of tensors in one engine

void put_le(std::string& out, size_t offset, uint64_t value, size_t bytes) {
  for (size_t i = 0; i < bytes; ++i) out[offset + i] = static_cast<char>((value >> (8 * i)) & 0xff);
}

// Wraps raw protobuf bytes into a well-formed frame (zstd level 1, correct sizes and checksum).
std::string reframe(std::string_view payload) {
  std::string out(ipu::format::kHeaderSize + ZSTD_compressBound(payload.size()), '\0');
  size_t n = ZSTD_compress(out.data() + ipu::format::kHeaderSize, out.size() - ipu::format::kHeaderSize, payload.data(),
                           payload.size(), 1);
  if (ZSTD_isError(n)) return {};
  out.resize(ipu::format::kHeaderSize + n);
  std::memcpy(out.data(), kMagic, sizeof kMagic);
  put_le(out, 8, ipu::format::kFormatVersion, 4);
  put_le(out, 12, 1, 4);
  put_le(out, 16, payload.size(), 8);
  put_le(out, 24, n, 8);
  auto digest = ipu::sha256(out.data() + ipu::format::kHeaderSize, n);
  std::memcpy(out.data() + 32, digest.data(), digest.size());
  return out;
}

uint64_t device_bytes(const ipu::format::Executable& exe) {
  uint64_t total = 0;
  for (const auto& t : exe.tensors()) {
    const uint64_t bytes = ipu::format::element_count(t) * ipu::format::dtype_size(t.dtype());
    if (bytes > kMaxFuzzedDevice || total + bytes > kMaxFuzzedDevice) return ~uint64_t{0};
    total += bytes;
  }
  return total;
}

void check(std::string_view bytes) {
  auto parsed = ipu::format::parse_executable(bytes, "fuzz.ipuexe");
  if (!parsed.ok()) {
    if (parsed.status().code() != ipu::StatusCode::kDataLoss &&
        parsed.status().code() != ipu::StatusCode::kFailedPrecondition) {
      std::abort();  // parse errors are documented as DataLoss or FailedPrecondition only
    }
    return;
  }
  ipu::Status verified = ipu::format::verify_executable(*parsed);
  if (verified.ok() && device_bytes(*parsed) > kMaxFuzzedDevice) return;
  auto engine = ipu::engine::Engine::create(std::move(*parsed), {});
  // The engine verifies first, so it can only accept what the verifier accepted.
  if (engine.ok() && !verified.ok()) std::abort();
  if (engine.ok()) {
    // Touch what create() prepared without running programs.
    ipu::engine::Engine& e = **engine;
    for (int i = 0; i < e.executable().tensors_size(); ++i) {
      auto span = e.tensor_bytes(static_cast<uint32_t>(i));
      if (!span.empty()) span[0] = span[span.size() - 1];
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  // kReframe: inputs that start with the magic are taken as whole files; anything else is a
  // protobuf payload to be framed correctly, so mutations reach verify_executable and the kernels.
  if (size >= sizeof kMagic && std::memcmp(data, kMagic, sizeof kMagic) == 0) {
    check(bytes);
  } else {
    check(reframe(bytes));
  }
  return 0;
}
