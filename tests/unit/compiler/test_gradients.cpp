// Gradients of every differentiable op, checked against central finite differences of the loss:
// one SGD step with learning rate 1 and no momentum moves each weight by exactly -gradient.
#include <doctest/doctest.h>

#include <cmath>

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

void check_gradients(const std::string& spec) {
  const uint32_t batch = 3;
  auto options = small_target_options(batch);
  auto engine = compile_and_load(spec, options);
  std::vector<float> features(batch * 6);
  for (size_t i = 0; i < features.size(); ++i) features[i] = std::sin(0.7f * static_cast<float>(i) + 0.3f);
  const std::vector<int32_t> labels = {1, 3, 0};

  const std::vector<std::string> weights = {"hidden/kernel", "hidden/bias", "out/kernel", "out/bias"};
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

TEST_CASE("gradients of Dense + activations match finite differences") {
  SUBCASE("relu hidden, logits") { check_gradients(mlp_spec("relu", "none", true)); }
  SUBCASE("sigmoid hidden, logits") { check_gradients(mlp_spec("sigmoid", "none", true)); }
  SUBCASE("tanh hidden, softmax + probabilities") { check_gradients(mlp_spec("tanh", "softmax", false)); }
}

}  // namespace
}  // namespace ipu::testing
