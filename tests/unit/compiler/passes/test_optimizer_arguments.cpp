// The optimizers' argument table (passes/optimizer_arguments.h): its ranges, that Keras's defaults
// lie in them, and that the spec parser and the flags both follow it.
#include <doctest/doctest.h>

#include <limits>
#include <string>

#include "compiler/driver/compile.h"
#include "compiler/passes/optimizer_arguments.h"
#include "tests/unit/compiler/test_support.h"

namespace {

using namespace ipu;
using passes::OptimizerKind;
using testing::small_target_options;

constexpr OptimizerKind kAllKinds[] = {OptimizerKind::kSgd,    OptimizerKind::kAdam, OptimizerKind::kAdamW,
                                       OptimizerKind::kAdaMax, OptimizerKind::kLamb, OptimizerKind::kRmsProp,
                                       OptimizerKind::kAdagrad};

std::string spec_with_optimizer(const std::string& optimizer) {
  return R"({"name": "m", "type": "sequential", "input": {"name": "x", "shape": [4], "dtype": "float32"},
    "layers": [{"name": "d", "type": "Dense", "units": 3, "activation": "softmax"}],
    "loss": {"type": "sparse_categorical_crossentropy", "from_logits": false},
    "optimizer": )" +
         optimizer + "}";
}

TEST_CASE("optimizer arguments: ranges hold finite float32 values within their bounds") {
  const passes::ArgumentRange& fraction = passes::optimizer_argument("beta_1").range;
  CHECK(fraction.contains(0.0));
  CHECK(fraction.contains(0.999));
  CHECK_FALSE(fraction.contains(1.0));
  CHECK_FALSE(fraction.contains(-0.1));
  const passes::ArgumentRange& positive = passes::optimizer_argument("epsilon").range;
  CHECK_FALSE(positive.contains(0.0));
  CHECK(positive.contains(1e-7));
  CHECK_FALSE(positive.contains(1e39)); // beyond float32
  CHECK_FALSE(positive.contains(std::numeric_limits<double>::quiet_NaN()));
  CHECK(passes::optimizer_argument("dampening").range.contains(1.0)); // closed above
}

TEST_CASE("optimizer arguments: every optimizer's Keras defaults lie in their ranges") {
  for (OptimizerKind kind : kAllKinds) {
    const passes::OptimizerConfig defaults = passes::default_optimizer(kind);
    for (const passes::OptimizerArgument& argument : passes::optimizer_arguments()) {
      if (!argument.number || !argument.takes(kind)) continue;
      CAPTURE(passes::optimizer_name(kind));
      CAPTURE(std::string(argument.key));
      CHECK(argument.range.contains(defaults.*argument.number));
    }
  }
}

TEST_CASE("optimizer arguments: messages list the optimizers that take one") {
  CHECK(passes::optimizer_argument("momentum").kinds_text() == "sgd and rmsprop");
  CHECK(passes::optimizer_argument("beta_1").kinds_text() == "adam, adamw, adamax and lamb");
  CHECK(passes::optimizer_argument("rho").kinds_text() == "rmsprop");
}

// The spec parser and the flags read one table: an argument one optimizer takes is refused with
// another both in a spec and as a flag, and a value out of range both ways.
TEST_CASE("optimizer arguments: the spec and the flags agree on who takes what") {
  const auto spec_error = [](const std::string& optimizer) {
    auto compiled = compiler::compile_model(spec_with_optimizer(optimizer), small_target_options(4));
    REQUIRE_FALSE(compiled.ok());
    return compiled.status().message();
  };
  CHECK(spec_error(R"({"type": "adam", "rho": 0.9})").find("unknown argument 'rho' for adam") !=
        std::string::npos);
  CHECK(spec_error(R"({"type": "rmsprop", "rho": 1.5})").find("'rho' must be in [0, 1)") !=
        std::string::npos);

  compiler::CompileOptions options = small_target_options(4);
  options.optimizer = OptimizerKind::kAdam;
  options.rho = 0.9f;
  auto refused = compiler::compile_model(spec_with_optimizer(R"({"type": "sgd"})"), options);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message() == "--rho applies to rmsprop, not adam");
  options.optimizer = OptimizerKind::kRmsProp;
  options.rho = 1.5f;
  refused = compiler::compile_model(spec_with_optimizer(R"({"type": "sgd"})"), options);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message() == "--rho must be in [0, 1)");
  options.rho = 0.5f;
  CHECK(compiler::compile_model(spec_with_optimizer(R"({"type": "sgd"})"), options).ok());
}

} // namespace
