// The framed executable file: header (magic, format version, compression, sizes, checksum)
// followed by the zstd-compressed protobuf. Layout in docs/executable_format.md.
#pragma once

#include <string>
#include <string_view>

#include "runtime/base/status.h"
#include "runtime/format/executable.pb.h"

namespace ipu::format {

inline constexpr uint32_t kFormatVersion = 5;
inline constexpr size_t kHeaderSize = 64;
// Refuse to inflate payloads larger than this: a hostile header must not make us allocate 2^64.
inline constexpr uint64_t kMaxPayloadBytes = uint64_t{1} << 30;

std::string serialize_executable(const Executable& executable);
// The frame around an already serialized payload (what serialize_executable writes for its
// message's bytes).
std::string frame_payload(std::string_view payload);

// Checks the frame (magic, version, sizes, checksum) and parses the payload. `origin` names the
// file or cache key in error messages. Does not verify the program: see verify_executable.
StatusOr<Executable> parse_executable(std::string_view bytes, const std::string& origin);

StatusOr<Executable> read_executable_file(const std::string& path);
Status write_executable_file(const std::string& path, const Executable& executable);

} // namespace ipu::format
