// Gradients of every differentiable op, checked against central finite differences of the loss:
// one SGD step with learning rate 1 and no momentum moves each weight by exactly -gradient.
#include <doctest/doctest.h>

#include <cmath>

#include "tests/unit/compiler/gradient_check.h"
#include "tests/unit/compiler/onnx_builder.h"
#include "tests/unit/compiler/test_support.h"

namespace ipu::testing {
namespace {

std::string mlp_spec(const std::string& hidden_activation, const std::string& output_activation,
                     bool from_logits) {
  return R"({"type": "sequential", "input": {"shape": [2, 3]},
    "layers": [{"name": "flatten", "type": "Flatten"},
               {"name": "hidden", "type": "Dense", "units": 5, "activation": ")" +
         hidden_activation + R"(",
                "bias_initializer": {"type": "glorot_uniform", "seed": 3}},
               {"name": "out", "type": "Dense", "units": 4, "activation": ")" +
         output_activation + R"(",
                "bias_initializer": {"type": "glorot_uniform", "seed": 4}}],
    "loss": {"type": "sparse_categorical_crossentropy", "from_logits": )" +
         (from_logits ? "true" : "false") + R"(},
    "optimizer": {"type": "sgd", "learning_rate": 1.0, "momentum": 0.0}})";
}

void check_spec_gradients(const std::string& spec) {
  check_gradients(spec, small_target_options(3), {"hidden/kernel", "hidden/bias", "out/kernel", "out/bias"});
}

TEST_CASE("gradients of Dense + activations match finite differences") {
  SUBCASE("relu hidden, logits") {
    check_spec_gradients(mlp_spec("relu", "none", true));
  }
  SUBCASE("sigmoid hidden, logits") {
    check_spec_gradients(mlp_spec("sigmoid", "none", true));
  }
  SUBCASE("tanh hidden, softmax + probabilities") {
    check_spec_gradients(mlp_spec("tanh", "softmax", false));
  }
}

// The MLP of mlp_spec with `output_activation` on its 4 outputs, trained on `loss` (a JSON loss).
std::string loss_spec(const std::string& output_activation, const std::string& loss) {
  std::string spec = mlp_spec("tanh", output_activation, true);
  const size_t at = spec.find(R"("loss": )");
  const size_t end = spec.find('}', at);
  return spec.substr(0, at) + R"("loss": )" + loss + spec.substr(end + 1);
}

void check_loss_gradients(const std::string& output_activation, const std::string& loss,
                          const std::vector<float>& labels) {
  INFO(loss);
  check_gradients_with(loss_spec(output_activation, loss), small_target_options(3),
                       {"hidden/kernel", "hidden/bias", "out/kernel", "out/bias"}, labels, 6);
}

// Float labels for a batch of 3 and 4 outputs: soft class probabilities (rows sum to 1), binary
// targets (0, 1 and one soft value) and regression targets.
const std::vector<float> kSoftLabels = {0.1f, 0.6f, 0.2f, 0.1f, 0, 0, 0, 1, 0.25f, 0.25f, 0.5f, 0};
const std::vector<float> kBinaryLabels = {1, 0, 0, 1, 0, 1, 1, 0.3f, 1, 1, 0, 0};
const std::vector<float> kTargets = {0.9f,  -1.2f, 2.5f, 0.1f, -0.4f, 0.7f,
                                     -2.2f, 1.6f,  0.0f, 3.1f, -0.8f, 0.45f};

TEST_CASE("gradients of the losses on float labels match finite differences") {
  SUBCASE("categorical cross-entropy") {
    check_loss_gradients("none", R"({"type": "categorical_crossentropy", "from_logits": true})", kSoftLabels);
    check_loss_gradients("softmax", R"({"type": "categorical_crossentropy"})", kSoftLabels);
    // Probabilities that do not sum to 1: Keras normalises them first.
    check_loss_gradients("sigmoid", R"({"type": "categorical_crossentropy"})", kSoftLabels);
  }
  SUBCASE("binary cross-entropy") {
    check_loss_gradients("none", R"({"type": "binary_crossentropy", "from_logits": true})", kBinaryLabels);
    check_loss_gradients("sigmoid", R"({"type": "binary_crossentropy"})", kBinaryLabels);
  }
  SUBCASE("mean squared and absolute error, Huber") {
    check_loss_gradients("none", R"("mean_squared_error")", kTargets);
    check_loss_gradients("none", R"("mae")", kTargets);
    check_loss_gradients("none", R"("huber")", kTargets);
    check_loss_gradients("none", R"({"type": "huber", "delta": 0.3})", kTargets);
  }
}

// ONNX Gemm keeps weights in either layout; every transpose combination has its own gradient
// form (compiler/ops/dense_ops.cpp). x [N,6] · W1 (+ b1) → tanh → · W2 (+ b2) → logits [N,4].
std::string gemm_model(bool trans_b1, bool trans_b2) {
  OnnxBuilder b;
  b.input("x", {6}).output("logits");
  b.floats("w1", trans_b1 ? std::vector<int64_t>{5, 6} : std::vector<int64_t>{6, 5}, wave(30, 0.6f, 0.1f));
  b.floats("b1", {5}, wave(5, 0.3f, 0.7f));
  b.floats("w2", trans_b2 ? std::vector<int64_t>{4, 5} : std::vector<int64_t>{5, 4}, wave(20, 0.6f, 0.4f));
  b.floats("b2", {1, 4}, wave(4, 0.3f, 0.2f));
  OnnxBuilder::int_attr(b.node("Gemm", "fc1", {"x", "w1", "b1"}, {"h"}), "transB", trans_b1);
  b.node("Tanh", "act", {"h"}, {"a"});
  OnnxBuilder::int_attr(b.node("Gemm", "fc2", {"a", "w2", "b2"}, {"logits"}), "transB", trans_b2);
  return b.bytes();
}

