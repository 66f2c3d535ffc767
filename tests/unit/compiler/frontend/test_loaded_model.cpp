// LoadedModel's fingerprint for the cache key (compiler/frontend/loaded_model.cpp): ONNX weight
// values stay out of the structure digest while everything else stays in; JSON specs are keyed
// by their parsed content.
#include <doctest/doctest.h>

#include <cstring>
#include <string>

#include "compiler/frontend/loaded_model.h"
#include "runtime/base/sha256.h"
#include "tests/unit/compiler/onnx_builder.h"

namespace ipu::testing {
namespace {

using frontend::LoadedModel;
using frontend::ModelFingerprint;

ModelFingerprint fingerprint_model(const std::string& text, const std::string& path) {
  return LoadedModel::parse(text, path).fingerprint();
}

auto model_weights(const std::string& text, const std::string& path) {
  return LoadedModel::parse(text, path).weights();
}

// x [N,6] → Gemm(transB) with W [4,6] and b [4] → y; `phase` picks the weight values.
OnnxBuilder gemm(float phase, int64_t units = 4) {
  OnnxBuilder b;
  b.input("x", {6}).output("y");
  b.floats("W", {units, 6}, wave(static_cast<size_t>(units) * 6, 0.5f, phase))
      .floats("b", {units}, wave(4, 0.1f, phase));
  OnnxBuilder::int_attr(b.node("Gemm", "fc", {"x", "W", "b"}, {"y"}), "transB", 1);
  return b;
}

// x [N, 2, 3, 3] → BatchNormalization (scale, B, mean, var initializers, folded into constants
// when compiled) → Conv with kernel K → y; `stats` shifts the statistics, `phase` the kernel.
OnnxBuilder batch_norm_conv(float stats, float phase) {
  OnnxBuilder b;
  b.input("x", {2, 3, 3}).output("y");
  b.floats("scale", {2}, {1.0f, 0.5f}).floats("B", {2}, {0.1f, 0.2f});
  b.floats("mean", {2}, {stats, -stats}).floats("var", {2}, {1.0f, 2.0f});
  b.floats("K", {1, 2, 1, 1}, wave(2, 0.5f, phase));
  b.node("BatchNormalization", "bn", {"x", "scale", "B", "mean", "var"}, {"n"});
  b.node("Conv", "conv", {"n", "K"}, {"y"});
  return b;
}

TEST_CASE("ONNX fingerprint: initializers folded into constants are structure, not weights") {
  // The compiled program holds BatchNormalization's folded statistics, so other statistics are
  // another program (a hit would run stale constants); another kernel is only other weights.
  const auto base = fingerprint_model(batch_norm_conv(0.0f, 0.0f).bytes(), "m.onnx");
  CHECK(fingerprint_model(batch_norm_conv(0.5f, 0.0f).bytes(), "m.onnx").structure_sha256 !=
        base.structure_sha256);
  const auto other_kernel = fingerprint_model(batch_norm_conv(0.0f, 1.0f).bytes(), "m.onnx");
  CHECK(other_kernel.structure_sha256 == base.structure_sha256);
  CHECK(other_kernel.weights_sha256 != base.weights_sha256);
}

TEST_CASE("ONNX fingerprint: weight values change the weights digest only") {
  const auto a = fingerprint_model(gemm(0.0f).bytes(), "a.onnx");
  const auto b = fingerprint_model(gemm(1.0f).bytes(), "b.onnx");
  CHECK(a.structure_sha256 == b.structure_sha256);
  CHECK(a.weights_sha256 != b.weights_sha256);
  CHECK(a.structure_sha256.size() == 64);
  CHECK(fingerprint_model(gemm(0.0f).bytes(), "a.onnx").weights_sha256 == a.weights_sha256);

  SUBCASE("raw_data and float_data encodings of one value are the same weights") {
    OnnxBuilder raw = gemm(0.0f);
    auto* w = raw.model().mutable_graph()->mutable_initializer(0);
    std::string bytes(static_cast<size_t>(w->float_data_size()) * 4, '\0');
    std::memcpy(bytes.data(), w->float_data().data(), bytes.size());
    w->clear_float_data();
    w->set_raw_data(bytes);
    const auto r = fingerprint_model(raw.bytes(), "a.onnx");
    CHECK(r.structure_sha256 == a.structure_sha256);
    CHECK(r.weights_sha256 == a.weights_sha256);
  }
  SUBCASE("the digest is of LoadedModel::weights(): each name and value after its length") {
    // Executables record this digest (docs/cache.md): its definition cannot change under them.
    auto weights = model_weights(gemm(0.0f).bytes(), "a.onnx");
    REQUIRE(weights.ok());
    std::string text;
    for (const auto& [name, value] : *weights)
      text += std::to_string(name.size()) + ":" + name + std::to_string(value.size()) + ":" + value;
    CHECK(a.weights_sha256 == sha256_hex(text));
  }
  SUBCASE("a weight whose values do not fill its dims keys the whole file") {
    OnnxBuilder short_weight = gemm(0.0f);
    short_weight.model().mutable_graph()->mutable_initializer(0)->mutable_float_data()->RemoveLast();
    const std::string bytes = short_weight.bytes();
    const auto whole = fingerprint_model(bytes, "a.onnx");
    CHECK(whole.structure_sha256 == sha256_hex(bytes));
    CHECK(whole.weights_sha256 == sha256_hex(""));
  }
  SUBCASE("shapes, names, attributes and integer initializers are structure") {
    CHECK(fingerprint_model(gemm(0.0f, 5).bytes(), "a.onnx").structure_sha256 != a.structure_sha256);
    OnnxBuilder renamed = gemm(0.0f);
    renamed.model().mutable_graph()->mutable_initializer(1)->set_name("bias");
    renamed.model().mutable_graph()->mutable_node(0)->set_input(2, "bias");
    CHECK(fingerprint_model(renamed.bytes(), "a.onnx").structure_sha256 != a.structure_sha256);
    OnnxBuilder no_trans = gemm(0.0f);
    no_trans.model().mutable_graph()->mutable_node(0)->mutable_attribute(0)->set_i(0);
    CHECK(fingerprint_model(no_trans.bytes(), "a.onnx").structure_sha256 != a.structure_sha256);
    OnnxBuilder with_ints = gemm(0.0f);
    with_ints.ints("shape", {1, 2});
    OnnxBuilder other_ints = gemm(0.0f);
    other_ints.ints("shape", {2, 1});
    CHECK(fingerprint_model(with_ints.bytes(), "a.onnx").structure_sha256 !=
          fingerprint_model(other_ints.bytes(), "a.onnx").structure_sha256);
  }
}

TEST_CASE("ONNX LoadedModel::weights: FLOAT initializers by name as little-endian floats") {
  auto weights = model_weights(gemm(0.5f).bytes(), "a.onnx");
  REQUIRE(weights.ok());
  REQUIRE(weights->size() == 2);
  const std::vector<float> expected = wave(24, 0.5f, 0.5f);
  REQUIRE(weights->at("W").size() == expected.size() * 4);
  CHECK(std::memcmp(weights->at("W").data(), expected.data(), weights->at("W").size()) == 0);
  CHECK(weights->at("b").size() == 16);
  CHECK(!model_weights("not a protobuf \xff\xff", "x.onnx").ok());
}

TEST_CASE("JSON fingerprint: parsed content, not formatting") {
  const std::string spec = R"({"name": "m", "layers": [{"type": "Dense", "units": 4}], "seed": 1})";
  const std::string spaced =
      "{\n  \"seed\": 1,\n  \"layers\": [ {\"units\": 4, \"type\": \"Dense\"} ],\n  \"name\": \"m\"\n}\n";
  const auto a = fingerprint_model(spec, "a.json");
  CHECK(a.structure_sha256 == fingerprint_model(spaced, "b.json").structure_sha256);
  CHECK(a.weights_sha256 == fingerprint_model(spaced, "b.json").weights_sha256);
  // Initializer seeds are structure: a spec's weights are a function of them.
  CHECK(a.structure_sha256 !=
        fingerprint_model(R"({"name": "m", "layers": [{"type": "Dense", "units": 4}], "seed": 2})", "a.json")
            .structure_sha256);
  auto weights = model_weights(spec, "a.json");
  REQUIRE(weights.ok());
  CHECK(weights->empty());
  // Text that is not JSON is keyed by its bytes, so the compile reports the problem.
  CHECK(fingerprint_model("{\"name\": ", "a.json").structure_sha256 !=
        fingerprint_model("{\"name\":  ", "a.json").structure_sha256);
}

} // namespace
} // namespace ipu::testing
