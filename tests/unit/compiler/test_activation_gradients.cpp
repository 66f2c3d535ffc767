// The gradients of the ONNX activations that are kinds of the Unary op, checked against finite
// differences: x [N, 6] → MatMul → the activation (pre-activations on both sides of each kink,
// none within the step of one) → MatMul → logits; and the refusal to train through an op
// without a gradient, which names the op type and the node.
#include <doctest/doctest.h>

#include <functional>
#include <string>

#include "compiler/driver/compile.h"
#include "tests/unit/compiler/gradient_check.h"
#include "tests/unit/compiler/onnx_builder.h"
#include "tests/unit/compiler/test_support.h"

namespace ipu::testing {
namespace {

// x → fc0 (w0 [6, 5]) → `add_activation(builder, "h", "a")` → fc1 (w1 [5, 4]) → logits.
std::string activation_model(int opset, const std::function<void(OnnxBuilder&)>& add_activation) {
  OnnxBuilder b(opset);
  b.input("x", {6}).output("logits");
  b.floats("w0", {6, 5}, wave(30, 0.9f, 0.3f));
  b.floats("w1", {5, 4}, wave(20, 0.6f, 0.5f));
  b.node("MatMul", "fc0", {"x", "w0"}, {"h"});
  add_activation(b);
  b.node("MatMul", "fc1", {"a", "w1"}, {"logits"});
  return b.bytes();
}

void check_activation(int opset, const std::function<void(OnnxBuilder&)>& add_activation) {
  check_gradients(activation_model(opset, add_activation), onnx_training_options(), {"w0", "w1"});
}

TEST_CASE("gradients of Clip (constant bounds, either form) match finite differences") {
  SUBCASE("bounds as inputs (opset 13), one of them absent") {
    check_activation(13, [](OnnxBuilder& b) {
      b.floats("lo", {}, {-0.3f});
      b.floats("hi", {}, {0.35f});
      b.node("Clip", "act", {"h", "lo", "hi"}, {"a"});
    });
    check_activation(13, [](OnnxBuilder& b) {
      b.floats("hi", {}, {0.35f});
      b.node("Clip", "act", {"h", "", "hi"}, {"a"});
    });
  }
  SUBCASE("bounds as attributes (opset 6)") {
    check_activation(6, [](OnnxBuilder& b) {
      auto& clip = b.node("Clip", "act", {"h"}, {"a"});
      OnnxBuilder::float_attr(clip, "min", -0.3f);
      OnnxBuilder::float_attr(clip, "max", 0.35f);
    });
  }
}

TEST_CASE("gradients of HardSigmoid, and of hard swish as torch exports it (x · HardSigmoid(x)), match "
          "finite differences") {
  check_activation(13, [](OnnxBuilder& b) {
    auto& hs = b.node("HardSigmoid", "act", {"h"}, {"a"});
    OnnxBuilder::float_attr(hs, "alpha", 1.5f);
    OnnxBuilder::float_attr(hs, "beta", 0.45f);
  });
  check_activation(13, [](OnnxBuilder& b) {
    auto& hs = b.node("HardSigmoid", "gate", {"h"}, {"g"});
    OnnxBuilder::float_attr(hs, "alpha", 1.5f);
    OnnxBuilder::float_attr(hs, "beta", 0.45f);
    b.node("Mul", "act", {"h", "g"}, {"a"});
  });
}

TEST_CASE("gradients of HardSwish (opset 14, torch's export of Hardswish) match finite differences") {
  // Pre-activations of scale 5 reach both of its kinks, at ±3.
  check_activation(14, [](OnnxBuilder& b) {
    b.floats("scale", {}, {5.0f});
    b.node("Mul", "spread", {"h", "scale"}, {"h5"});
    b.node("HardSwish", "act", {"h5"}, {"a"});
  });
}

TEST_CASE("gradients of LeakyRelu, Elu, Selu and Celu match finite differences") {
  SUBCASE("LeakyRelu") {
    check_activation(13, [](OnnxBuilder& b) {
      OnnxBuilder::float_attr(b.node("LeakyRelu", "act", {"h"}, {"a"}), "alpha", 0.2f);
    });
  }
  SUBCASE("Elu") {
    check_activation(13, [](OnnxBuilder& b) {
      OnnxBuilder::float_attr(b.node("Elu", "act", {"h"}, {"a"}), "alpha", 0.7f);
    });
  }
  SUBCASE("Selu (ONNX's default alpha and gamma)") {
    check_activation(13, [](OnnxBuilder& b) { b.node("Selu", "act", {"h"}, {"a"}); });
  }
  SUBCASE("Celu") {
    check_activation(13, [](OnnxBuilder& b) {
      OnnxBuilder::float_attr(b.node("Celu", "act", {"h"}, {"a"}), "alpha", 0.8f);
    });
  }
}

TEST_CASE("gradients of Softplus and of Gelu in both forms match finite differences") {
  SUBCASE("Softplus") {
    check_activation(13, [](OnnxBuilder& b) { b.node("Softplus", "act", {"h"}, {"a"}); });
  }
  SUBCASE("Gelu") {
    check_activation(20, [](OnnxBuilder& b) { b.node("Gelu", "act", {"h"}, {"a"}); });
  }
  SUBCASE("Gelu, approximate tanh") {
    check_activation(20, [](OnnxBuilder& b) {
      OnnxBuilder::string_attr(b.node("Gelu", "act", {"h"}, {"a"}), "approximate", "tanh");
    });
  }
}

TEST_CASE("training through an op without a gradient is refused naming its type and node") {
  const std::string model = activation_model(13, [](OnnxBuilder& b) {
    b.node("Floor", "/block/Floor", {"h"}, {"f"});
    b.node("Mul", "/block/Mul", {"h", "f"}, {"a"});
  });
  const auto result = compiler::compile_model(model, onnx_training_options());
  REQUIRE(!result.ok());
  CHECK(result.status().code() == StatusCode::kUnsupported);
  CHECK(result.status().message() ==
        "training through 'Floor' node '/block/Floor' is not supported: its gradient is not implemented");
}

} // namespace
} // namespace ipu::testing