// The same network computed column-wise: hᵀ = Gemm(W1, x, transA, transB) is [5,N], then
// logits = Gemm(aᵀ, W2, transA) + b2, so transA meets both a weight and an activation.
std::string gemm_trans_a_model() {
  OnnxBuilder b;
  b.input("x", {6}).output("logits");
  b.floats("w1", {6, 5}, wave(30, 0.6f, 0.1f));
  b.floats("w2", {5, 4}, wave(20, 0.6f, 0.4f));
  b.floats("b2", {4}, wave(4, 0.3f, 0.2f));
  auto& fc1 = b.node("Gemm", "fc1", {"w1", "x"}, {"h_t"});
  OnnxBuilder::int_attr(fc1, "transA", 1);
  OnnxBuilder::int_attr(fc1, "transB", 1);
  b.node("Tanh", "act", {"h_t"}, {"a_t"});
  OnnxBuilder::int_attr(b.node("Gemm", "fc2", {"a_t", "w2", "b2"}, {"logits"}), "transA", 1);
  return b.bytes();
}

TEST_CASE("gradients of ONNX Gemm in every transpose form match finite differences") {
  const auto options = onnx_training_options();
  SUBCASE("plain") {
    check_gradients(gemm_model(false, false), options, {"w1", "b1", "w2", "b2"});
  }
  SUBCASE("transB") {
    check_gradients(gemm_model(true, true), options, {"w1", "b1", "w2", "b2"});
  }
  SUBCASE("mixed") {
    check_gradients(gemm_model(true, false), options, {"w1", "b1", "w2", "b2"});
  }
  SUBCASE("transA") {
    check_gradients(gemm_trans_a_model(), options, {"w1", "w2", "b2"});
  }
}

// Broadcasting binary ops, unary math and Where between weights of different shapes: each
// weight's gradient is summed over the axes it was broadcast along.
std::string broadcast_model() {
  OnnxBuilder b(13);
  b.input("x", {6}).output("logits");
  b.floats("w1", {6}, wave(6, 0.8f, 0.1f));
  b.floats("w2", {1, 6}, wave(6, 0.5f, 0.7f));
  b.floats("w3", {6}, wave(6, 0.5f, 1.1f));
  // Far from the other operand of Max, so finite differences never cross the kink.
  b.floats("w4", {6}, {-5, 5, -5, 5, -5, 5});
  b.floats("w5", {1}, {0.4f});
  b.floats("w6", {6}, wave(6, 0.5f, 0.9f));
  b.floats("w7", {6, 4}, wave(24, 0.6f, 0.3f));
  b.floats("zero", {}, {0.0f});
  b.node("Mul", "mul", {"x", "w1"}, {"a"});
  b.node("Sub", "sub", {"a", "w2"}, {"b"});
  b.node("Exp", "exp", {"w3"}, {"d"});
  b.node("Div", "div", {"b", "d"}, {"c"});
  b.node("Max", "max", {"c", "w4"}, {"e"});
  b.node("Greater", "positive", {"x", "zero"}, {"mask"});
  b.node("Sqrt", "sqrt", {"d"}, {"root"});
  b.node("Where", "where", {"mask", "e", "root"}, {"f"});
  b.node("Erf", "erf", {"f"}, {"g"});
  b.node("Sigmoid", "sig", {"g"}, {"s"});
  b.node("Pow", "pow", {"s", "w6"}, {"p"});
  b.node("Mul", "scale", {"p", "w5"}, {"q"});
  b.node("MatMul", "out", {"q", "w7"}, {"logits"});
  return b.bytes();
}

// A transformer-like block: LayerNormalization (its output read by four ops), attention with
// batched MatMuls of two activations, a softmax over the last of three axes, a residual, Concat,
// ReduceMean and ReduceSum, LogSoftmax and Transpose.
std::string attention_model() {
  OnnxBuilder b(17);
  b.input("x", {6}).output("logits");
  b.ints("shape", {-1, 2, 3});
  b.ints("axis1", {1});
  b.floats("scale", {3}, wave(3, 0.5f, 0.2f));
  b.floats("bias", {3}, wave(3, 0.3f, 0.6f));
  b.floats("wq", {3, 3}, wave(9, 0.7f, 0.4f));
  b.floats("wo", {6, 4}, wave(24, 0.6f, 0.8f));
  b.node("Reshape", "view", {"x", "shape"}, {"r"});
  b.node("LayerNormalization", "ln", {"r", "scale", "bias"}, {"n"});
  b.node("MatMul", "q", {"n", "wq"}, {"q"});
  OnnxBuilder::ints_attr(b.node("Transpose", "kt", {"n"}, {"kt"}), "perm", {0, 2, 1});
  b.node("MatMul", "scores", {"q", "kt"}, {"scores"});
  b.node("Softmax", "attend", {"scores"}, {"weights"});
  b.node("MatMul", "mix", {"weights", "n"}, {"mixed"});
  b.node("Add", "residual", {"mixed", "r"}, {"res"});
  OnnxBuilder::int_attr(b.node("Concat", "cat", {"res", "n"}, {"cat"}), "axis", 2);
  auto& mean = b.node("ReduceMean", "mean", {"cat"}, {"m"});
  OnnxBuilder::ints_attr(mean, "axes", {1});
  OnnxBuilder::int_attr(mean, "keepdims", 0);
  OnnxBuilder::int_attr(b.node("ReduceSum", "sum", {"cat", "axis1"}, {"s"}), "keepdims", 0);
  b.node("LogSoftmax", "logp", {"s"}, {"ls"});
  b.node("Add", "combine", {"m", "ls"}, {"h"});
  b.node("MatMul", "out", {"h", "wo"}, {"logits"});
  return b.bytes();
}

