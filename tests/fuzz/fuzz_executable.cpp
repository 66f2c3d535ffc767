// libFuzzer target: an untrusted executable file goes through what a cache hit reads of it
// (parse_executable_summary), then everything `ipurun` does with it: load_executable (frame,
// checksums, payload census, zstd, protobuf, the summary's match, the data section's ranges), which
// must accept exactly what parse_executable accepts, verify_executable, and
// Engine::create (per-vertex kernel validation, device memory allocation, host task coalescing);
// then what the session accepts (verify_host_contract) is *run*: predict, evaluate and one
// execution of train on a few samples of small synthetic data, the way `ipurun` runs them. The
// verifier bounds a run's work by steps_per_execution times the file's size, so a run here takes
// at most kMaxFuzzedVertexRuns vertex executions (larger ones are loaded, not run).
//
// Seeds: tests/fuzz/corpus/executable/ (small compiled executables), and the payloads of
// executables of every model scripts/fuzz.sh compiles (tests/fuzz/make_executable_corpus.sh:
// every program node kind and most codelets). Because every byte of a real frame is covered by
// the SHA-256 checksum, the harness also feeds the *payload* to the parser re-framed with a
// correct header when the input does not start with the magic: that lets the fuzzer mutate the
// protobuf itself (see kReframe below).
//
// The engine accepts executables of up to half the host's memory, far above libFuzzer's RSS
// limit, so verified executables with more than kMaxFuzzedDevice bytes of tensors are not
// loaded here (the refusal path is covered by tests/unit/runtime/engine).

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <numeric>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/engine/engine.h"
#include "runtime/format/executable_file.h"
#include "runtime/format/executable_summary.h"
#include "runtime/format/host_contract.h"
#include "runtime/format/verifier.h"
#include "runtime/session/session.h"

namespace {

constexpr char kMagic[8] = {'I', 'P', 'U', 'C', 'C', 'E', 'X', '\x1a'};
constexpr uint64_t kMaxFuzzedDevice = uint64_t{256} << 20;   // bytes of tensors in one engine
constexpr uint64_t kMaxFuzzedVertexRuns = uint64_t{1} << 16; // per program run
constexpr uint64_t kMaxFuzzedSamples = 4096;                 // of synthetic data per run

// Frames raw protobuf bytes as ipucc writes them (correct sizes, checksums and summary), so the
// payload's mutations get past the frame to the parser, the verifier and the kernels.
std::string reframe(std::string_view payload) {
  ipu::format::Executable exe;
  std::string summary;
  if (exe.ParseFromArray(payload.data(), static_cast<int>(payload.size())))
    summary = ipu::format::summarize(exe).SerializeAsString();
  return ipu::format::frame_payload(payload, summary);
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

// Samples of small synthetic data shaped for the executable's features, labelled in [0, C).
ipu::data::Dataset synthetic_data(const ipu::format::Executable& exe, size_t samples) {
  ipu::data::Dataset data;
  data.source = "fuzz";
  for (const auto& s : exe.streams()) {
    if (s.name() == ipu::format::kFeaturesStream)
      data.sample_shape.assign(s.shape().begin() + (s.shape_size() > 0 ? 1 : 0), s.shape().end());
  }
  data.num_samples = samples;
  data.features.resize(samples * data.sample_size());
  for (size_t i = 0; i < data.features.size(); ++i)
    data.features[i] = static_cast<float>(i % 7) * 0.25f - 0.5f;
  data.num_classes = static_cast<int>(exe.num_classes());
  if (data.num_classes > 0) {
    data.labels.resize(samples);
    for (size_t i = 0; i < samples; ++i)
      data.labels[i] = static_cast<int32_t>(i % static_cast<size_t>(data.num_classes));
  }
  return data;
}

// Runs what `ipurun` would: every program the session has, on one execution of data, and the
// model's own inputs through infer. Errors are fine (data a model refuses, a kernel fault);
// crashes, sanitizer reports and hangs are what the fuzzer looks for.
void run_accepted(ipu::format::LoadedExecutable loaded) {
  const ipu::format::Executable& exe = loaded.executable;
  if (!ipu::format::verify_host_contract(exe).ok()) return;
  uint64_t vertices = 0;
  for (const auto& cs : exe.compute_sets())
    vertices += static_cast<uint64_t>(cs.vertices_size());
  const uint64_t replicas = ipu::format::replica_count(exe), S = exe.steps_per_execution();
  const uint64_t samples = S * exe.batch_size() * replicas;
  if (vertices * S * ipu::format::kMaxExecutionsPerStep * replicas > kMaxFuzzedVertexRuns ||
      samples > kMaxFuzzedSamples)
    return;
  ipu::engine::EngineOptions options;
  options.threads = 1;
  auto session = ipu::session::Session::create(std::move(loaded), options);
  if (!session.ok()) return;
  ipu::session::Session& s = **session;
  const ipu::data::Dataset data = synthetic_data(s.executable(), static_cast<size_t>(samples));
  (void)s.predict(data);
  (void)s.evaluate(data, nullptr);
  ipu::session::FitOptions fit;
  (void)s.fit(data, fit, nullptr, nullptr);
  std::vector<ipu::data::NpyArray> inputs;
  for (const auto& io : s.executable().inputs()) {
    std::vector<int64_t> shape(io.shape().begin(), io.shape().end());
    inputs.push_back(ipu::data::make_npy_f32(
        shape, std::vector<float>(
                   static_cast<size_t>(std::max<int64_t>(
                       1, std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>()))),
                   0.5f)
                   .data()));
  }
  (void)s.infer(inputs);
}

// What a cache hit reads of a file (its header and summary): it accepts or refuses, with the
// parser's documented codes, and what it accepts the whole parse accepts with the same summary.
void check_summary(std::string_view bytes, const ipu::StatusOr<ipu::format::Executable>& parsed) {
  auto summary = ipu::format::parse_executable_summary(bytes, bytes.size(), "fuzz.ipuexe");
  if (!summary.ok()) {
    if (summary.status().code() != ipu::StatusCode::kDataLoss &&
        summary.status().code() != ipu::StatusCode::kFailedPrecondition) {
      std::abort();
    }
    if (parsed.ok()) std::abort(); // a file whose summary is refused is refused whole
    return;
  }
  if (parsed.ok() && ipu::format::summarize(*parsed).SerializeAsString() != summary->SerializeAsString())
    std::abort();
}

void check(std::string_view bytes) {
  auto parsed = ipu::format::parse_executable(bytes, "fuzz.ipuexe");
  check_summary(bytes, parsed);
  // What a run loads (its initial values left in the file's bytes) is what the parse accepts.
  auto loaded = ipu::format::load_executable(ipu::FileBytes::owning(std::string(bytes)), "fuzz.ipuexe");
  if (loaded.ok() != parsed.ok()) std::abort();
  if (!parsed.ok()) {
    if (parsed.status().code() != ipu::StatusCode::kDataLoss &&
        parsed.status().code() != ipu::StatusCode::kFailedPrecondition) {
      std::abort(); // parse errors are documented as DataLoss or FailedPrecondition only
    }
    return;
  }
  ipu::Status verified = ipu::format::verify_executable(*parsed);
  if (verified.ok() && device_bytes(*parsed) > kMaxFuzzedDevice) return;
  if (verified.ok()) run_accepted(std::move(*loaded));
  auto engine = ipu::engine::Engine::create(std::move(*parsed), {});
  // The engine verifies first, so it can only accept what the verifier accepted.
  if (engine.ok() && !verified.ok()) std::abort();
}

} // namespace

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
