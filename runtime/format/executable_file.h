// The framed executable file: header (magic, format version, compression, sizes, checksums), the
// executable's summary (executable_summary.h), the zstd-compressed protobuf, then the data section
// holding the tensors' initial values uncompressed. Layout in docs/executable_format.md.
#pragma once

#include <string>
#include <string_view>

#include "runtime/base/file_io.h"
#include "runtime/base/status.h"
#include "runtime/format/executable.pb.h"
#include "runtime/format/initial_data.h"

namespace ipu::format {

inline constexpr uint32_t kFormatVersion = 7;
inline constexpr size_t kHeaderSize = 128;
// Refuse to inflate payloads larger than this: a hostile header must not make us allocate 2^64.
// The initial values are not in the payload: the data section holds them, up to kMaxDataBytes
// (what a remote cache may send; BERT-large's weights are 1.3 GB in float32).
inline constexpr uint64_t kMaxPayloadBytes = uint64_t{1} << 30;
inline constexpr uint64_t kMaxDataBytes = uint64_t{4} << 30;
// A summary is kilobytes (a pipeline's schedule is its largest part); this bounds what a hostile
// one can make protobuf build.
inline constexpr uint64_t kMaxSummaryBytes = uint64_t{1} << 20;

// `initial_data`: where the initial values of the executable's tensors with initial_data ranges
// are (an executable loaded by load_executable); executables built in memory hold theirs inline.
std::string serialize_executable(const Executable& executable, const InitialData& initial_data = {});
// The frame around an already serialized payload (without initial values but the
// hyper-parameters'), summary and data section (what serialize_executable writes).
std::string frame_payload(std::string_view payload, std::string_view summary, std::string_view data = {});

// Checks the frame (magic, version, sizes, checksum) and parses the payload, with every initial
// value copied into its tensor's message. `origin` names the file or cache key in error messages.
// Does not verify the program: see verify_executable.
StatusOr<Executable> parse_executable(std::string_view bytes, const std::string& origin);

// What a run reads: parse_executable's checks, but the initial values stay in `file`'s data
// section, which the result holds (no copy of the weights before the device's).
StatusOr<LoadedExecutable> load_executable(FileBytes file, const std::string& origin);

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
// load_executable of the file at `path`, mapped (map_file).
StatusOr<LoadedExecutable> load_executable_file(const std::string& path);
Status write_executable_file(const std::string& path, const Executable& executable);

} // namespace ipu::format