TEST_CASE("gradients of broadcasting elementwise ops match finite differences") {
  check_gradients(broadcast_model(), onnx_training_options(), {"w1", "w2", "w3", "w4", "w5", "w6", "w7"});
}

// x [N, 6] → Gemm → [N, 2, 3] → InstanceNormalization (scale, B) → PRelu (a per-channel slope
// [2, 1], negative values in both channels) → Flatten → Gemm → logits.
TEST_CASE("gradients of InstanceNormalization and PRelu match finite differences") {
  OnnxBuilder b;
  b.input("x", {6}).output("logits");
  b.floats("w0", {6, 6}, wave(36, 0.7f, 0.3f));
  b.ints("planes", {-1, 2, 3});
  b.floats("scale", {2}, {1.3f, 0.6f});
  b.floats("shift", {2}, {0.2f, -0.4f});
  b.floats("slope", {2, 1}, {0.25f, -0.5f});
  b.floats("w3", {4, 6}, wave(24, 0.5f, 0.2f));
  b.floats("b3", {4}, wave(4, 0.3f, 0.4f));
  b.node("MatMul", "fc0", {"x", "w0"}, {"h"});
  b.node("Reshape", "view", {"h", "planes"}, {"h3"});
  OnnxBuilder::float_attr(b.node("InstanceNormalization", "norm", {"h3", "scale", "shift"}, {"n"}), "epsilon",
                          0.01f);
  b.node("PRelu", "act", {"n", "slope"}, {"a"});
  b.node("Flatten", "flatten", {"a"}, {"f"});
  OnnxBuilder::int_attr(b.node("Gemm", "fc", {"f", "w3", "b3"}, {"logits"}), "transB", 1);
  check_gradients(b.bytes(), onnx_training_options(), {"w0", "scale", "shift", "slope", "w3", "b3"});
}

// x [N, 6] → Gemm → [N, 2, 4] → BatchNormalization with training_mode 1 (scale, B trained; the
// statistics the batch's own, 12 values per channel) → Relu → Flatten → Gemm → logits. Its mean and
// variance inputs are no initializers (Identity outputs), so it is ONNX's function in every
// program, evaluate too: the finite differences see the batch statistics move with each weight.
TEST_CASE("gradients of BatchNormalization with batch statistics match finite differences") {
  OnnxBuilder b(15);
  b.input("x", {6}).output("logits");
  b.floats("w0", {6, 8}, wave(48, 0.7f, 0.3f));
  b.ints("planes", {-1, 2, 4});
  b.floats("scale", {2}, {1.3f, 0.6f});
  b.floats("shift", {2}, {0.2f, -0.4f});
  b.floats("mean0", {2}, {0.1f, -0.2f});
  b.floats("var0", {2}, {1.5f, 0.5f});
  b.floats("w1", {4, 8}, wave(32, 0.5f, 0.2f));
  b.node("MatMul", "fc0", {"x", "w0"}, {"h"});
  b.node("Reshape", "view", {"h", "planes"}, {"h3"});
  b.node("Identity", "m", {"mean0"}, {"m"});
  b.node("Identity", "v", {"var0"}, {"v"});
  auto& norm = b.node("BatchNormalization", "norm", {"h3", "scale", "shift", "m", "v"}, {"n"});
  OnnxBuilder::int_attr(norm, "training_mode", 1);
  OnnxBuilder::float_attr(norm, "epsilon", 0.01f);
  b.node("Relu", "act", {"n"}, {"a"});
  b.node("Flatten", "flatten", {"a"}, {"f"});
  OnnxBuilder::int_attr(b.node("Gemm", "fc", {"f", "w1"}, {"logits"}), "transB", 1);
  check_gradients(b.bytes(), onnx_training_options(), {"w0", "scale", "shift", "w1"});
}

// x [N, 6] → MatMul → Softsign (inputs of both signs) → MatMul → logits.
TEST_CASE("gradients of Softsign match finite differences") {
  OnnxBuilder b;
  b.input("x", {6}).output("logits");
  b.floats("w0", {6, 5}, wave(30, 0.9f, 0.3f));
  b.floats("w1", {5, 4}, wave(20, 0.6f, 0.5f));
  b.node("MatMul", "fc0", {"x", "w0"}, {"h"});
  b.node("Softsign", "act", {"h"}, {"a"});
  b.node("MatMul", "fc1", {"a", "w1"}, {"logits"});
  check_gradients(b.bytes(), onnx_training_options(), {"w0", "w1"});
}

TEST_CASE("gradients through LayerNormalization, attention, Concat and reductions match finite differences") {
  check_gradients(attention_model(), onnx_training_options(), {"scale", "bias", "wq", "wo"});
}

TEST_CASE("gradients of Slice (forwards and backwards) and Split match finite differences") {
  // h = Slice(x·w, 1:5) ++ Slice(x·w, ::-1)[1:] (reversed), and Split halves scaled apart.
  OnnxBuilder b(13);
  b.input("x", {6}).output("logits");
  b.floats("w", {6}, wave(6, 0.8f, 0.5f));
  b.floats("wo", {15, 4}, wave(60, 0.6f, 0.1f));
  b.ints("starts", {1}).ints("ends", {5}).ints("rstarts", {4}).ints("rends", {-100}).ints("axes", {1});
  b.ints("rsteps", {-1}).ints("halves", {3, 3});
  b.node("Mul", "xw", {"x", "w"}, {"xw"});
  b.node("Slice", "mid", {"xw", "starts", "ends", "axes"}, {"mid"});
  b.node("Slice", "rev", {"xw", "rstarts", "rends", "axes", "rsteps"}, {"rev"});
  OnnxBuilder::int_attr(b.node("Split", "split", {"xw", "halves"}, {"lo", "hi"}), "axis", 1);
  b.node("Sigmoid", "squash", {"hi"}, {"hs"});
  OnnxBuilder::int_attr(b.node("Concat", "cat", {"mid", "rev", "lo", "hs"}, {"h"}), "axis", 1);
  b.node("MatMul", "out", {"h", "wo"}, {"logits"});
  check_gradients(b.bytes(), onnx_training_options(), {"w", "wo"});
}

