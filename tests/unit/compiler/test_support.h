// Helpers for compiler tests: compile a spec string and drive its programs on an engine.
#pragma once

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "compiler/driver/compile.h"
#include "runtime/engine/engine.h"
#include "runtime/format/hyper_parameters.h"

namespace ipu::testing {

// A small target keeps plans readable and tests fast.
inline compiler::CompileOptions small_target_options(uint32_t batch) {
  compiler::CompileOptions o;
  o.model_path = "test.json";
  o.tiles_per_ipu = 16;
  o.bytes_per_tile = 1 << 20;
  o.batch_size = batch;
  return o;
}

// x [64] → Dense 512 (relu) → Dense 10, trained with SGD: the 128 KiB of the wide layer's kernel
// dominate its memory.
inline constexpr const char* kWideMlpSpec = R"({"type": "sequential", "input": {"shape": [64]},
  "layers": [{"name": "wide", "type": "Dense", "units": 512, "activation": "relu"},
             {"name": "out", "type": "Dense", "units": 10}],
  "loss": {"type": "sparse_categorical_crossentropy", "from_logits": true},
  "optimizer": {"type": "sgd", "learning_rate": 0.1, "momentum": 0.9}})";

// Runs one program over a step's features and labels, returning what the outfeeds produced.
struct StepOutputs {
  std::vector<float> loss, correct, predictions;
};

// `labels` are int32 class indices or float labels, as the executable's labels stream takes.
template <typename Label>
StepOutputs run_step(engine::Engine& engine, const std::string& program, const std::vector<float>& features,
                     const std::vector<Label>& labels) {
  StepOutputs out;
  const auto& exe = engine.executable();
  engine::HostStreams streams;
  // The optimizer's hyper-parameters are its compiled defaults, as a session streams them.
  const format::HyperParameterValues hyper =
      format::hyper_parameter_defaults(exe).value_or(format::HyperParameterValues{});
  streams.pull = [&](uint32_t stream, uint32_t, std::span<std::byte> dst) -> Status {
    const std::string& name = exe.streams(static_cast<int>(stream)).name();
    const void* src = name == "features"                       ? static_cast<const void*>(features.data())
                      : name == format::kHyperParametersStream ? static_cast<const void*>(hyper.data())
                                                               : labels.data();
    std::memcpy(dst.data(), src, dst.size());
    return Status();
  };
  streams.push = [&](uint32_t stream, uint32_t, std::span<const std::byte> src) -> Status {
    const std::string& name = exe.streams(static_cast<int>(stream)).name();
    std::vector<float>& dst = name == "loss" ? out.loss : name == "correct" ? out.correct : out.predictions;
    const float* f = reinterpret_cast<const float*>(src.data());
    dst.insert(dst.end(), f, f + src.size() / sizeof(float));
    return Status();
  };
  Status s = engine.run(*engine.find_program(program), streams);
  if (!s.ok()) throw std::runtime_error(s.message());
  return out;
}

inline std::span<float> tensor_floats(engine::Engine& engine, const std::string& name) {
  auto bytes = engine.tensor_bytes(*engine.find_tensor(name));
  return {reinterpret_cast<float*>(bytes.data()), bytes.size() / sizeof(float)};
}

inline std::unique_ptr<engine::Engine> compile_and_load(const std::string& spec,
                                                        const compiler::CompileOptions& options) {
  auto compiled = compiler::compile_model(spec, options);
  if (!compiled.ok()) throw std::runtime_error(compiled.status().message());
  auto engine = engine::Engine::create(std::move(compiled->executable), {});
  if (!engine.ok()) throw std::runtime_error(engine.status().message());
  return std::move(*engine);
}

} // namespace ipu::testing
