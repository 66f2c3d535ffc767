// Gradients of every differentiable op, checked against central finite differences of the loss:
// one SGD step with learning rate 1 and no momentum moves each weight by exactly -gradient.
#include <doctest/doctest.h>

#include <cmath>

#include "tests/unit/compiler/onnx_builder.h"
#include "tests/unit/compiler/test_support.h"

namespace ipu::testing {
namespace {

std::string mlp_spec(const std::string& hidden_activation, const std::string& output_activation, bool from_logits) {
  return R"({"type": "sequential", "input": {"shape": [2, 3]},
    "layers": [{"name": "flatten", "type": "Flatten"},
               {"name": "hidden", "type": "Dense", "units": 5, "activation": ")" + hidden_activation + R"(",
                "bias_initializer": {"type": "glorot_uniform", "seed": 3}},
               {"name": "out", "type": "Dense", "units": 4, "activation": ")" + output_activation + R"(",
                "bias_initializer": {"type": "glorot_uniform", "seed": 4}}],
    "loss": {"type": "sparse_categorical_crossentropy", "from_logits": )" + (from_logits ? "true" : "false") + R"(},
    "optimizer": {"type": "sgd", "learning_rate": 1.0, "momentum": 0.0}})";
}

// `model` has 6 input features per sample and 4 classes; `weights` names every trainable tensor.
void check_gradients(const std::string& model, const compiler::CompileOptions& options,
                     const std::vector<std::string>& weights) {
  const uint32_t batch = options.batch_size;
  auto engine = compile_and_load(model, options);
  std::vector<float> features(batch * 6);
  for (size_t i = 0; i < features.size(); ++i) features[i] = std::sin(0.7f * static_cast<float>(i) + 0.3f);
  const std::vector<int32_t> labels = {1, 3, 0};

  // Finite differences first, in double around the float weights.
  std::vector<std::vector<double>> numeric;
  for (const auto& name : weights) {
    auto w = tensor_floats(*engine, name);
    std::vector<double> g(w.size());
    for (size_t i = 0; i < w.size(); ++i) {
      const float original = w[i];
      const float h = 1e-2f;
      w[i] = original + h;
      double plus = run_step(*engine, "evaluate", features, labels).loss.at(0);
      w[i] = original - h;
      double minus = run_step(*engine, "evaluate", features, labels).loss.at(0);
      w[i] = original;
      g[i] = (plus - minus) / (2.0 * static_cast<double>(h));
    }
    numeric.push_back(g);
  }
  std::vector<std::vector<float>> before;
  for (const auto& name : weights) {
    auto w = tensor_floats(*engine, name);
    before.emplace_back(w.begin(), w.end());
  }
  run_step(*engine, "train", features, labels);
  for (size_t k = 0; k < weights.size(); ++k) {
    auto w = tensor_floats(*engine, weights[k]);
    for (size_t i = 0; i < w.size(); ++i) {
      const double analytic = static_cast<double>(before[k][i]) - static_cast<double>(w[i]);
      INFO(weights[k] << "[" << i << "] analytic " << analytic << " numeric " << numeric[k][i]);
      CHECK(std::abs(analytic - numeric[k][i]) <= 2e-3 + 2e-2 * std::abs(numeric[k][i]));
    }
  }
}

void check_spec_gradients(const std::string& spec) {
  check_gradients(spec, small_target_options(3), {"hidden/kernel", "hidden/bias", "out/kernel", "out/bias"});
}

TEST_CASE("gradients of Dense + activations match finite differences") {
  SUBCASE("relu hidden, logits") { check_spec_gradients(mlp_spec("relu", "none", true)); }
  SUBCASE("sigmoid hidden, logits") { check_spec_gradients(mlp_spec("sigmoid", "none", true)); }
  SUBCASE("tanh hidden, softmax + probabilities") { check_spec_gradients(mlp_spec("tanh", "softmax", false)); }
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

compiler::CompileOptions onnx_training_options() {
  auto options = small_target_options(3);
  options.model_path = "test.onnx";
  options.loss = "sparse_categorical_crossentropy";
  options.learning_rate = 1.0f;
  return options;
}

TEST_CASE("gradients of ONNX Gemm in every transpose form match finite differences") {
  const auto options = onnx_training_options();
  SUBCASE("plain") { check_gradients(gemm_model(false, false), options, {"w1", "b1", "w2", "b2"}); }
  SUBCASE("transB") { check_gradients(gemm_model(true, true), options, {"w1", "b1", "w2", "b2"}); }
  SUBCASE("mixed") { check_gradients(gemm_model(true, false), options, {"w1", "b1", "w2", "b2"}); }
  SUBCASE("transA") { check_gradients(gemm_trans_a_model(), options, {"w1", "w2", "b2"}); }
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

}  // namespace
}  // namespace ipu::testing