TEST_CASE("gradients of ReduceMax and ReduceMin match finite differences; none flows through ArgMax") {
  // [N, 6] viewed as [N, 2, 3]: the max of each row (axis 2) and the min of each column (axis 1,
  // kept then flattened). The wave values have no ties, where the gradient is not unique.
  OnnxBuilder b(13);
  b.input("x", {6}).output("logits");
  b.floats("w", {6}, wave(6, 0.8f, 0.5f));
  b.floats("wo", {5, 4}, wave(20, 0.6f, 0.1f));
  b.ints("view", {-1, 2, 3}).ints("flat", {-1, 3});
  b.node("Mul", "xw", {"x", "w"}, {"xw"});
  b.node("Reshape", "grid", {"xw", "view"}, {"g"});
  auto& max = b.node("ReduceMax", "row_max", {"g"}, {"rmax"});
  OnnxBuilder::ints_attr(max, "axes", {2});
  OnnxBuilder::int_attr(max, "keepdims", 0);
  OnnxBuilder::ints_attr(b.node("ReduceMin", "col_min", {"g"}, {"cmin"}), "axes", {1});
  b.node("Reshape", "col_flat", {"cmin", "flat"}, {"cmin2"});
  // The index of each column's maximum is piecewise constant: no gradient flows through it.
  OnnxBuilder::int_attr(b.node("ArgMax", "col_argmax", {"g"}, {"amax"}), "axis", 1);
  OnnxBuilder::int_attr(b.node("Cast", "amax_float", {"amax"}, {"amaxf"}), "to", onnx::TensorProto::FLOAT);
  b.node("Reshape", "amax_flat", {"amaxf", "flat"}, {"af"});
  b.node("Add", "col_shift", {"cmin2", "af"}, {"cs"});
  OnnxBuilder::int_attr(b.node("Concat", "cat", {"rmax", "cs"}, {"h"}), "axis", 1);
  b.node("MatMul", "out", {"h", "wo"}, {"logits"});
  check_gradients(b.bytes(), onnx_training_options(), {"w", "wo"});
}

// Values near ±1, so that products of up to 12 of them, and their gradients, stay well above the
// test's absolute tolerance; `zeros` are set to exactly 0.
std::vector<float> product_values(size_t n, float phase, const std::vector<size_t>& zeros) {
  std::vector<float> out = wave(n, 0.3f, phase);
  for (size_t i = 0; i < n; ++i)
    out[i] += i % 3 == 1 ? -1.0f : 1.0f;
  for (size_t i : zeros)
    out[i] = 0.0f;
  return out;
}

TEST_CASE("gradients of ReduceProd, with zeros in a group, match finite differences") {
  // p [2, 3, 4] reduced over axes {0, 2} (kept: [1, 3, 1]) has groups j = 0, 1, 2 of 8 elements:
  // j = 0 holds one zero (p[0,0,1]), j = 1 two (p[0,1,0], p[1,1,3]), j = 2 none. Over axis 2
  // (dropped: [2, 3]) its rows of 4 hold one zero or none. q [3, 4] over axis 1 (rows: none,
  // two zeros, one) and over axis 0 (kept: [1, 4]). x·w [N, 6] viewed as [N, 2, 3] is reduced
  // over the middle axis, per sample; over {1, 2} (the last axes, no transpose) it is one value.
  // The product is linear in each element, so central differences are exact at the zeros.
  OnnxBuilder b(13);
  b.input("x", {6}).output("logits");
  b.floats("p", {2, 3, 4}, product_values(24, 0.2f, {1, 4, 19}));
  b.floats("q", {3, 4}, product_values(12, 0.9f, {4, 7, 10}));
  b.floats("w", {6}, product_values(6, 0.5f, {}));
  b.floats("wo", {19, 4}, wave(76, 0.6f, 0.1f));
  b.ints("row", {1, -1}).ints("grid", {-1, 2, 3}).ints("flat", {-1, 3}).ints("one", {-1, 1});
  auto reduce = [&](const std::string& name, const std::string& in, const std::vector<int64_t>& axes,
                    bool keep) {
    auto& node = b.node("ReduceProd", name, {in}, {name});
    OnnxBuilder::ints_attr(node, "axes", axes);
    OnnxBuilder::int_attr(node, "keepdims", keep);
  };
  reduce("p_outer", "p", {0, 2}, true);
  reduce("p_rows", "p", {2}, false);
  reduce("q_rows", "q", {1}, false);
  reduce("q_columns", "q", {0}, true);
  b.node("Reshape", "p_outer_row", {"p_outer", "row"}, {"a"});
  b.node("Reshape", "p_rows_row", {"p_rows", "row"}, {"c"});
  b.node("Reshape", "q_rows_row", {"q_rows", "row"}, {"d"});
  OnnxBuilder::int_attr(b.node("Concat", "weights_cat", {"a", "c", "d", "q_columns"}, {"wcat"}), "axis",
                        1); // [1, 16]
  b.node("Mul", "xw", {"x", "w"}, {"xw"});
  b.node("Reshape", "xw_grid", {"xw", "grid"}, {"g"});
  reduce("per_sample", "g", {1}, true);
  reduce("per_sample_all", "g", {1, 2}, false);
  b.node("Reshape", "per_sample_flat", {"per_sample", "flat"}, {"e"});
  b.node("Reshape", "per_sample_all_col", {"per_sample_all", "one"}, {"f"});
  b.node("Add", "shift", {"e", "a"}, {"s"});                                    // [N, 3] + [1, 3]
  b.node("Add", "spread", {"wcat", "f"}, {"t"});                                // [1, 16] + [N, 1]
  OnnxBuilder::int_attr(b.node("Concat", "cat", {"s", "t"}, {"h"}), "axis", 1); // [N, 19]
  b.node("MatMul", "out", {"h", "wo"}, {"logits"});
  check_gradients(b.bytes(), onnx_training_options(), {"p", "q", "w", "wo"});
}

