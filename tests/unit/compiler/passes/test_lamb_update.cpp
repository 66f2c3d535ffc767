// LAMB's update (compiler/passes/lamb_update.h) reads its hyper-parameters from the stage's
// streamed tensor as every optimizer does: the executable names the slots the host may set and
// holds the compiled values as their defaults, and no LAMB vertex carries a value of its own.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "compiler/driver/compile.h"
#include "runtime/format/hyper_parameters.h"
#include "tests/unit/compiler/test_support.h"

namespace {

using namespace ipu;
using H = format::HyperParameter;

const char* const kLambSpec = R"({"type": "sequential", "input": {"shape": [6]},
    "layers": [{"name": "hidden", "type": "Dense", "units": 8, "activation": "relu"},
               {"name": "out", "type": "Dense", "units": 4}],
    "loss": {"type": "sparse_categorical_crossentropy", "from_logits": true},
    "optimizer": {"type": "lamb", "learning_rate": 0.003, "beta_1": 0.8, "beta_2": 0.99,
                  "epsilon": 1e-5, "weight_decay": 0.01}})";

TEST_CASE("passes::add_lamb_update: LAMB reads learning rate, betas, epsilon and weight decay from the "
          "streamed hyper-parameters") {
  compiler::CompileOptions options = testing::small_target_options(2);
  options.gradient_accumulation = 2;
  options.steps_per_execution = 2;
  auto compiled = compiler::compile_model(kLambSpec, options);
  INFO(compiled.status().message());
  REQUIRE(compiled.ok());
  const format::Executable& exe = compiled->executable;

  const std::vector<std::string> read(exe.hyper_parameters().begin(), exe.hyper_parameters().end());
  CHECK(read == std::vector<std::string>{"learning_rate", "beta_1", "beta_2", "epsilon", "weight_decay"});
  const auto defaults = format::hyper_parameter_defaults(exe);
  REQUIRE(defaults.has_value());
  CHECK((*defaults)[H::kLearningRate] == 0.003f);
  CHECK((*defaults)[H::kBeta1] == 0.8f);
  CHECK((*defaults)[H::kBeta2] == 0.99f);
  CHECK((*defaults)[H::kEpsilon] == 1e-5f);
  CHECK((*defaults)[H::kWeightDecay] == 0.01f);
  CHECK((*defaults)[H::kMomentum] == 0.0f);

  int moments = 0, applies = 0;
  for (const auto& set : exe.compute_sets()) {
    for (const auto& v : set.vertices()) {
      const auto codelet = static_cast<format::Codelet>(v.codelet());
      if (codelet != format::Codelet::kLambMoments && codelet != format::Codelet::kLambApply) continue;
      CAPTURE(set.name());
      REQUIRE(v.operands_size() > 0);
      CHECK(exe.tensors(static_cast<int>(v.operands(v.operands_size() - 1))).name() ==
            format::kHyperParametersTensor);
      if (codelet == format::Codelet::kLambMoments) {
        ++moments;
        // The gradient scale alone (1 / micro-batches): the program's structure, not a value.
        REQUIRE(v.fparams_size() == format::fparams::LambMoments::kCount);
        CHECK(v.fparams(format::fparams::LambMoments::kGradientScale) == 0.5f);
      } else {
        ++applies;
        CHECK(v.fparams_size() == 0);
      }
    }
  }
  CHECK(moments >= 4); // two weights and two biases
  CHECK(applies >= 4);
}

} // namespace
