// Every compute set lists the ops whose vertices it runs, and every vertex names one of them: a
// runtime fault names its node from these (docs/executable_format.md).
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "runtime/format/verifier.h"
#include "tests/unit/compiler/onnx_builder.h"
#include "tests/unit/compiler/test_support.h"

namespace ipu::testing {
namespace {

TEST_CASE("lowering names the op of every vertex, forwards and backwards") {
  const char* spec = R"({"type": "sequential", "input": {"shape": [12]},
    "layers": [{"name": "hidden", "type": "Dense", "units": 8, "activation": "relu"},
               {"name": "out", "type": "Dense", "units": 4}],
    "loss": {"type": "sparse_categorical_crossentropy", "from_logits": true},
    "optimizer": {"type": "sgd", "learning_rate": 0.1}})";
  auto result = compiler::compile_model(spec, small_target_options(4));
  INFO(result.status().message());
  REQUIRE(result.ok());
  std::set<std::string> named;
  for (const format::ComputeSet& cs : result->executable.compute_sets()) {
    CAPTURE(cs.name());
    REQUIRE(cs.ops_size() > 0);
    std::set<uint32_t> used;
    for (const format::Vertex& v : cs.vertices()) {
      REQUIRE(v.op() < static_cast<uint32_t>(cs.ops_size()));
      used.insert(v.op());
    }
    CHECK(used.size() == static_cast<size_t>(cs.ops_size())); // no op is listed without a vertex
    named.insert(cs.ops().begin(), cs.ops().end());
  }
  CHECK(named.count("hidden/matmul") == 1);
  CHECK(named.count("out/matmul") == 1);
  CHECK(named.count("loss") == 1);
  // The gradients and updates are named after the ops they belong to.
  CHECK(named.count("hidden/kernel/update") == 1);
}

// Weights and optimizer state travel to the host and into checkpoints by name: an ONNX weight
// named "b/momentum" beside a weight "b" trained with momentum once shared its name with b's
// velocity, and a checkpoint kept one of the two.
TEST_CASE("optimizer state never takes the name of a model's weight") {
  OnnxBuilder b;
  b.input("x", {4}).output("logits");
  b.floats("b", {4, 3}, wave(12, 0.5f, 0.1f));
  b.floats("b/momentum", {3, 3}, wave(9, 0.4f, 0.2f));
  b.node("MatMul", "first", {"x", "b"}, {"h"});
  b.node("MatMul", "second", {"h", "b/momentum"}, {"logits"});
  auto options = small_target_options(2);
  options.model_path = "test.onnx";
  options.loss = passes::LossKind::kSparseCategoricalCrossEntropy;
  options.optimizer_arguments.numbers["momentum"] = 0.9f;
  auto result = compiler::compile_model(b.bytes(), options);
  INFO(result.status().message());
  REQUIRE(result.ok());
  std::multiset<std::string> names;
  for (const format::Tensor& t : result->executable.tensors()) {
    if (t.role() == format::WEIGHT || t.role() == format::OPTIMIZER_STATE) names.insert(t.name());
  }
  CHECK(names.count("b/momentum") == 1);
  CHECK(names.count("b/momentum#2") == 1); // b's velocity
  CHECK(names.count("b/momentum/momentum") == 1);
  CHECK(format::verify_host_contract(result->executable).ok());
}

} // namespace
} // namespace ipu::testing