TEST_CASE("gradients of Tile, Expand and Pad (padding and cropping) match finite differences") {
  // xw [N, 6] viewed as [N, 2, 3] is tiled twice along its last axis, and padded: its middle axis
  // by one on each side, its last cropped by one at the front and padded by two at the back; xw
  // viewed as [N, 1, 6] is expanded to [N, 2, 6].
  OnnxBuilder b(13);
  b.input("x", {6}).output("logits");
  b.floats("w", {6}, wave(6, 0.8f, 0.5f));
  b.floats("wo", {46, 4}, wave(184, 0.6f, 0.1f));
  b.ints("grid_shape", {-1, 2, 3}).ints("row_shape", {-1, 1, 6}).ints("repeats", {1, 1, 2});
  b.ints("expand_shape", {1, 2, 1}).ints("pads", {0, 1, -1, 0, 1, 2});
  b.ints("flat12", {-1, 12}).ints("flat16", {-1, 16});
  b.node("Mul", "xw", {"x", "w"}, {"xw"});
  b.node("Reshape", "grid", {"xw", "grid_shape"}, {"g"});
  b.node("Tile", "tile", {"g", "repeats"}, {"t"});
  b.node("Reshape", "tile_flat", {"t", "flat12"}, {"tf"});
  b.node("Pad", "pad", {"g", "pads"}, {"p"});
  b.node("Reshape", "pad_flat", {"p", "flat16"}, {"pf"});
  b.node("Reshape", "row", {"xw", "row_shape"}, {"r"});
  b.node("Expand", "expand", {"r", "expand_shape"}, {"e"});
  b.node("Reshape", "expand_flat", {"e", "flat12"}, {"ef"});
  b.node("Tanh", "squash", {"xw"}, {"sq"});
  OnnxBuilder::int_attr(b.node("Concat", "cat", {"tf", "pf", "ef", "sq"}, {"h"}), "axis", 1);
  b.node("MatMul", "out", {"h", "wo"}, {"logits"});
  check_gradients(b.bytes(), onnx_training_options(), {"w", "wo"});
}

TEST_CASE("gradients of Gather (an embedding with repeated and negative indices, and an activation's axis 1) "
          "match finite differences") {
  // Rows 1 (twice), 4 (as -1) and 3 of a [5, 3] table, added to every sample of x·w1; columns
  // 5, 0 and 5 again of x·w.
  OnnxBuilder b(13);
  b.input("x", {6}).output("logits");
  b.floats("table", {5, 3}, wave(15, 0.7f, 0.3f));
  b.floats("w", {6}, wave(6, 0.8f, 0.5f));
  b.floats("w1", {6, 12}, wave(72, 0.5f, 0.2f));
  b.floats("wo", {15, 4}, wave(60, 0.6f, 0.1f));
  b.ints("rows", {1, -1, 1, 3}).ints("columns", {5, 0, 5}).ints("flat", {12});
  b.node("Gather", "embed", {"table", "rows"}, {"e"});
  b.node("Reshape", "embed_flat", {"e", "flat"}, {"ef"});
  b.node("MatMul", "project", {"x", "w1"}, {"p"});
  b.node("Add", "shift", {"p", "ef"}, {"s"});
  b.node("Mul", "xw", {"x", "w"}, {"xw"});
  OnnxBuilder::int_attr(b.node("Gather", "pick", {"xw", "columns"}, {"c"}), "axis", 1);
  OnnxBuilder::int_attr(b.node("Concat", "cat", {"s", "c"}, {"h"}), "axis", 1);
  b.node("MatMul", "out", {"h", "wo"}, {"logits"});
  check_gradients(b.bytes(), onnx_training_options(), {"table", "w", "w1", "wo"});
}

TEST_CASE(
    "gradients of Slice with steps beyond 1 (forwards and backwards, on two axes) match finite differences") {
  // xw [N, 6] viewed as [N, 2, 3]: every other column from 0 (step 2), the columns from the last
  // backwards by 2, and (of the [N, 6] view) elements 5, 2 (step -3) and 1, 4 (step 3).
  OnnxBuilder b(13);
  b.input("x", {6}).output("logits");
  b.floats("w", {6}, wave(6, 0.8f, 0.5f));
  b.floats("wo", {12, 4}, wave(48, 0.6f, 0.1f));
  b.ints("grid_shape", {-1, 2, 3}).ints("flat4", {-1, 4});
  b.ints("s0", {0, 0}).ints("e0", {2, 3}).ints("a0", {1, 2}).ints("st0", {1, 2});
  b.ints("s1", {1, 2}).ints("e1", {-100, -100}).ints("a1", {1, 2}).ints("st1", {-1, -2});
  b.ints("s2", {5}).ints("e2", {-100}).ints("a2", {1}).ints("st2", {-3});
  b.ints("s3", {1}).ints("e3", {6}).ints("st3", {3});
  b.node("Mul", "xw", {"x", "w"}, {"xw"});
  b.node("Reshape", "grid", {"xw", "grid_shape"}, {"g"});
  b.node("Slice", "even", {"g", "s0", "e0", "a0", "st0"}, {"even"});
  b.node("Reshape", "even_flat", {"even", "flat4"}, {"ef"});
  b.node("Slice", "back", {"g", "s1", "e1", "a1", "st1"}, {"back"});
  b.node("Reshape", "back_flat", {"back", "flat4"}, {"bf"});
  b.node("Slice", "thirds_back", {"xw", "s2", "e2", "a2", "st2"}, {"tb"});
  b.node("Slice", "thirds", {"xw", "s3", "e3", "a2", "st3"}, {"t"});
  OnnxBuilder::int_attr(b.node("Concat", "cat", {"ef", "bf", "tb", "t"}, {"h"}), "axis", 1);
  b.node("MatMul", "out", {"h", "wo"}, {"logits"});
  check_gradients(b.bytes(), onnx_training_options(), {"w", "wo"});
}

