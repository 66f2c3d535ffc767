// The framed executable file (runtime/format/executable_file.{h,cpp}): a round trip keeps every
// field, the summary ahead of the payload reads alone and always matches it, the initial values
// travel in the data section and a run reads them there, and every kind of corruption of the
// frame is rejected with DataLoss (or FailedPrecondition for a format version this build does not
// read), never accepted or crashed on.
#include <doctest/doctest.h>
#include <google/protobuf/util/message_differencer.h>
#include <zstd.h>

#include <cstring>
#include <string>

#include "runtime/base/file_io.h"
#include "runtime/base/sha256.h"
#include "runtime/format/executable_file.h"
#include "runtime/format/executable_summary.h"
#include "tests/unit/test_temp_dir.h"

namespace {

using ipu::StatusCode;
using ipu::format::Executable;
using ipu::format::kFormatVersion;
using ipu::format::kHeaderSize;
using ipu::format::kMaxPayloadBytes;
using ipu::format::kMaxSummaryBytes;
using ipu::format::parse_executable;
using ipu::format::serialize_executable;
using ipu::testing::TempDir;

// Header offsets from executable_file.cpp (docs/executable_format.md).
constexpr size_t kVersionOffset = 8;
constexpr size_t kCompressionOffset = 12;
constexpr size_t kPayloadSizeOffset = 16;
constexpr size_t kCompressedSizeOffset = 24;
constexpr size_t kChecksumOffset = 32;
constexpr size_t kSummarySizeOffset = 64;
constexpr size_t kSummaryChecksumOffset = 72;
constexpr size_t kDataSizeOffset = 104;
constexpr char kMagic[8] = {'I', 'P', 'U', 'C', 'C', 'E', 'X', '\x1a'};

// An executable that sets at least one field of every message type, so a round trip that lost
// any of them would show.
Executable sample_executable() {
  Executable exe;
  exe.set_format_version(kFormatVersion);
  exe.set_model_name("round_trip");
  exe.set_mode("train");
  auto* target = exe.mutable_target();
  target->set_arch("custom");
  target->set_num_ipus(2);
  target->set_tiles_per_ipu(4);
  target->set_bytes_per_tile(1 << 16);
  target->set_worker_threads_per_tile(6);
  target->set_clock_hz(1.33e9);
  exe.set_batch_size(2);
  exe.set_steps_per_execution(3);
  exe.set_num_classes(4);
  for (int i = 0; i < 2; ++i) {
    auto* t = exe.add_tensors();
    t->set_name("t" + std::to_string(i));
    t->set_dtype(i == 0 ? ipu::format::FLOAT32 : ipu::format::INT32);
    t->add_shape(2);
    t->add_shape(4);
    t->set_role(i == 0 ? ipu::format::WEIGHT : ipu::format::LABEL);
    t->set_ipu(static_cast<uint32_t>(i));
    auto* iv = t->add_mapping();
    iv->set_tile(static_cast<uint32_t>(4 * i));
    iv->set_begin(0);
    iv->set_end(8);
    if (i == 0) {
      std::string bytes(32, '\0');
      for (size_t b = 0; b < bytes.size(); ++b)
        bytes[b] = static_cast<char>(b * 7 + 1);
      t->set_initial_value(bytes);
    }
  }
  auto* cs = exe.add_compute_sets();
  cs->set_name("forward/0");
  cs->set_cycles(1234);
  cs->set_exchange_bytes(64);
  auto* v = cs->add_vertices();
  v->set_codelet(3);
  v->set_tile(1);
  v->add_operands(0);
  v->add_operands(0);
  v->add_params(0);
  v->add_params(0);
  v->add_params(8);
  v->add_fparams(0.5f);
  v->set_cycles(99);
  auto* s = exe.add_streams();
  s->set_name("features");
  s->set_direction(ipu::format::Stream::HOST_TO_DEVICE);
  s->set_dtype(ipu::format::FLOAT32);
  s->add_shape(2);
  s->add_shape(4);
  auto* p = exe.add_programs();
  p->set_name("train");
  p->set_cycles_per_step(777);
  auto* seq = p->mutable_program()->mutable_sequence();
  seq->add_steps()->mutable_stream_in()->set_stream(0);
  auto* rep = seq->add_steps()->mutable_repeat();
  rep->set_count(3);
  rep->mutable_body()->set_execute(0);
  auto* copy = seq->add_steps()->mutable_copy();
  copy->set_source(0);
  copy->set_destination(1);
  seq->add_steps()->mutable_stream_out()->set_tensor(1);
  auto* pipe = exe.mutable_pipeline();
  pipe->set_num_stages(2);
  pipe->add_stage_ipu(0);
  pipe->add_stage_ipu(1);
  pipe->set_gradient_accumulation(4);
  pipe->set_replicas(1);
  pipe->set_schedule("1f1b");
  auto* est = exe.mutable_estimates();
  est->set_peak_tile_bytes(4096);
  est->set_fullest_tile(3);
  est->set_total_bytes(10000);
  est->set_tiles_used(5);
  est->set_vertices(1);
  auto* m = exe.add_manifest();
  m->set_name("batch_size");
  m->set_value("2");
  exe.set_compiler_build("test");
  auto* hyper = exe.add_tensors();
  hyper->set_name(std::string(ipu::format::kHyperParametersTensor));
  hyper->set_role(ipu::format::HYPER_PARAMETERS);
  hyper->set_dtype(ipu::format::FLOAT32);
  hyper->add_shape(ipu::format::kHyperParameterCount);
  std::string values(4 * ipu::format::kHyperParameterCount, '\0');
  values[3] = '\x3f'; // the first slot holds 0.5f
  hyper->set_initial_value(values);
  exe.set_learning_rate_schedule("exponential:decay_steps=10,decay_rate=0.5");
  return exe;
}

template <typename T> void put_le(std::string& out, size_t offset, T value) {
  for (size_t i = 0; i < sizeof(T); ++i)
    out[offset + i] = static_cast<char>((value >> (8 * i)) & 0xff);
}

template <typename T> T get_le(const std::string& in, size_t offset) {
  T value = 0;
  for (size_t i = 0; i < sizeof(T); ++i)
    value |= static_cast<T>(static_cast<uint8_t>(in[offset + i])) << (8 * i);
  return value;
}

// Builds a frame by hand around `compressed` and an empty summary, with correct checksums, so only
// the content is wrong.
std::string frame(const std::string& compressed, uint64_t payload_size) {
  std::string out(kHeaderSize, '\0');
  auto empty_digest = ipu::sha256("", 0);
  std::memcpy(out.data() + kSummaryChecksumOffset, empty_digest.data(), empty_digest.size());
  std::memcpy(out.data(), kMagic, sizeof kMagic);
  put_le<uint32_t>(out, kVersionOffset, kFormatVersion);
  put_le<uint32_t>(out, kCompressionOffset, 1);
  put_le<uint64_t>(out, kPayloadSizeOffset, payload_size);
  put_le<uint64_t>(out, kCompressedSizeOffset, compressed.size());
  auto digest = ipu::sha256(compressed.data(), compressed.size());
  std::memcpy(out.data() + kChecksumOffset, digest.data(), digest.size());
  return out + compressed;
}

std::string zstd_compress(const std::string& payload) {
  std::string out(ZSTD_compressBound(payload.size()), '\0');
  size_t n = ZSTD_compress(out.data(), out.size(), payload.data(), payload.size(), 3);
  REQUIRE_FALSE(ZSTD_isError(n));
  out.resize(n);
  return out;
}

size_t payload_offset(const std::string& bytes) {
  return kHeaderSize + get_le<uint64_t>(bytes, kSummarySizeOffset);
}

size_t data_size(const std::string& bytes) {
  return get_le<uint64_t>(bytes, kDataSizeOffset);
}

// The sample's weight's initial value (in the data section) and its hyper-parameters' (inline).
const std::string& weight_value(const Executable& exe) {
  return exe.tensors(0).initial_value();
}

// Recomputes the checksum of a frame whose payload or data section was edited, so the test reaches
// later checks.
void fix_checksum(std::string& bytes) {
  auto digest = ipu::sha256(bytes.data() + payload_offset(bytes), bytes.size() - payload_offset(bytes));
  std::memcpy(bytes.data() + kChecksumOffset, digest.data(), digest.size());
}

void expect_code(const std::string& bytes, StatusCode code, const std::string& fragment = "") {
  auto parsed = parse_executable(bytes, "bad.ipuexe");
  REQUIRE_FALSE(parsed.ok());
  INFO(parsed.status().message());
  CHECK(parsed.status().code() == code);
  CHECK(parsed.status().message().find("bad.ipuexe") != std::string::npos);
  if (!fragment.empty()) CHECK(parsed.status().message().find(fragment) != std::string::npos);
}

TEST_CASE("executable file: serialize then parse is the identity") {
  const Executable exe = sample_executable();
  const std::string bytes = serialize_executable(exe);
  REQUIRE(bytes.size() > kHeaderSize);
  CHECK(std::memcmp(bytes.data(), kMagic, sizeof kMagic) == 0);
  CHECK(get_le<uint32_t>(bytes, kVersionOffset) == kFormatVersion);
  // The weight's 32 bytes are the data section, at the file's end; the hyper-parameters' stay in
  // the payload.
  REQUIRE(data_size(bytes) == weight_value(exe).size());
  CHECK(bytes.substr(bytes.size() - data_size(bytes)) == weight_value(exe));
  const uint64_t compressed = get_le<uint64_t>(bytes, kCompressedSizeOffset);
  CHECK(compressed == bytes.size() - payload_offset(bytes) - data_size(bytes));
  const uint64_t payload = get_le<uint64_t>(bytes, kPayloadSizeOffset);
  CHECK(ZSTD_getFrameContentSize(bytes.data() + payload_offset(bytes), compressed) == payload);
  // The weight's inline value (a 1-byte tag, a 1-byte length, 32 bytes) became a range (tag,
  // length, size's tag and varint; the offset 0 is not written).
  CHECK(payload == exe.ByteSizeLong() - (2 + weight_value(exe).size()) + 4);
  CHECK(get_le<uint64_t>(bytes, kSummarySizeOffset) == ipu::format::summarize(exe).ByteSizeLong());

  auto parsed = parse_executable(bytes, "ok.ipuexe");
  REQUIRE(parsed.ok());
  std::string diff;
  google::protobuf::util::MessageDifferencer differencer;
  differencer.ReportDifferencesToString(&diff);
  CHECK_MESSAGE(differencer.Compare(exe, *parsed), diff);
  CHECK(parsed->SerializeAsString() == exe.SerializeAsString());
  // Serialization is deterministic: the same executable always makes the same file.
  CHECK(serialize_executable(*parsed) == bytes);
}

TEST_CASE("executable file: an empty executable (no payload at all) is refused") {
  auto parsed = parse_executable(serialize_executable(Executable()), "empty");
  REQUIRE_FALSE(parsed.ok());
  CHECK(parsed.status().code() == StatusCode::kDataLoss);
  CHECK(parsed.status().message().find("implausible payload size 0") != std::string::npos);
}

TEST_CASE("executable file: write then read through the file system") {
  const TempDir dir;
  const std::string path = dir.file("model.ipuexe");
  const Executable exe = sample_executable();
  REQUIRE(ipu::format::write_executable_file(path, exe).ok());
  auto read = ipu::format::read_executable_file(path);
  REQUIRE(read.ok());
  CHECK(google::protobuf::util::MessageDifferencer::Equals(exe, *read));
  auto missing = ipu::format::read_executable_file(dir.file("missing.ipuexe"));
  CHECK(missing.status().code() == StatusCode::kNotFound);
}

TEST_CASE("executable file: shorter than the header") {
  const std::string bytes = serialize_executable(sample_executable());
  for (size_t n : {size_t{0}, size_t{1}, size_t{8}, kHeaderSize - 1}) {
    CAPTURE(n);
    expect_code(bytes.substr(0, n), StatusCode::kDataLoss, "header");
  }
}

TEST_CASE("executable file: bad magic") {
  std::string bytes = serialize_executable(sample_executable());
  bytes[0] = 'X';
  expect_code(bytes, StatusCode::kDataLoss, "magic");
  // Something else entirely, of header length.
  expect_code(std::string(kHeaderSize + 10, '\0'), StatusCode::kDataLoss, "magic");
  expect_code(std::string(200, 'A'), StatusCode::kDataLoss, "magic");
}

TEST_CASE("executable file: a version mismatch is a failed precondition naming both versions") {
  // kFormatVersion - 1: the previous format, whose codelets read other operands and params (version
  // 2's LAMB took its hyper-parameters as float params), is refused rather than misread.
  for (uint32_t version : {0u, kFormatVersion - 1, kFormatVersion + 1, 0xffffffffu}) {
    CAPTURE(version);
    std::string bytes = serialize_executable(sample_executable());
    put_le<uint32_t>(bytes, kVersionOffset, version);
    auto parsed = parse_executable(bytes, "old.ipuexe");
    REQUIRE_FALSE(parsed.ok());
    CHECK(parsed.status().code() == StatusCode::kFailedPrecondition);
    const std::string message = parsed.status().message();
    CHECK(message.find("old.ipuexe") != std::string::npos);
    CHECK(message.find("version " + std::to_string(version)) != std::string::npos);
    CHECK(message.find("version " + std::to_string(kFormatVersion)) != std::string::npos);
  }
}

TEST_CASE("executable file: unknown compression") {
  std::string bytes = serialize_executable(sample_executable());
  put_le<uint32_t>(bytes, kCompressionOffset, 0);
  expect_code(bytes, StatusCode::kDataLoss, "compression");
  put_le<uint32_t>(bytes, kCompressionOffset, 2);
  expect_code(bytes, StatusCode::kDataLoss, "compression");
}

TEST_CASE("executable file: every header byte matters") {
  // A one-bit flip in any of the header's bytes is caught: magic, compression, sizes, checksums
  // and reserved bytes by DataLoss, the version by FailedPrecondition. (A single low bit keeps a flipped
  // payload size small, so no test allocates gigabytes; large sizes are tested below.)
  const std::string good = serialize_executable(sample_executable());
  for (size_t i = 0; i < kHeaderSize; ++i) {
    for (uint8_t mask : {uint8_t{0x01}, uint8_t{0x40}}) {
      // 0x40 in the payload size's byte 3 asks for a 1 GiB buffer (see "payload size lies").
      if (mask == 0x40 && i == kPayloadSizeOffset + 3) continue;
      CAPTURE(i);
      CAPTURE(int{mask});
      std::string bytes = good;
      bytes[i] = static_cast<char>(static_cast<uint8_t>(bytes[i]) ^ mask);
      const StatusCode expected = i >= kVersionOffset && i < kVersionOffset + 4
                                      ? StatusCode::kFailedPrecondition
                                      : StatusCode::kDataLoss;
      expect_code(bytes, expected);
    }
  }
}

TEST_CASE("executable file: a flipped summary or payload byte fails its checksum") {
  const std::string good = serialize_executable(sample_executable());
  for (size_t i = kHeaderSize; i < good.size(); ++i) {
    CAPTURE(i);
    std::string bytes = good;
    bytes[i] = static_cast<char>(static_cast<uint8_t>(bytes[i]) ^ 0x10);
    expect_code(bytes, StatusCode::kDataLoss, "checksum");
  }
}

TEST_CASE("executable file: truncated or padded") {
  const std::string good = serialize_executable(sample_executable());
  SUBCASE("truncated by one byte") {
    expect_code(good.substr(0, good.size() - 1), StatusCode::kDataLoss, "truncated");
  }
  SUBCASE("truncated to the header") {
    expect_code(good.substr(0, kHeaderSize), StatusCode::kDataLoss, "truncated");
  }
  SUBCASE("truncated halfway") {
    expect_code(good.substr(0, good.size() / 2 + kHeaderSize / 2), StatusCode::kDataLoss);
  }
  SUBCASE("padded by one byte") {
    expect_code(good + '\0', StatusCode::kDataLoss, "padded");
  }
  SUBCASE("padded by a second copy") {
    expect_code(good + good, StatusCode::kDataLoss, "padded");
  }
  SUBCASE("payload truncated, with the compressed size and checksum made consistent") {
    // The frame is self-consistent, so only decompression can notice.
    const size_t data = data_size(good);
    std::string bytes = good.substr(0, good.size() - data - 3) + good.substr(good.size() - data);
    put_le<uint64_t>(bytes, kCompressedSizeOffset, bytes.size() - payload_offset(bytes) - data);
    fix_checksum(bytes);
    expect_code(bytes, StatusCode::kDataLoss, "decompress");
  }
  SUBCASE("data section truncated, with its size and checksum made consistent") {
    // The weight's range now runs past the section's end.
    std::string bytes = good.substr(0, good.size() - 3);
    put_le<uint64_t>(bytes, kDataSizeOffset, data_size(good) - 3);
    fix_checksum(bytes);
    expect_code(bytes, StatusCode::kDataLoss, "tensor 't0': its initial value at bytes [0, +32)");
  }
}

TEST_CASE("executable file: the payload size lies") {
  const std::string good = serialize_executable(sample_executable());
  const uint64_t real = get_le<uint64_t>(good, kPayloadSizeOffset);
  for (uint64_t lie : {real - 1, real + 1, real / 2, real * 2, uint64_t{1} << 20}) {
    CAPTURE(lie);
    std::string bytes = good;
    put_le<uint64_t>(bytes, kPayloadSizeOffset, lie);
    expect_code(bytes, StatusCode::kDataLoss, "decompress");
  }
  for (uint64_t lie : {uint64_t{0}, kMaxPayloadBytes + 1, uint64_t{1} << 40, ~uint64_t{0}}) {
    CAPTURE(lie);
    std::string bytes = good;
    put_le<uint64_t>(bytes, kPayloadSizeOffset, lie);
    expect_code(bytes, StatusCode::kDataLoss, "implausible");
  }
}

TEST_CASE("executable file: a data section size past the cap is refused before anything is read") {
  std::string bytes = serialize_executable(sample_executable());
  for (uint64_t lie : {ipu::format::kMaxDataBytes + 1, ~uint64_t{0}}) {
    CAPTURE(lie);
    put_le<uint64_t>(bytes, kDataSizeOffset, lie);
    expect_code(bytes, StatusCode::kDataLoss, "implausible data section size");
  }
}

TEST_CASE("executable file: compressed garbage with a correct checksum") {
  SUBCASE("random bytes") {
    std::string garbage(100, '\0');
    for (size_t i = 0; i < garbage.size(); ++i)
      garbage[i] = static_cast<char>((i * 131 + 17) & 0xff);
    expect_code(frame(garbage, 100), StatusCode::kDataLoss, "decompress");
  }
  SUBCASE("zstd magic followed by garbage") {
    std::string garbage = "\x28\xb5\x2f\xfd" + std::string(40, '\x7f');
    expect_code(frame(garbage, 40), StatusCode::kDataLoss, "decompress");
  }
  SUBCASE("a valid frame whose last byte is altered") {
    std::string compressed = zstd_compress(sample_executable().SerializeAsString());
    compressed.back() = static_cast<char>(compressed.back() ^ 0x55);
    expect_code(frame(compressed, sample_executable().ByteSizeLong()), StatusCode::kDataLoss);
  }
}

TEST_CASE("executable file: a header with an empty payload is not an executable") {
  // Only a header (payload size 0, checksum of nothing): zero bytes are not a zstd frame.
  expect_code(frame("", 0), StatusCode::kDataLoss, "implausible payload size 0");
}

TEST_CASE("executable file: a valid zstd frame holding bytes that are not an Executable") {
  // Each is a malformed protobuf encoding: a truncated varint, field number 0, a length running
  // past the end, a truncated fixed64, an end-group tag without a start.
  const std::string payloads[] = {
      std::string("\x08\xff\xff", 3), std::string("\x00\x01", 2), std::string("\x12\x40hello", 7),
      std::string("\x31\x01\x02", 3), std::string("\x0c", 1),     std::string(30, '\xff'),
  };
  for (const std::string& payload : payloads) {
    CAPTURE(payload.size());
    Executable probe;
    REQUIRE_FALSE(probe.ParseFromString(payload)); // the premise of the test
    expect_code(frame(zstd_compress(payload), payload.size()), StatusCode::kDataLoss,
                "not a valid executable");
  }
}

TEST_CASE("executable file: the summary is the executable's, and reads from the file's first bytes") {
  const Executable exe = sample_executable();
  const std::string bytes = serialize_executable(exe);
  const ipu::format::ExecutableSummary want = ipu::format::summarize(exe);
  CHECK(want.model_name() == "round_trip");
  CHECK(want.compute_set_count() == 1);
  REQUIRE(want.programs_size() == 1);
  CHECK(want.programs(0).cycles_per_step() == 777);
  CHECK(want.manifest_size() == 1);
  CHECK(want.learning_rate_schedule() == exe.learning_rate_schedule());
  CHECK(ipu::format::hyper_parameter_defaults(want) == ipu::format::hyper_parameter_defaults(exe));
  REQUIRE(ipu::format::hyper_parameter_defaults(want).has_value());
  CHECK((*ipu::format::hyper_parameter_defaults(want))[0] == 0.5f);

  auto end = ipu::format::executable_summary_end(bytes.substr(0, kHeaderSize), bytes.size(), "ok.ipuexe");
  REQUIRE(end.ok());
  CHECK(*end == payload_offset(bytes));
  // Nothing past the summary is read: the payload's bytes may be anything.
  auto summary = ipu::format::parse_executable_summary(bytes.substr(0, *end), bytes.size(), "ok.ipuexe");
  REQUIRE(summary.ok());
  CHECK(google::protobuf::util::MessageDifferencer::Equals(*summary, want));

  auto short_head =
      ipu::format::parse_executable_summary(bytes.substr(0, *end - 1), bytes.size(), "ok.ipuexe");
  REQUIRE_FALSE(short_head.ok());
  CHECK(short_head.status().code() == StatusCode::kDataLoss);
}

TEST_CASE("executable file: a summary that is not the payload's is refused") {
  // A frame with correct sizes and checksums whose summary says another model: what a writer who
  // edited the summary alone (or the payload alone) would make. The summary reads, but the whole
  // executable does not, so a hit's report is never of something other than what runs.
  const Executable exe = sample_executable();
  ipu::format::ExecutableSummary other = ipu::format::summarize(exe);
  other.set_model_name("another_model");
  const std::string bytes = ipu::format::frame_payload(exe.SerializeAsString(), other.SerializeAsString());
  auto summary = ipu::format::parse_executable_summary(bytes, bytes.size(), "edited.ipuexe");
  REQUIRE(summary.ok());
  CHECK(summary->model_name() == "another_model");
  expect_code(bytes, StatusCode::kDataLoss, "summary does not match the payload");
}

TEST_CASE("executable file: a damaged summary is refused by both readers") {
  const std::string good = serialize_executable(sample_executable());
  SUBCASE("a flipped summary byte") {
    std::string bytes = good;
    bytes[kHeaderSize + 2] = static_cast<char>(bytes[kHeaderSize + 2] ^ 0x04);
    expect_code(bytes, StatusCode::kDataLoss, "summary checksum");
    auto summary = ipu::format::parse_executable_summary(bytes, bytes.size(), "bad.ipuexe");
    REQUIRE_FALSE(summary.ok());
    CHECK(summary.status().message().find("summary checksum") != std::string::npos);
  }
  SUBCASE("a summary size past the cap") {
    std::string bytes = good;
    put_le<uint64_t>(bytes, kSummarySizeOffset, kMaxSummaryBytes + 1);
    expect_code(bytes, StatusCode::kDataLoss, "implausible summary size");
  }
  SUBCASE("summary bytes that are not a summary message, with a correct checksum") {
    const std::string junk("\x0a\xff\xff", 3); // a length running past the end
    const std::string bytes = ipu::format::frame_payload(sample_executable().SerializeAsString(), junk);
    auto summary = ipu::format::parse_executable_summary(bytes, bytes.size(), "bad.ipuexe");
    REQUIRE_FALSE(summary.ok());
    CHECK(summary.status().message().find("not a valid summary") != std::string::npos);
    expect_code(bytes, StatusCode::kDataLoss, "summary does not match");
  }
}

TEST_CASE("executable file: a run's load leaves the initial values in the data section") {
  const Executable exe = sample_executable();
  std::string bytes = serialize_executable(exe);
  const ipu::FileBytes file = ipu::FileBytes::owning(bytes);
  auto loaded = ipu::format::load_executable(file, "ok.ipuexe");
  REQUIRE(loaded.ok());
  const ipu::format::Tensor& weight = loaded->executable.tensors(0);
  CHECK(weight.initial_value().empty());
  REQUIRE(weight.has_initial_data());
  // The value is read where it lies in the file's bytes, not copied.
  const std::string_view value = loaded->initial_data.of(weight);
  CHECK(value == weight_value(exe));
  CHECK(value.data() == file.bytes.data() + file.bytes.size() - data_size(bytes));
  const ipu::format::Tensor& label = loaded->executable.tensors(1);
  CHECK(loaded->initial_data.of(label).empty()); // all zeros
  const ipu::format::Tensor& hyper = loaded->executable.tensors(2);
  CHECK_FALSE(hyper.has_initial_data());
  CHECK(loaded->initial_data.of(hyper) == exe.tensors(2).initial_value());
  // Written again from the data section, the file is the same.
  CHECK(serialize_executable(loaded->executable, loaded->initial_data) == bytes);
}

TEST_CASE("executable file: load_executable_file maps what read_executable_file reads") {
  const TempDir dir;
  const std::string path = dir.file("model.ipuexe");
  const Executable exe = sample_executable();
  REQUIRE(ipu::format::write_executable_file(path, exe).ok());
  auto loaded = ipu::format::load_executable_file(path);
  REQUIRE(loaded.ok());
  CHECK(loaded->initial_data.of(loaded->executable.tensors(0)) == weight_value(exe));
  // An edited byte of the data section is caught by the checksum.
  auto bytes = ipu::read_file(path);
  REQUIRE(bytes.ok());
  bytes->back() = static_cast<char>(bytes->back() ^ 0x01);
  REQUIRE(ipu::write_file_atomic(path, *bytes).ok());
  auto edited = ipu::format::load_executable_file(path);
  REQUIRE_FALSE(edited.ok());
  CHECK(edited.status().code() == StatusCode::kDataLoss);
  CHECK(edited.status().message().find(path + ": checksum mismatch") != std::string::npos);
  CHECK(ipu::format::load_executable_file(dir.file("missing.ipuexe")).status().code() ==
        StatusCode::kNotFound);
}

// A frame by hand whose tensor `tensor` (the weight, or 2: the hyper-parameters) has its initial
// value at [offset, +size) of a 32-byte data section: what a writer other than
// serialize_executable could make.
std::string frame_with_range(uint64_t offset, uint64_t size, bool also_inline, int tensor = 0) {
  Executable exe = sample_executable();
  const std::string data = weight_value(exe);
  ipu::format::Tensor* in_data = exe.mutable_tensors(tensor);
  in_data->mutable_initial_data()->set_offset(offset);
  in_data->mutable_initial_data()->set_size(size);
  if (!also_inline) in_data->clear_initial_value();
  return ipu::format::frame_payload(exe.SerializeAsString(), ipu::format::summarize(exe).SerializeAsString(),
                                    data);
}

void expect_both_refuse(const std::string& bytes, const std::string& fragment) {
  expect_code(bytes, StatusCode::kDataLoss, fragment);
  auto loaded = ipu::format::load_executable(ipu::FileBytes::owning(bytes), "bad.ipuexe");
  REQUIRE_FALSE(loaded.ok());
  INFO(loaded.status().message());
  CHECK(loaded.status().code() == StatusCode::kDataLoss);
  CHECK(loaded.status().message().find(fragment) != std::string::npos);
}

TEST_CASE("executable file: initial values outside the data section, or in two places, are refused") {
  CHECK(parse_executable(frame_with_range(0, 32, false), "ok.ipuexe").ok());
  expect_both_refuse(frame_with_range(8, 32, false),
                     "'t0': its initial value at bytes [8, +32) of the data section "
                     "runs past its 32 bytes");
  expect_both_refuse(frame_with_range(33, 0, false), "runs past");
  expect_both_refuse(frame_with_range(~uint64_t{0}, 2, false), "runs past");
  expect_both_refuse(frame_with_range(1, ~uint64_t{0}, false), "runs past");
  expect_both_refuse(frame_with_range(0, 32, true),
                     "'t0' has an initial value both in the message and in the data");
  expect_both_refuse(frame_with_range(0, 32, false, 2), "holds hyper-parameters");
}

} // namespace
