// Graph inputs bound at compile time (OnnxImportOptions::constant_inputs, `--constant-input`):
// they import as constants and leave the model's inputs; a shape parameter left unbound is
// reported with the flag that binds it; values that do not match the declaration are refused.
#include <doctest/doctest.h>

#include <string>

#include "compiler/frontend/onnx_import.h"
#include "tests/unit/compiler/onnx_builder.h"
#include "tests/unit/test_strings.h"

namespace ipu::testing {
namespace {

using frontend::ConstantInput;
using frontend::import_onnx;
using frontend::OnnxImportOptions;

const std::string kReducePath = "models/reduce.onnx";

// y = ReduceSum(x [2,3], axes), axes an INT64 [1] graph input (ONNX's node tests feed it so).
OnnxBuilder reduce_sum_model() {
  OnnxBuilder b;
  b.input("x", {3}, 2).output("y");
  auto* axes = b.model().mutable_graph()->add_input();
  axes->set_name("axes");
  auto* type = axes->mutable_type()->mutable_tensor_type();
  type->set_elem_type(onnx::TensorProto::INT64);
  type->mutable_shape()->add_dim()->set_dim_value(1);
  b.node("ReduceSum", "sum", {"x", "axes"}, {"y"});
  return b;
}

data::NpyArray int_array(const std::string& dtype, const std::vector<int64_t>& values) {
  data::NpyArray a;
  a.dtype = dtype;
  a.shape = {static_cast<int64_t>(values.size())};
  for (int64_t v : values) {
    if (dtype == "i8") {
      a.data.append(reinterpret_cast<const char*>(&v), sizeof v);
    } else {
      const int32_t narrow = static_cast<int32_t>(v);
      a.data.append(reinterpret_cast<const char*>(&narrow), sizeof narrow);
    }
  }
  return a;
}

StatusOr<frontend::ForwardGraph> import_bound(const std::map<std::string, ConstantInput>& bound) {
  OnnxImportOptions options;
  options.batch_size = 2;
  options.constant_inputs = bound;
  return import_onnx(reduce_sum_model().bytes(), kReducePath, options);
}

TEST_CASE("a bound graph input is a constant and no longer a model input") {
  auto imported = import_bound({{"axes", ConstantInput{int_array("i8", {1}), "axes.npy"}}});
  INFO(imported.status().message());
  REQUIRE(imported.ok());
  REQUIRE(imported->inputs.size() == 1);
  CHECK(imported->inputs[0].name == "x");
  CHECK(imported->graph.value(imported->outputs[0].value).type.shape == std::vector<int64_t>{2, 1});
}

TEST_CASE("an unbound shape input is unsupported, naming the node, the input and the flag") {
  auto imported = import_bound({});
  REQUIRE(imported.status().code() == StatusCode::kUnsupported);
  CHECK(contains(
      imported.status().message(),
      "models/reduce.onnx: node 'sum' (ReduceSum): graph input 'axes' must be a compile-time constant: bind "
      "it with --constant-input axes=FILE"));
}

TEST_CASE("a binding must name a graph input and match its type and shape") {
  SUBCASE("unknown name") {
    auto imported = import_bound({{"axes", ConstantInput{int_array("i8", {1}), "axes.npy"}},
                                  {"nope", ConstantInput{int_array("i8", {1}), "nope.npy"}}});
    REQUIRE(imported.status().code() == StatusCode::kInvalidArgument);
    CHECK(contains(
        imported.status().message(),
        "--constant-input nope=nope.npy: the model has no graph input 'nope' (its inputs: 'x', 'axes')"));
  }
  SUBCASE("element type") {
    auto imported = import_bound({{"axes", ConstantInput{int_array("i4", {1}), "axes.npy"}}});
    REQUIRE(imported.status().code() == StatusCode::kInvalidArgument);
    CHECK(contains(imported.status().message(), "input 'axes' bound by --constant-input to axes.npy: the "
                                                "value is INT32 [1], the input is INT64 [1]"));
  }
  SUBCASE("shape") {
    auto imported = import_bound({{"axes", ConstantInput{int_array("i8", {0, 1}), "axes.npy"}}});
    REQUIRE(imported.status().code() == StatusCode::kInvalidArgument);
    CHECK(contains(imported.status().message(), "the value is INT64 [2], the input is INT64 [1]"));
  }
  SUBCASE("every input bound") {
    data::NpyArray x;
    x.dtype = "f4";
    x.shape = {2, 3};
    x.data.assign(6 * sizeof(float), '\0');
    auto imported = import_bound(
        {{"axes", ConstantInput{int_array("i8", {1}), "axes.npy"}}, {"x", ConstantInput{x, "x.npy"}}});
    // A model of constants: nothing remains to feed, and the ReduceSum stays an op for the
    // compile's constant folding (import_onnx folds only with an evaluator).
    REQUIRE(imported.ok());
    CHECK(imported->inputs.empty());
    CHECK(imported->graph.ops().size() == 1);
  }
}

} // namespace
} // namespace ipu::testing