TEST_CASE("a value read by several ops gets the sum of their gradients") {
  // y = x·w + x·w·w: dy/dw sums two paths through the shared w (and the shared product).
  OnnxBuilder b(13);
  b.input("x", {6}).output("logits");
  b.floats("w", {6}, wave(6, 0.8f, 0.5f));
  b.floats("wo", {6, 4}, wave(24, 0.6f, 0.1f));
  b.node("Mul", "xw", {"x", "w"}, {"xw"});
  b.node("Mul", "xww", {"xw", "w"}, {"xww"});
  b.node("Add", "sum", {"xw", "xww"}, {"h"});
  b.node("MatMul", "out", {"h", "wo"}, {"logits"});
  check_gradients(b.bytes(), onnx_training_options(), {"w", "wo"});
}

// A convolution stack over x [N, 2, 5, 5] (50 features per sample): Conv (3x3, pads 1, bias) →
// Tanh → `middle` → Flatten → Gemm → logits [N, 4]. Every weight's gradient passes through the
// first Conv's input-independent rules, and w1 and b1's also through `middle`, so each middle
// op's gradient with respect to its input is checked.
enum class Middle { kConvGroups, kMaxPool, kAveragePool, kGlobalAveragePool, kDepthwiseStrided };

std::string conv_model(Middle middle, const std::string& first_activation = "Tanh") {
  OnnxBuilder b;
  b.input("x", {2, 5, 5}).output("logits");
  b.floats("w1", {4, 2, 3, 3}, wave(72, 0.4f, 0.1f));
  b.floats("b1", {4}, wave(4, 0.3f, 0.5f));
  auto& conv1 = b.node("Conv", "conv1", {"x", "w1", "b1"}, {"c1"});
  auto ints = [](onnx::NodeProto& node, const std::string& name, const std::vector<int64_t>& values) {
    auto* a = node.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t v : values)
      a->add_ints(v);
  };
  ints(conv1, "pads", {1, 1, 1, 1});
  b.node(first_activation, "act1", {"c1"}, {"a1"});
  int64_t flat = 0;
  switch (middle) {
  case Middle::kConvGroups: { // grouped, strided, dilated, asymmetric pads: [N,4,5,5] → [N,2,2,3]
    b.floats("w2", {2, 2, 2, 2}, wave(16, 0.5f, 0.3f));
    b.floats("b2", {2}, wave(2, 0.3f, 0.9f));
    auto& conv2 = b.node("Conv", "conv2", {"a1", "w2", "b2"}, {"m"});
    OnnxBuilder::int_attr(conv2, "group", 2);
    ints(conv2, "strides", {2, 2});
    ints(conv2, "dilations", {2, 1});
    ints(conv2, "pads", {0, 1, 1, 0});
    flat = 2 * 2 * 3;
    break;
  }
  case Middle::kDepthwiseStrided: { // depthwise, no bias, SAME_UPPER: [N,4,5,5] → [N,4,3,3]
    b.floats("w2", {4, 1, 2, 2}, wave(16, 0.5f, 0.3f));
    auto& conv2 = b.node("Conv", "conv2", {"a1", "w2"}, {"m"});
    OnnxBuilder::int_attr(conv2, "group", 4);
    ints(conv2, "strides", {2, 2});
    auto* pad = conv2.add_attribute();
    pad->set_name("auto_pad");
    pad->set_type(onnx::AttributeProto::STRING);
    pad->set_s("SAME_UPPER");
    flat = 4 * 3 * 3;
    break;
  }
  case Middle::kMaxPool: { // [N,4,5,5] → [N,4,3,3] with ceil_mode
    auto& pool = b.node("MaxPool", "pool", {"a1"}, {"m"});
    ints(pool, "kernel_shape", {2, 2});
    ints(pool, "strides", {2, 2});
    OnnxBuilder::int_attr(pool, "ceil_mode", 1);
    flat = 4 * 3 * 3;
    break;
  }
  case Middle::kAveragePool: { // [N,4,5,5] → [N,4,3,3], padded windows counted
    auto& pool = b.node("AveragePool", "pool", {"a1"}, {"m"});
    ints(pool, "kernel_shape", {3, 3});
    ints(pool, "strides", {2, 2});
    ints(pool, "pads", {1, 1, 1, 1});
    OnnxBuilder::int_attr(pool, "count_include_pad", 1);
    flat = 4 * 3 * 3;
    break;
  }
  case Middle::kGlobalAveragePool: // [N,4,5,5] → [N,4,1,1]
    b.node("GlobalAveragePool", "pool", {"a1"}, {"m"});
    flat = 4;
    break;
  }
  b.node("Flatten", "flatten", {"m"}, {"f"});
  b.floats("w3", {4, flat}, wave(static_cast<size_t>(4 * flat), 0.5f, 0.2f));
  b.floats("b3", {4}, wave(4, 0.3f, 0.4f));
  OnnxBuilder::int_attr(b.node("Gemm", "fc", {"f", "w3", "b3"}, {"logits"}), "transB", 1);
  return b.bytes();
}

