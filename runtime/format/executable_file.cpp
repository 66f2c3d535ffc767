#include "runtime/format/executable_file.h"

#include <google/protobuf/util/field_mask_util.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "runtime/base/file_io.h"
#include "runtime/base/huge_pages.h"
#include "runtime/base/sha256.h"
#include "runtime/format/executable_summary.h"
#include "runtime/format/payload_census.h"

namespace ipu::format {
namespace {

constexpr char kMagic[8] = {'I', 'P', 'U', 'C', 'C', 'E', 'X', '\x1a'};
constexpr uint32_t kCompressionZstd = 1;
constexpr int kZstdLevel = 3;

// Header fields, all little-endian, at fixed offsets. The summary follows the header, the
// compressed payload the summary, and the data section the payload.
struct HeaderLayout {
  static constexpr size_t kMagicOffset = 0;
  static constexpr size_t kVersionOffset = 8;
  static constexpr size_t kCompressionOffset = 12;
  static constexpr size_t kPayloadSizeOffset = 16;
  static constexpr size_t kCompressedSizeOffset = 24;
  static constexpr size_t kChecksumOffset = 32; // SHA-256 of the compressed payload and the data section
  static constexpr size_t kSummarySizeOffset = 64;
  static constexpr size_t kSummaryChecksumOffset = 72; // SHA-256 of the summary
  static constexpr size_t kDataSizeOffset = 104;
  static constexpr size_t kReservedOffset = 112; // zeros to the header's end
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

// The sizes a header states, checked against each other and the file's size.
struct Frame {
  uint64_t payload_size = 0;
  uint64_t compressed_size = 0;
  uint64_t summary_size = 0;
  uint64_t data_size = 0;
  size_t summary_offset() const { return kHeaderSize; }
  size_t payload_offset() const { return kHeaderSize + summary_size; }
  size_t data_offset() const { return payload_offset() + compressed_size; }
};

StatusOr<Frame> read_header(std::string_view head, uint64_t file_size, const std::string& origin) {
  if (file_size < kHeaderSize || head.size() < kHeaderSize) {
    return data_loss(origin + ": not an ipucc executable (" + std::to_string(file_size) +
                     " bytes, shorter than the " + std::to_string(kHeaderSize) + "-byte header)");
  }
  if (std::memcmp(head.data(), kMagic, sizeof kMagic) != 0) {
    return data_loss(origin + ": not an ipucc executable (bad magic)");
  }
  uint32_t version = get_le<uint32_t>(head, HeaderLayout::kVersionOffset);
  if (version != kFormatVersion) {
    return failed_precondition(origin + ": executable format version " + std::to_string(version) +
                               ", but this build reads version " + std::to_string(kFormatVersion) +
                               "; recompile the model with this ipucc");
  }
  uint32_t compression = get_le<uint32_t>(head, HeaderLayout::kCompressionOffset);
  if (compression != kCompressionZstd) {
    return data_loss(origin + ": unknown compression " + std::to_string(compression));
  }
  const std::string_view reserved =
      head.substr(HeaderLayout::kReservedOffset, kHeaderSize - HeaderLayout::kReservedOffset);
  if (reserved.find_first_not_of('\0') != std::string_view::npos) {
    return data_loss(origin + ": the header's reserved bytes are not zero");
  }
  Frame frame;
  frame.payload_size = get_le<uint64_t>(head, HeaderLayout::kPayloadSizeOffset);
  frame.compressed_size = get_le<uint64_t>(head, HeaderLayout::kCompressedSizeOffset);
  frame.summary_size = get_le<uint64_t>(head, HeaderLayout::kSummarySizeOffset);
  frame.data_size = get_le<uint64_t>(head, HeaderLayout::kDataSizeOffset);
  if (frame.summary_size > kMaxSummaryBytes) {
    return data_loss(origin + ": implausible summary size " + std::to_string(frame.summary_size));
  }
  if (frame.data_size > kMaxDataBytes) {
    return data_loss(origin + ": implausible data section size " + std::to_string(frame.data_size));
  }
  const uint64_t body = file_size - kHeaderSize;
  if (frame.compressed_size > body || frame.data_size > body - frame.compressed_size ||
      frame.summary_size != body - frame.compressed_size - frame.data_size) {
    return data_loss(origin + ": truncated or padded executable (header says " +
                     std::to_string(frame.summary_size) + " summary, " +
                     std::to_string(frame.compressed_size) + " payload and " +
                     std::to_string(frame.data_size) + " data bytes, file has " + std::to_string(body) + ")");
  }
  if (frame.payload_size == 0 || frame.payload_size > kMaxPayloadBytes) {
    return data_loss(origin + ": implausible payload size " + std::to_string(frame.payload_size));
  }
  return frame;
}

bool checksum_matches(std::string_view bytes, std::string_view header, size_t checksum_offset) {
  auto digest = sha256(bytes.data(), bytes.size());
  return std::memcmp(digest.data(), header.data() + checksum_offset, digest.size()) == 0;
}

// Inflates the payload, bounded by what the header states and the frame confirms.
StatusOr<std::string> inflate(std::string_view compressed, uint64_t payload_size, const std::string& origin) {
  // The zstd frame states its own content size: it must agree with the header before anything
  // is allocated, so a lying header cannot make us reserve gigabytes for a few bytes of input.
  const unsigned long long frame_size = ZSTD_getFrameContentSize(compressed.data(), compressed.size());
  if (frame_size != payload_size) {
    return data_loss(origin + ": cannot decompress payload: the header's payload size (" +
                     std::to_string(payload_size) + ") does not match the zstd frame");
  }
  std::string payload;
  payload.reserve(payload_size);
  advise_huge_pages(payload.data(), payload_size); // a model's weights: tens of megabytes
  payload.resize(payload_size);
  size_t n = ZSTD_decompress(payload.data(), payload.size(), compressed.data(), compressed.size());
  if (ZSTD_isError(n) || n != payload_size) {
    return data_loss(origin + ": cannot decompress payload" +
                     (ZSTD_isError(n) ? std::string(": ") + ZSTD_getErrorName(n) : std::string()));
  }
  return payload;
}

// Counts what parsing would build before building it (payload_census.h). `data_bytes`: the data
// section's, initial values too.
Status check_census(std::string_view payload, uint64_t data_bytes, const std::string& origin) {
  StatusOr<PayloadCensus> counted = take_census(payload);
  if (!counted.ok()) return data_loss(origin + ": " + counted.status().message());
  const PayloadCensus& census = *counted;
  if (census.parsed_bytes() > parsed_bytes_budget(payload.size())) {
    return data_loss(origin + ": the payload's " + std::to_string(payload.size()) +
                     " bytes would parse into about " + std::to_string(census.parsed_bytes()) +
                     " bytes of objects (" + std::to_string(census.messages) +
                     " messages), more than a compiled executable's " +
                     std::to_string(parsed_bytes_budget(payload.size())));
  }
  const uint64_t source_onnx_limit = source_onnx_budget(census.initial_value_bytes + data_bytes);
  if (census.source_onnx_bytes > source_onnx_limit) {
    return data_loss(origin + ": source_onnx holds " + std::to_string(census.source_onnx_bytes) +
                     " bytes, more than the model its tensors describe can (" +
                     std::to_string(source_onnx_limit) + ")");
  }
  return Status();
}

// Every field of `message` but those named `skipped`, copied into `copy` (protobuf's own field
// copying, so fields added to the schema later are copied too).
void copy_fields_except(const google::protobuf::Message& message,
                        std::initializer_list<std::string_view> skipped, google::protobuf::Message* copy) {
  google::protobuf::FieldMask mask;
  const google::protobuf::Descriptor* descriptor = message.GetDescriptor();
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const std::string& name = descriptor->field(i)->name();
    if (std::find(skipped.begin(), skipped.end(), name) == skipped.end()) mask.add_paths(name);
  }
  google::protobuf::util::FieldMaskUtil::MergeMessageTo(message, mask, {}, copy);
}

// A tensor whose initial value may sit in the data section: all but the hyper-parameters, which
// the summary and the host read from the message (hyper_parameters.h).
bool value_goes_to_data(const Tensor& tensor) {
  return tensor.role() != HYPER_PARAMETERS;
}

// The executable's message with its initial values moved into the data section (in tensor order,
// each at its initial_data range), and that section.
std::pair<Executable, std::string> split_initial_values(const Executable& executable,
                                                        const InitialData& initial_data) {
  Executable message;
  copy_fields_except(executable, {"tensors"}, &message);
  std::string data;
  for (const Tensor& tensor : executable.tensors()) {
    Tensor* copy = message.add_tensors();
    copy_fields_except(tensor, {"initial_value", "initial_data"}, copy);
    const std::string_view value = initial_data.of(tensor);
    if (value.empty()) continue;
    if (!value_goes_to_data(tensor)) {
      copy->set_initial_value(value.data(), value.size());
      continue;
    }
    copy->mutable_initial_data()->set_offset(data.size());
    copy->mutable_initial_data()->set_size(value.size());
    data.append(value);
  }
  return {std::move(message), std::move(data)};
}

// Where each tensor's initial value is must be where the writer puts it, and inside the section.
Status check_initial_value_places(const Executable& executable, const InitialData& initial_data,
                                  const std::string& origin) {
  for (const Tensor& tensor : executable.tensors()) {
    if (!tensor.has_initial_data()) continue;
    if (!tensor.initial_value().empty()) {
      return data_loss(origin + ": tensor '" + tensor.name() +
                       "' has an initial value both in the message and in the data section");
    }
    if (!value_goes_to_data(tensor)) {
      return data_loss(
          origin + ": tensor '" + tensor.name() +
          "' holds hyper-parameters, whose initial value belongs in the message, not the data section");
    }
  }
  return initial_data.check(executable, origin);
}

// The checked frame's message, its initial values still in the data section, and that section.
struct ParsedFrame {
  Executable executable;
  std::string_view data;
};

StatusOr<ParsedFrame> parse_frame(std::string_view bytes, const std::string& origin) {
  IPU_ASSIGN_OR_RETURN(const Frame frame, read_header(bytes, bytes.size(), origin));
  const std::string_view summary = bytes.substr(frame.summary_offset(), frame.summary_size);
  const std::string_view compressed = bytes.substr(frame.payload_offset(), frame.compressed_size);
  if (!checksum_matches(summary, bytes, HeaderLayout::kSummaryChecksumOffset)) {
    return data_loss(origin + ": summary checksum mismatch (the executable is corrupt)");
  }
  // The compressed payload and the data section after it, checked as one.
  if (!checksum_matches(bytes.substr(frame.payload_offset()), bytes, HeaderLayout::kChecksumOffset)) {
    return data_loss(origin + ": checksum mismatch (the executable is corrupt)");
  }
  ParsedFrame parsed;
  parsed.data = bytes.substr(frame.data_offset(), frame.data_size);
  IPU_ASSIGN_OR_RETURN(const std::string payload, inflate(compressed, frame.payload_size, origin));
  IPU_RETURN_IF_ERROR(check_census(payload, frame.data_size, origin));
  if (!parsed.executable.ParseFromString(payload)) {
    return data_loss(origin + ": payload is not a valid executable message");
  }
  // What a cache hit reports and checks must be what runs.
  if (summarize(parsed.executable).SerializeAsString() != summary) {
    return data_loss(origin + ": the summary does not match the payload (the executable was edited)");
  }
  return parsed;
}

} // namespace

std::string serialize_executable(const Executable& executable, const InitialData& initial_data) {
  const auto [message, data] = split_initial_values(executable, initial_data);
  return frame_payload(message.SerializeAsString(), summarize(executable).SerializeAsString(), data);
}

std::string frame_payload(std::string_view payload, std::string_view summary, std::string_view data) {
  const size_t payload_offset = kHeaderSize + summary.size();
  std::string out(payload_offset + ZSTD_compressBound(payload.size()) + data.size(), '\0');
  size_t compressed = ZSTD_compress(out.data() + payload_offset, out.size() - payload_offset, payload.data(),
                                    payload.size(), kZstdLevel);
  // Compressing into a buffer of ZSTD_compressBound bytes cannot fail.
  if (ZSTD_isError(compressed)) std::abort();
  if (!data.empty()) std::memcpy(out.data() + payload_offset + compressed, data.data(), data.size());
  out.resize(payload_offset + compressed + data.size());
  std::memcpy(out.data() + HeaderLayout::kMagicOffset, kMagic, sizeof kMagic);
  put_le<uint32_t>(out, HeaderLayout::kVersionOffset, kFormatVersion);
  put_le<uint32_t>(out, HeaderLayout::kCompressionOffset, kCompressionZstd);
  put_le<uint64_t>(out, HeaderLayout::kPayloadSizeOffset, payload.size());
  put_le<uint64_t>(out, HeaderLayout::kCompressedSizeOffset, compressed);
  put_le<uint64_t>(out, HeaderLayout::kDataSizeOffset, data.size());
  auto digest = sha256(out.data() + payload_offset, compressed + data.size());
  std::memcpy(out.data() + HeaderLayout::kChecksumOffset, digest.data(), digest.size());
  put_le<uint64_t>(out, HeaderLayout::kSummarySizeOffset, summary.size());
  std::memcpy(out.data() + kHeaderSize, summary.data(), summary.size());
  auto summary_digest = sha256(summary.data(), summary.size());
  std::memcpy(out.data() + HeaderLayout::kSummaryChecksumOffset, summary_digest.data(),
              summary_digest.size());
  return out;
}

StatusOr<Executable> parse_executable(std::string_view bytes, const std::string& origin) {
  IPU_ASSIGN_OR_RETURN(ParsedFrame parsed, parse_frame(bytes, origin));
  const InitialData initial_data(nullptr, parsed.data);
  IPU_RETURN_IF_ERROR(check_initial_value_places(parsed.executable, initial_data, origin));
  for (Tensor& tensor : *parsed.executable.mutable_tensors()) {
    if (!tensor.has_initial_data()) continue;
    const std::string_view value = initial_data.of(tensor);
    tensor.clear_initial_data();
    tensor.set_initial_value(value.data(), value.size());
  }
  return std::move(parsed.executable);
}

StatusOr<LoadedExecutable> load_executable(FileBytes file, const std::string& origin) {
  IPU_ASSIGN_OR_RETURN(ParsedFrame parsed, parse_frame(file.bytes, origin));
  LoadedExecutable loaded{std::move(parsed.executable), InitialData(std::move(file.owner), parsed.data)};
  IPU_RETURN_IF_ERROR(check_initial_value_places(loaded.executable, loaded.initial_data, origin));
  return loaded;
}

StatusOr<uint64_t> executable_summary_end(std::string_view head, uint64_t file_size,
                                          const std::string& origin) {
  IPU_ASSIGN_OR_RETURN(const Frame frame, read_header(head, file_size, origin));
  return frame.payload_offset();
}

StatusOr<ExecutableSummary> parse_executable_summary(std::string_view head, uint64_t file_size,
                                                     const std::string& origin) {
  IPU_ASSIGN_OR_RETURN(const Frame frame, read_header(head, file_size, origin));
  if (head.size() < frame.payload_offset()) {
    return data_loss(origin + ": " + std::to_string(head.size()) +
                     " bytes read, short of the summary's end at " + std::to_string(frame.payload_offset()));
  }
  const std::string_view summary = head.substr(frame.summary_offset(), frame.summary_size);
  if (!checksum_matches(summary, head, HeaderLayout::kSummaryChecksumOffset)) {
    return data_loss(origin + ": summary checksum mismatch (the executable is corrupt)");
  }
  ExecutableSummary parsed;
  if (!parsed.ParseFromArray(summary.data(), static_cast<int>(summary.size()))) {
    return data_loss(origin + ": the summary is not a valid summary message");
  }
  return parsed;
}

StatusOr<Executable> read_executable_file(const std::string& path) {
  IPU_ASSIGN_OR_RETURN(std::string bytes, read_file(path));
  return parse_executable(bytes, path);
}

StatusOr<LoadedExecutable> load_executable_file(const std::string& path) {
  IPU_ASSIGN_OR_RETURN(FileBytes file, map_file(path));
  return load_executable(std::move(file), path);
}

Status write_executable_file(const std::string& path, const Executable& executable) {
  return write_file_atomic(path, serialize_executable(executable));
}

} // namespace ipu::format
