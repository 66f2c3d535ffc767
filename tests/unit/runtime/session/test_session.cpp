// Session's loops driven directly on small executables of the golden set
// (tests/data/golden_executables: an MLP with 2 replicas of 2 accumulated micro-batches and 2 steps
// per execution, and an ONNX Gemm compiled for inference): fit learns and counts its updates,
// evaluate counts every sample, the data-set path of predict and the model-input path of infer
// agree bitwise, checkpoints round-trip, and bad data is refused naming what is wrong.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "runtime/data/dataset.h"
#include "runtime/data/npy.h"
#include "runtime/format/executable_file.h"
#include "runtime/format/verifier.h"
#include "runtime/session/session.h"

namespace ipu::testing {
namespace {

format::Executable read_golden(const std::string& name) {
  auto exe = format::read_executable_file(std::string(IPUCC_SOURCE_DIR) + "/tests/data/golden_executables/" +
                                          name + ".ipuexe");
  INFO(exe.status().message());
  REQUIRE(exe.ok());
  return std::move(*exe);
}

std::unique_ptr<session::Session> open_golden(const std::string& name) {
  auto created = session::Session::create(read_golden(name), {});
  INFO(created.status().message());
  REQUIRE(created.ok());
  return std::move(*created);
}

// `samples` samples of 6 features in [-1, 1), labelled with the index of the largest of the first
// four: a rule the MLP (6 → 8 → 4 logits) can learn.
data::Dataset argmax_data(size_t samples) {
  data::Dataset data;
  data.source = "argmax";
  data.sample_shape = {6};
  data.num_samples = samples;
  data.num_classes = 4;
  uint32_t state = 12345;
  for (size_t i = 0; i < samples; ++i) {
    float best = -2;
    int32_t label = 0;
    for (int32_t f = 0; f < 6; ++f) {
      state = state * 1664525u + 1013904223u;
      const float value = static_cast<float>(state >> 8) / static_cast<float>(1u << 24) * 2.0f - 1.0f;
      data.features.push_back(value);
      if (f < 4 && value > best) {
        best = value;
        label = f;
      }
    }
    data.labels.push_back(label);
  }
  return data;
}

data::NpyArray features_array(const data::Dataset& data) {
  return data::make_npy_f32({static_cast<int64_t>(data.num_samples), 6}, data.features.data());
}

std::vector<float> predicted(session::Session& s, const data::Dataset& data) {
  auto result = s.predict(data);
  INFO(result.status().message());
  REQUIRE(result.ok());
  return result->values;
}

TEST_CASE("session: fit learns, counts its steps and updates, and leaves the weights on the host") {
  auto s = open_golden("mlp_replicated");
  const data::Dataset data = argmax_data(64);
  // 2 replicas of micro-batch 2: 4 samples a step; 2 steps an execution, one update each.
  CHECK(s->samples_per_step() == 4);
  CHECK(s->default_steps_per_epoch(data) == 16);
  const auto before = s->named_weights();
  session::FitOptions options;
  options.epochs = 10;
  session::StepLog log;
  auto results = s->fit(data, options, nullptr, &log);
  INFO(results.status().message());
  REQUIRE(results.ok());
  REQUIRE(results->size() == 10);
  CHECK(results->front().epoch == 1);
  CHECK(results->front().steps == 16);
  CHECK(results->front().samples == 64);
  CHECK(results->back().loss < 0.8 * results->front().loss);
  CHECK(log.losses.size() == 10 * 16);
  CHECK(s->iterations() == 10 * 8);
  CHECK(s->epochs_trained() == 10);
  // The host holds the trained weights: every weight moved.
  const auto after = s->named_weights();
  REQUIRE(after.size() == before.size());
  for (const auto& weight : before) {
    const std::string& name = weight.first; // CAPTURE takes no structured binding (clang 14)
    CAPTURE(name);
    REQUIRE(after.count(name) == 1);
    CHECK(after.at(name).values != weight.second.values);
  }
}

TEST_CASE("session: --steps-per-epoch must be whole executions within the data") {
  auto s = open_golden("mlp_replicated");
  const data::Dataset data = argmax_data(64);
  session::FitOptions options;
  options.steps_per_epoch = 3;
  auto odd = s->fit(data, options, nullptr, nullptr);
  CHECK(odd.status().code() == StatusCode::kInvalidArgument);
  CHECK(odd.status().message().find("not a multiple of steps_per_execution 2") != std::string::npos);
  options.steps_per_epoch = 17;
  CHECK(s->fit(data, options, nullptr, nullptr).status().message().find("outside [1, 16]") !=
        std::string::npos);
  options.steps_per_epoch = 4;
  auto four = s->fit(data, options, nullptr, nullptr);
  REQUIRE(four.ok());
  CHECK(four->front().steps == 4);
  CHECK(four->front().samples == 16);
}

TEST_CASE("session: evaluate counts every sample, a partial last batch too") {
  auto s = open_golden("mlp_replicated");
  for (size_t samples : {64u, 62u, 3u}) {
    CAPTURE(samples);
    auto result = s->evaluate(argmax_data(samples), nullptr);
    INFO(result.status().message());
    REQUIRE(result.ok());
    CHECK(result->samples == static_cast<int64_t>(samples));
    CHECK(std::isfinite(result->loss));
    CHECK(result->loss > 0);
    CHECK(result->metrics.size() == s->metric_names().size());
  }
}

TEST_CASE("session: predict over a data set and infer over the same features agree bitwise") {
  for (const char* name : {"mlp_replicated", "gemm_infer"}) {
    CAPTURE(name);
    auto s = open_golden(name);
    // Not a whole number of executions: both paths pad the last one and drop the padding.
    const data::Dataset data = argmax_data(13);
    auto by_data = s->predict(data);
    INFO(by_data.status().message());
    REQUIRE(by_data.ok());
    CHECK(by_data->samples == 13);
    CHECK(by_data->shape == std::vector<int64_t>{13, 4});
    auto by_input = s->infer({features_array(data)});
    INFO(by_input.status().message());
    REQUIRE(by_input.ok());
    REQUIRE(by_input->outputs.size() == 1);
    const data::NpyArray& out = by_input->outputs[0];
    CHECK(out.shape == by_data->shape);
    REQUIRE(out.data.size() == by_data->values.size() * sizeof(float));
    CHECK(std::memcmp(out.data.data(), by_data->values.data(), out.data.size()) == 0);
  }
}

TEST_CASE("session: weights set back from named_weights predict as before training") {
  auto s = open_golden("mlp_replicated");
  const data::Dataset data = argmax_data(16);
  const std::vector<float> first = predicted(*s, data);
  const auto initial = s->named_weights();
  REQUIRE(s->fit(data, {}, nullptr, nullptr).ok());
  CHECK(predicted(*s, data) != first);
  REQUIRE(s->set_weights(initial, "initial").ok());
  CHECK(predicted(*s, data) == first);
  // A checkpoint short of a weight changes nothing.
  auto missing = initial;
  missing.erase(missing.begin());
  const Status refused = s->set_weights(missing, "short");
  CHECK(refused.code() == StatusCode::kInvalidArgument);
  CHECK(refused.message().find("short: checkpoint has no weight") == 0);
  CHECK(predicted(*s, data) == first);
}

TEST_CASE("session: an executable run from its mapped file does what one read whole does") {
  // The mapped session's device starts from the file's data section, and its host copy of the
  // weights is made only when fit first needs it (after a predict here).
  auto mapped = format::load_executable_file(std::string(IPUCC_SOURCE_DIR) +
                                             "/tests/data/golden_executables/mlp_replicated.ipuexe");
  INFO(mapped.status().message());
  REQUIRE(mapped.ok());
  const format::Executable whole = read_golden("mlp_replicated");
  auto a = session::Session::create(std::move(*mapped), {});
  auto b = session::Session::create(whole, {});
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  const data::Dataset data = argmax_data(16);
  CHECK(predicted(**a, data) == predicted(**b, data));
  const auto initial = (*a)->named_weights();
  for (const format::Tensor& t : whole.tensors()) {
    if (t.role() != format::WEIGHT) continue;
    CAPTURE(t.name());
    REQUIRE(initial.count(t.name()) == 1);
    std::vector<float> want(static_cast<size_t>(format::element_count(t))); // none written: zeros
    std::memcpy(want.data(), t.initial_value().data(), t.initial_value().size());
    CHECK(initial.at(t.name()).values == want);
  }
  REQUIRE((*a)->fit(data, {}, nullptr, nullptr).ok());
  REQUIRE((*b)->fit(data, {}, nullptr, nullptr).ok());
  CHECK(predicted(**a, data) == predicted(**b, data));
  const auto trained_a = (*a)->named_weights(), trained_b = (*b)->named_weights();
  REQUIRE(trained_a.size() == trained_b.size());
  for (const auto& entry : trained_a) {
    const std::string& name = entry.first;
    CAPTURE(name);
    CHECK(entry.second.values == trained_b.at(name).values);
    CHECK(entry.second.values != initial.at(name).values);
  }
}

TEST_CASE("session: data the executable cannot take is refused, naming it") {
  auto s = open_golden("mlp_replicated");
  data::Dataset wide = argmax_data(8);
  wide.sample_shape = {3, 4};
  wide.features.resize(8 * 12);
  auto shape = s->evaluate(wide, nullptr);
  CHECK(shape.status().code() == StatusCode::kInvalidArgument);
  CHECK(shape.status().message() == "argmax: samples have shape [3,4], the executable expects [6]");

  data::Dataset labels = argmax_data(8);
  labels.labels[5] = 4;
  auto label = s->fit(labels, {}, nullptr, nullptr);
  CHECK(label.status().message() == "argmax: label 4 of sample 5 is outside [0, 4)");

  const data::NpyArray x = features_array(argmax_data(2));
  auto two = s->infer({x, x});
  CHECK(two.status().message() == "the model has 1 input(s), 2 given");

  auto inference_only = open_golden("gemm_infer");
  auto fit = inference_only->fit(argmax_data(8), {}, nullptr, nullptr);
  CHECK(fit.status().code() == StatusCode::kFailedPrecondition);
  CHECK(fit.status().message().find("has no 'train' program") != std::string::npos);
}

TEST_CASE("session: an output the program never streams is a corrupt executable, not a stray read") {
  // The output moved to a stream of its own shape that no program fills: the verifier accepts it
  // (each transfer would carry the output's elements), so infer must count what arrived (found
  // by fuzz_executable: make_npy_f16 read from an empty vector).
  format::Executable exe = read_golden("gemm_infer");
  REQUIRE(exe.outputs_size() == 1);
  format::Stream unused = exe.streams(static_cast<int>(exe.outputs(0).stream()));
  unused.set_name("never_streamed");
  exe.mutable_outputs(0)->set_stream(static_cast<uint32_t>(exe.streams_size()));
  *exe.add_streams() = unused;
  auto created = session::Session::create(std::move(exe), {});
  INFO(created.status().message());
  REQUIRE(created.ok());
  auto result = (*created)->infer({features_array(argmax_data(3))});
  CHECK(result.status().code() == StatusCode::kDataLoss);
  CHECK(result.status().message().find("program 'predict' streamed 0 value(s) of output") == 0);
}

} // namespace
} // namespace ipu::testing