TEST_CASE("gradients of Conv and pooling match finite differences") {
  const auto options = onnx_training_options();
  const std::vector<std::string> base = {"w1", "b1", "w3", "b3"};
  SUBCASE("grouped strided dilated Conv") {
    check_gradients(conv_model(Middle::kConvGroups), options, {"w1", "b1", "w2", "b2", "w3", "b3"}, 50);
  }
  SUBCASE("depthwise Conv without bias, SAME_UPPER") {
    check_gradients(conv_model(Middle::kDepthwiseStrided), options, {"w1", "b1", "w2", "w3", "b3"}, 50);
  }
  SUBCASE("MaxPool with ceil_mode") {
    check_gradients(conv_model(Middle::kMaxPool), options, base, 50);
  }
  SUBCASE("Conv with the Relu after it fused in") {
    check_gradients(conv_model(Middle::kMaxPool, "Relu"), options, base, 50);
  }
  SUBCASE("AveragePool with count_include_pad") {
    check_gradients(conv_model(Middle::kAveragePool), options, base, 50);
  }
  SUBCASE("GlobalAveragePool") {
    check_gradients(conv_model(Middle::kGlobalAveragePool), options, base, 50);
  }
}

// Keras layers of the JSON spec: channels-last input [N, 3, 3, 2] → Conv2D (same, tanh) →
// BatchNormalization (gamma, beta trained) → AveragePooling2D (same) → Flatten → Dense, so the
// layout changes at both ends are differentiated too.
TEST_CASE("gradients of Conv2D, BatchNormalization and pooling spec layers match finite differences") {
  const std::string spec = R"({"type": "sequential", "input": {"shape": [3, 3, 2]},
    "layers": [{"name": "conv", "type": "Conv2D", "filters": 3, "kernel_size": 2, "padding": "same", "activation": "tanh",
                "bias_initializer": {"type": "glorot_uniform", "seed": 3}},
               {"name": "norm", "type": "BatchNormalization", "epsilon": 0.5},
               {"name": "pool", "type": "AveragePooling2D", "pool_size": 2, "padding": "same"},
               {"name": "flatten", "type": "Flatten"},
               {"name": "out", "type": "Dense", "units": 4, "bias_initializer": {"type": "glorot_uniform", "seed": 4}}],
    "loss": {"type": "sparse_categorical_crossentropy", "from_logits": true},
    "optimizer": {"type": "sgd", "learning_rate": 1.0, "momentum": 0.0}})";
  check_gradients(spec, small_target_options(3),
                  {"conv/kernel", "conv/bias", "norm/gamma", "norm/beta", "out/kernel", "out/bias"}, 18);
}

// x [N, 12] → Reshape [N, 2, 2, 3] → ConvTranspose (stride 2, asymmetric pads, output_padding,
// a bias; grouped or not) → Tanh → Flatten → Gemm; and a 1-D ConvTranspose with dilation.
TEST_CASE("gradients of ConvTranspose match finite differences") {
  for (int64_t group : {1, 2}) {
    CAPTURE(group);
    OnnxBuilder b;
    b.input("x", {12}).output("logits");
    b.ints("planes", {-1, 2, 2, 3});
    b.floats("w1", {2, 2 / group, 2, 2}, wave(16 / static_cast<size_t>(group), 0.6f, 0.1f));
    b.floats("b1", {2}, {0.3f, -0.2f});
    b.floats("w3", {4, 48}, wave(192, 0.3f, 0.2f));
    b.floats("b3", {4}, wave(4, 0.3f, 0.4f));
    b.node("Reshape", "view", {"x", "planes"}, {"x4"});
    auto& up = b.node("ConvTranspose", "up", {"x4", "w1", "b1"}, {"u"});
    OnnxBuilder::ints_attr(up, "strides", {2, 2});
    OnnxBuilder::ints_attr(up, "pads", {1, 0, 0, 1});
    OnnxBuilder::ints_attr(up, "output_padding", {1, 1});
    OnnxBuilder::int_attr(up, "group", group);
    b.node("Tanh", "act", {"u"}, {"a"}); // [N, 2, 4, 6]
    b.node("Flatten", "flatten", {"a"}, {"f"});
    OnnxBuilder::int_attr(b.node("Gemm", "fc", {"f", "w3", "b3"}, {"logits"}), "transB", 1);
    check_gradients(b.bytes(), onnx_training_options(), {"w1", "b1", "w3", "b3"}, 12);
  }
  OnnxBuilder b;
  b.input("x", {2, 3}).output("logits");
  b.floats("w1", {2, 3, 2}, wave(12, 0.6f, 0.1f));
  b.floats("w3", {4, 21}, wave(84, 0.3f, 0.2f));
  b.floats("b3", {4}, wave(4, 0.3f, 0.4f));
  auto& up = b.node("ConvTranspose", "up", {"x", "w1"}, {"u"});
  OnnxBuilder::ints_attr(up, "strides", {2});
  OnnxBuilder::ints_attr(up, "dilations", {2});
  b.node("Tanh", "act", {"u"}, {"a"}); // [N, 3, 7]: 2·(3 − 1) + (2 − 1)·2 + 1
  b.node("Flatten", "flatten", {"a"}, {"f"});
  OnnxBuilder::int_attr(b.node("Gemm", "fc", {"f", "w3", "b3"}, {"logits"}), "transB", 1);
  check_gradients(b.bytes(), onnx_training_options(), {"w1", "w3", "b3"}, 6);
}

