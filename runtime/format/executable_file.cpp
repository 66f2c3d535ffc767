#include "runtime/format/executable_file.h"

#include <zstd.h>

#include <cstring>

#include "runtime/base/file_io.h"
#include "runtime/base/sha256.h"
#include "runtime/format/payload_census.h"

namespace ipu::format {
namespace {

constexpr char kMagic[8] = {'I', 'P', 'U', 'C', 'C', 'E', 'X', '\x1a'};
constexpr uint32_t kCompressionZstd = 1;
constexpr int kZstdLevel = 3;

// Header fields, all little-endian, at fixed offsets.
struct HeaderLayout {
  static constexpr size_t kMagicOffset = 0;
  static constexpr size_t kVersionOffset = 8;
  static constexpr size_t kCompressionOffset = 12;
  static constexpr size_t kPayloadSizeOffset = 16;
  static constexpr size_t kCompressedSizeOffset = 24;
  static constexpr size_t kChecksumOffset = 32; // SHA-256 of the compressed payload
};

template <typename T> void put_le(std::string& out, size_t offset, T value) {
  for (size_t i = 0; i < sizeof(T); ++i)
    out[offset + i] = static_cast<char>((value >> (8 * i)) & 0xff);
}

template <typename T> T get_le(std::string_view in, size_t offset) {
  T value = 0;
  for (size_t i = 0; i < sizeof(T); ++i)
    value |= static_cast<T>(static_cast<uint8_t>(in[offset + i])) << (8 * i);
  return value;
}

} // namespace

std::string serialize_executable(const Executable& executable) {
  std::string payload;
  executable.SerializeToString(&payload);
  return frame_payload(payload);
}

std::string frame_payload(std::string_view payload) {
  std::string out(kHeaderSize + ZSTD_compressBound(payload.size()), '\0');
  size_t compressed = ZSTD_compress(out.data() + kHeaderSize, out.size() - kHeaderSize, payload.data(),
                                    payload.size(), kZstdLevel);
  // Compressing into a buffer of ZSTD_compressBound bytes cannot fail.
  if (ZSTD_isError(compressed)) std::abort();
  out.resize(kHeaderSize + compressed);
  std::memcpy(out.data() + HeaderLayout::kMagicOffset, kMagic, sizeof kMagic);
  put_le<uint32_t>(out, HeaderLayout::kVersionOffset, kFormatVersion);
  put_le<uint32_t>(out, HeaderLayout::kCompressionOffset, kCompressionZstd);
  put_le<uint64_t>(out, HeaderLayout::kPayloadSizeOffset, payload.size());
  put_le<uint64_t>(out, HeaderLayout::kCompressedSizeOffset, compressed);
  auto digest = sha256(out.data() + kHeaderSize, compressed);
  std::memcpy(out.data() + HeaderLayout::kChecksumOffset, digest.data(), digest.size());
  return out;
}

StatusOr<Executable> parse_executable(std::string_view bytes, const std::string& origin) {
  if (bytes.size() < kHeaderSize) {
    return data_loss(origin + ": not an ipucc executable (" + std::to_string(bytes.size()) +
                     " bytes, shorter than the " + std::to_string(kHeaderSize) + "-byte header)");
  }
  if (std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
    return data_loss(origin + ": not an ipucc executable (bad magic)");
  }
  uint32_t version = get_le<uint32_t>(bytes, HeaderLayout::kVersionOffset);
  if (version != kFormatVersion) {
    return failed_precondition(origin + ": executable format version " + std::to_string(version) +
                               ", but this build reads version " + std::to_string(kFormatVersion) +
                               "; recompile the model with this ipucc");
  }
  uint32_t compression = get_le<uint32_t>(bytes, HeaderLayout::kCompressionOffset);
  if (compression != kCompressionZstd) {
    return data_loss(origin + ": unknown compression " + std::to_string(compression));
  }
  uint64_t payload_size = get_le<uint64_t>(bytes, HeaderLayout::kPayloadSizeOffset);
  uint64_t compressed_size = get_le<uint64_t>(bytes, HeaderLayout::kCompressedSizeOffset);
  if (compressed_size != bytes.size() - kHeaderSize) {
    return data_loss(origin + ": truncated or padded executable (header says " +
                     std::to_string(compressed_size) + " payload bytes, file has " +
                     std::to_string(bytes.size() - kHeaderSize) + ")");
  }
  if (payload_size == 0 || payload_size > kMaxPayloadBytes) {
    return data_loss(origin + ": implausible payload size " + std::to_string(payload_size));
  }
  auto digest = sha256(bytes.data() + kHeaderSize, compressed_size);
  if (std::memcmp(digest.data(), bytes.data() + HeaderLayout::kChecksumOffset, digest.size()) != 0) {
    return data_loss(origin + ": checksum mismatch (the executable is corrupt)");
  }
  // The zstd frame states its own content size: it must agree with the header before anything
  // is allocated, so a lying header cannot make us reserve gigabytes for a few bytes of input.
  const unsigned long long frame_size = ZSTD_getFrameContentSize(bytes.data() + kHeaderSize, compressed_size);
  if (frame_size != payload_size) {
    return data_loss(origin + ": cannot decompress payload: the header's payload size (" +
                     std::to_string(payload_size) + ") does not match the zstd frame");
  }
  std::string payload(payload_size, '\0');
  size_t n = ZSTD_decompress(payload.data(), payload.size(), bytes.data() + kHeaderSize, compressed_size);
  if (ZSTD_isError(n) || n != payload_size) {
    return data_loss(origin + ": cannot decompress payload" +
                     (ZSTD_isError(n) ? std::string(": ") + ZSTD_getErrorName(n) : std::string()));
  }
  // Count what parsing would build before building it (payload_census.h).
  StatusOr<PayloadCensus> counted = take_census(payload);
  if (!counted.ok()) return data_loss(origin + ": " + counted.status().message());
  const PayloadCensus& census = *counted;
  if (census.parsed_bytes() > parsed_bytes_budget(payload_size)) {
    return data_loss(
        origin + ": the payload's " + std::to_string(payload_size) + " bytes would parse into about " +
        std::to_string(census.parsed_bytes()) + " bytes of objects (" + std::to_string(census.messages) +
        " messages), more than a compiled executable's " + std::to_string(parsed_bytes_budget(payload_size)));
  }
  if (census.source_onnx_bytes > source_onnx_budget(census.initial_value_bytes)) {
    return data_loss(origin + ": source_onnx holds " + std::to_string(census.source_onnx_bytes) +
                     " bytes, more than the model its tensors describe can (" +
                     std::to_string(source_onnx_budget(census.initial_value_bytes)) + ")");
  }
  Executable executable;
  if (!executable.ParseFromString(payload)) {
    return data_loss(origin + ": payload is not a valid executable message");
  }
  return executable;
}

StatusOr<Executable> read_executable_file(const std::string& path) {
  IPU_ASSIGN_OR_RETURN(std::string bytes, read_file(path));
  return parse_executable(bytes, path);
}

Status write_executable_file(const std::string& path, const Executable& executable) {
  return write_file_atomic(path, serialize_executable(executable));
}

} // namespace ipu::format
