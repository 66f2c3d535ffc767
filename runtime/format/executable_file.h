// The framed executable file: header (magic, format version, compression, sizes, checksums), the
// executable's summary (executable_summary.h), then the zstd-compressed protobuf. Layout in
// docs/executable_format.md.
#pragma once

#include <string>
#include <string_view>

#include "runtime/base/status.h"
#include "runtime/format/executable.pb.h"

namespace ipu::format {

inline constexpr uint32_t kFormatVersion = 6;
inline constexpr size_t kHeaderSize = 128;
// Refuse to inflate payloads larger than this: a hostile header must not make us allocate 2^64.
inline constexpr uint64_t kMaxPayloadBytes = uint64_t{1} << 30;
// A summary is kilobytes (a pipeline's schedule is its largest part); this bounds what a hostile
// one can make protobuf build.
inline constexpr uint64_t kMaxSummaryBytes = uint64_t{1} << 20;

std::string serialize_executable(const Executable& executable);
// The frame around an already serialized payload and summary (what serialize_executable writes
// for its message's bytes and summarize()'s).
std::string frame_payload(std::string_view payload, std::string_view summary);

// Checks the frame (magic, version, sizes, checksum) and parses the payload. `origin` names the
// file or cache key in error messages. Does not verify the program: see verify_executable.
StatusOr<Executable> parse_executable(std::string_view bytes, const std::string& origin);

// Where the summary of the file whose first bytes are `head` (at least kHeaderSize of them) ends:
// the bytes from the file's start that parse_executable_summary needs. `file_size` is the whole
// file's. Checks the header as parse_executable does.
StatusOr<uint64_t> executable_summary_end(std::string_view head, uint64_t file_size,
                                          const std::string& origin);

// The summary of the file of `file_size` bytes that starts with `head`: what a cache hit reads. Checks
// the header and the summary's checksum, not the payload's (parse_executable checks it all).
StatusOr<ExecutableSummary> parse_executable_summary(std::string_view head, uint64_t file_size,
                                                     const std::string& origin);

StatusOr<Executable> read_executable_file(const std::string& path);
Status write_executable_file(const std::string& path, const Executable& executable);

} // namespace ipu::format
