#include "runtime/session/session_impl.h"

#include <cmath>
#include <map>
#include <span>
#include <string>

#include "runtime/base/huge_pages.h"
#include "runtime/session/stream_feed.h"

namespace ipu::session {
namespace {

// An input's values as the device takes them, float32 bytes: a float32 input's own, not copied
// (a NaN or an infinity too, as ONNX Runtime takes them; a FLOAT16 input's transfer rounds them to
// binary16); any other type's converted into `converted`, integers checked to be exact.
StatusOr<std::span<const std::byte>> device_bytes(const data::NpyArray& array, const format::ModelIo& io,
                                                  std::vector<float>& converted) {
  if (array.dtype == "f4") return std::as_bytes(std::span(array.data));
  converted = data::floats_as_is(array);
  if (array.dtype[0] == 'i' || array.dtype[0] == 'u') {
    for (size_t i = 0; i < converted.size(); ++i) {
      // Integer inputs (indices, flags) reach the device unchanged only within float32's exact integers.
      if (std::abs(static_cast<double>(converted[i])) > static_cast<double>(format::kExactFloatIntegers)) {
        return invalid_argument("input '" + io.name() + "': element " + std::to_string(i) +
                                " is beyond the integers the device holds exactly (|v| <= 2^24)");
      }
    }
  }
  return std::as_bytes(std::span(converted));
}

} // namespace

StatusOr<InferResult> Session::infer(const std::vector<data::NpyArray>& inputs) {
  Impl& s = *m_impl;
  const format::Executable& exe = s.engine->executable();
  IPU_ASSIGN_OR_RETURN(uint32_t predict, s.program(format::kPredictProgram));
  IPU_RETURN_IF_ERROR(s.check_one_instance("predict"));
  if (static_cast<int>(inputs.size()) != exe.inputs_size()) {
    return invalid_argument("the model has " + std::to_string(exe.inputs_size()) + " input(s), " +
                            std::to_string(inputs.size()) + " given");
  }
  const int64_t S = s.steps_per_execution, R = s.replicas, B = exe.batch_size();
  // Check shapes and convert every input before anything runs.
  std::optional<int64_t> samples;
  std::vector<std::vector<float>> converted(inputs.size());
  std::vector<std::span<const std::byte>> values(inputs.size());
  std::map<uint32_t, size_t> input_of_stream;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const format::ModelIo& io = exe.inputs(static_cast<int>(i));
    std::vector<int64_t> want(io.shape().begin(), io.shape().end());
    std::vector<int64_t> got = inputs[i].shape;
    if (io.batched() && !got.empty()) {
      if (samples && *samples != got[0]) {
        return invalid_argument("input '" + io.name() + "' has " + std::to_string(got[0]) +
                                " samples, an earlier input " + std::to_string(*samples));
      }
      samples = got[0];
      got[0] = want.empty() ? 0 : want[0];
    }
    if (got != want || (samples && *samples < 1)) {
      std::string expected = shape_text(want);
      if (io.batched())
        expected = "[N" + expected.substr(1 + std::to_string(want[0]).size()); // "[N,28,28,1]"
      return invalid_argument("input '" + io.name() + "' has shape " + shape_text(inputs[i].shape) +
                              ", the model expects " + expected);
    }
    IPU_ASSIGN_OR_RETURN(values[i], device_bytes(inputs[i], io, converted[i]));
    input_of_stream[io.stream()] = i;
  }
  std::map<uint32_t, size_t> output_of_stream;
  for (int j = 0; j < exe.outputs_size(); ++j)
    output_of_stream[exe.outputs(j).stream()] = static_cast<size_t>(j);

  IPU_RETURN_IF_ERROR(s.sync_weights(format::kWeightsFromHostProgram));
  const auto start = Clock::now();
  const int64_t N = samples.value_or(1);
  const int64_t steps = samples ? (N + B * R - 1) / (B * R) : 1;
  // Each output's float32 values as bytes, which its array adopts at the end (no second copy).
  std::vector<std::string> collected(output_of_stream.size());
  for (int64_t first_step = 0; first_step < steps; first_step += S) {
    // Each input's rows of this execution's steps (rows past the last sample are zero padding),
    // or the whole of an input without a batch axis.
    StreamFeed feed;
    for (const auto& [stream, input] : input_of_stream) {
      const bool batched = exe.inputs(static_cast<int>(input)).batched();
      feed.add(stream, {.bytes = values[input],
                        .first = static_cast<uint64_t>(first_step * R),
                        .whole = !batched,
                        .zeros_past_end = true,
                        .overrun = "input stream " + std::to_string(stream) + " does not match its input"});
    }
    engine::HostStreams streams;
    streams.pull = [&](uint32_t stream, uint32_t, std::span<std::byte> destination) {
      return feed.pull(stream, destination);
    };
    streams.push = [&](uint32_t stream, uint32_t, std::span<const std::byte> source) -> Status {
      auto found = output_of_stream.find(stream);
      if (found == output_of_stream.end()) return Status();
      std::string& out = collected[found->second];
      const bool batched = exe.outputs(static_cast<int>(found->second)).batched();
      // One push per step and replica: room for all of them at once, not regrown as they come,
      // and first touched a huge page at a time (runtime/base/huge_pages.h).
      if (batched && out.empty()) {
        out.reserve(source.size() * static_cast<size_t>(steps * R));
        advise_huge_pages(out.data(), out.capacity());
      }
      if (batched || out.empty()) out.append(reinterpret_cast<const char*>(source.data()), source.size());
      return Status();
    };
    IPU_RETURN_IF_ERROR(s.engine->run(predict, streams));
  }
  InferResult r;
  for (int j = 0; j < exe.outputs_size(); ++j) {
    const format::ModelIo& io = exe.outputs(j);
    std::vector<int64_t> shape(io.shape().begin(), io.shape().end());
    std::string& bytes = collected[static_cast<size_t>(j)];
    // The host's shape: a batched output's first axis becomes the samples run.
    size_t elements = 1;
    for (size_t d = io.batched() ? 1 : 0; d < shape.size(); ++d)
      elements *= static_cast<size_t>(shape[d]);
    if (io.batched()) {
      shape[0] = N;
      elements *= static_cast<size_t>(N);
    }
    // The verifier proves that each transfer carries the output's elements, not that the program
    // makes every transfer: one that streams too few is a corrupt executable, not a read past `bytes`.
    if (bytes.size() < elements * sizeof(float)) {
      return data_loss("program '" + std::string(format::kPredictProgram) + "' streamed " +
                       std::to_string(bytes.size() / sizeof(float)) + " value(s) of output '" + io.name() +
                       "', whose shape " + shape_text(shape) + " holds " + std::to_string(elements));
    }
    bytes.resize(elements * sizeof(float));
    r.outputs.push_back(data::make_npy_from_float_bytes(io.dtype(), std::move(shape), std::move(bytes)));
  }
  r.samples = N;
  r.seconds = seconds_since(start);
  return r;
}

} // namespace ipu::session
