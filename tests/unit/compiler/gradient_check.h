// Gradients checked against central finite differences of the loss: one SGD step with learning
// rate 1 and no momentum moves each weight by exactly -gradient (test_gradients.cpp,
// test_activation_gradients.cpp).
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "tests/unit/compiler/test_support.h"

namespace ipu::testing {

// `model` has `features_per_sample` input features per sample; `weights` names every trainable
// tensor; `labels` are what its loss takes for a batch of 3.
template <typename Label>
void check_gradients_with(const std::string& model, const compiler::CompileOptions& options,
                          const std::vector<std::string>& weights, const std::vector<Label>& labels,
                          size_t features_per_sample) {
  const uint32_t batch = options.batch_size;
  auto engine = compile_and_load(model, options);
  std::vector<float> features(batch * features_per_sample);
  for (size_t i = 0; i < features.size(); ++i)
    features[i] = std::sin(0.7f * static_cast<float>(i) + 0.3f);

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

// `model` has `features_per_sample` input features per sample (6 unless given) and 4 classes.
inline void check_gradients(const std::string& model, const compiler::CompileOptions& options,
                            const std::vector<std::string>& weights, size_t features_per_sample = 6) {
  check_gradients_with(model, options, weights, std::vector<int32_t>{1, 3, 0}, features_per_sample);
}

// An ONNX model trained on sparse categorical cross-entropy at batch 3, learning rate 1.
inline compiler::CompileOptions onnx_training_options() {
  auto options = small_target_options(3);
  options.model_path = "test.onnx";
  options.loss = passes::LossKind::kSparseCategoricalCrossEntropy;
  options.learning_rate = 1.0f;
  return options;
}

} // namespace ipu::testing