// A grouped 3-D Conv with depth pads and a depth stride: x [N, 2, 3, 2, 2] → Conv (W [4, 1, 2, 2,
// 2], group 2, bias) → Tanh [N, 4, 2, 2, 1] → Flatten → Gemm.
TEST_CASE("gradients of a 3-D Conv match finite differences") {
  OnnxBuilder b;
  b.input("x", {2, 3, 2, 2}).output("logits");
  b.floats("w1", {4, 1, 2, 2, 2}, wave(32, 0.6f, 0.1f));
  b.floats("b1", {4}, wave(4, 0.3f, 0.5f));
  b.floats("w3", {4, 16}, wave(64, 0.4f, 0.2f));
  b.floats("b3", {4}, wave(4, 0.3f, 0.4f));
  auto& conv = b.node("Conv", "conv3d", {"x", "w1", "b1"}, {"c"});
  OnnxBuilder::ints_attr(conv, "strides", {2, 1, 1});
  OnnxBuilder::ints_attr(conv, "pads", {1, 0, 0, 0, 1, 0});
  OnnxBuilder::int_attr(conv, "group", 2);
  b.node("Tanh", "act", {"c"}, {"a"});
  b.node("Flatten", "flatten", {"a"}, {"f"});
  OnnxBuilder::int_attr(b.node("Gemm", "fc", {"f", "w3", "b3"}, {"logits"}), "transB", 1);
  check_gradients(b.bytes(), onnx_training_options(), {"w1", "b1", "w3", "b3"}, 24);
}

// A 1-D convolution: x [N, 2, 6] → Conv (kernel 3, stride 2, pads 1) → Tanh → Flatten → Gemm.
TEST_CASE("gradients of a 1-D Conv match finite differences") {
  OnnxBuilder b;
  b.input("x", {2, 6}).output("logits");
  b.floats("w1", {3, 2, 3}, wave(18, 0.5f, 0.1f));
  b.floats("b1", {3}, wave(3, 0.3f, 0.5f));
  auto& conv = b.node("Conv", "conv1", {"x", "w1", "b1"}, {"c1"});
  for (auto [name, values] :
       {std::pair<const char*, std::vector<int64_t>>{"strides", {2}}, {"pads", {1, 1}}}) {
    auto* a = conv.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t v : values)
      a->add_ints(v);
  }
  b.node("Tanh", "act1", {"c1"}, {"a1"});
  b.node("Flatten", "flatten", {"a1"}, {"f"});
  b.floats("w3", {4, 9}, wave(36, 0.5f, 0.2f));
  b.floats("b3", {4}, wave(4, 0.3f, 0.4f));
  OnnxBuilder::int_attr(b.node("Gemm", "fc", {"f", "w3", "b3"}, {"logits"}), "transB", 1);
  check_gradients(b.bytes(), onnx_training_options(), {"w1", "b1", "w3", "b3"}, 12);
}

// An ONNX loss inside the model: h = x·W1 viewed as scores [N, 3, 2, 2], z = `op_type`(h,
// targets, class weights) with `reduction`, and logits = (x·W2) ⊙ z, so the training loss
// depends on z and d loss / d z reaches the loss op as its output gradient. The targets (batch
// 3) include the ignore index 2 and every class; the class weights are an initializer, which the
// loss gives no gradient.
std::string inner_loss_model(const std::string& op_type, const std::string& reduction, bool weights,
                             bool ignore) {
  OnnxBuilder b(13);
  b.input("x", {6}).output("logits");
  b.floats("w1", {6, 12}, wave(72, 0.6f, 0.2f));
  b.floats("w2", {6, 4}, wave(24, 0.6f, 0.9f));
  b.floats("class_weights", {3}, {0.5f, 2.0f, 1.5f});
  b.ints("scores_shape", {-1, 3, 2, 2});
  b.ints("logits_shape", {-1, 4});
  b.ints("targets", {0, 2, 1, 1, 2, 0, 0, 1, 1, 0, 2, 2});
  auto* targets = b.model().mutable_graph()->mutable_initializer(b.model().graph().initializer_size() - 1);
  targets->clear_dims();
  for (int64_t d : {3, 2, 2})
    targets->add_dims(d);
  b.node("MatMul", "scores", {"x", "w1"}, {"h"});
  b.node("Reshape", "view", {"h", "scores_shape"}, {"h4"});
  std::vector<std::string> inputs = {"h4", "targets"};
  if (weights) inputs.push_back("class_weights");
  auto& loss = b.node(op_type, "inner_loss", inputs, {"z"});
  OnnxBuilder::string_attr(loss, "reduction", reduction);
  if (ignore) OnnxBuilder::int_attr(loss, "ignore_index", 2);
  b.node("MatMul", "l", {"x", "w2"}, {"l"});
  std::string factor = "z";
  if (reduction == "none") {
    b.node("Reshape", "z_rows", {"z", "logits_shape"}, {"z2"});
    factor = "z2";
  }
  b.node("Mul", "scale", {"l", factor}, {"logits"});
  return b.bytes();
}

TEST_CASE("gradients of NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss match finite differences") {
  const auto options = onnx_training_options();
  const std::vector<std::string> weights = {"w1", "w2"};
  SUBCASE("SCE mean, class weights, ignore_index") {
    check_gradients(inner_loss_model("SoftmaxCrossEntropyLoss", "mean", true, true), options, weights);
  }
  SUBCASE("SCE sum, ignore_index") {
    check_gradients(inner_loss_model("SoftmaxCrossEntropyLoss", "sum", false, true), options, weights);
  }
  SUBCASE("SCE none, class weights") {
    check_gradients(inner_loss_model("SoftmaxCrossEntropyLoss", "none", true, false), options, weights);
  }
  SUBCASE("NLL mean, class weights, ignore_index") {
    check_gradients(inner_loss_model("NegativeLogLikelihoodLoss", "mean", true, true), options, weights);
  }
  SUBCASE("NLL sum, class weights") {
    check_gradients(inner_loss_model("NegativeLogLikelihoodLoss", "sum", true, false), options, weights);
  }
  SUBCASE("NLL mean") {
    check_gradients(inner_loss_model("NegativeLogLikelihoodLoss", "mean", false, false), options, weights);
  }
}

} // namespace
} // namespace ipu::testing
