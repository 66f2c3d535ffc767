// The optimizers' argument table (runtime/format/optimizer_arguments.h, and the compiler's view of
// it, passes/optimizer_arguments.h): its ranges, that default_optimizer and OptimizerConfig's
// initial values are its defaults, that Keras's defaults lie in the ranges, the help it writes,
// and that the spec parser and the flags both follow it.
#include <doctest/doctest.h>

#include <cstddef>
#include <limits>
#include <string>

#include "compiler/driver/compile.h"
#include "compiler/passes/optimizer_arguments.h"
#include "runtime/format/optimizer_arguments.h"
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

TEST_CASE("optimizer arguments: default_optimizer gives each optimizer the table's defaults") {
  for (OptimizerKind kind : kAllKinds) {
    const passes::OptimizerConfig defaults = passes::default_optimizer(kind);
    CHECK(defaults.kind == kind);
    for (const passes::OptimizerArgument& argument : passes::optimizer_arguments()) {
      CAPTURE(passes::optimizer_name(kind));
      CAPTURE(std::string(argument.key));
      const float expected = argument.spec->default_for(passes::optimizer_name(kind));
      if (argument.number) {
        CHECK(defaults.*argument.number == expected);
      } else {
        CHECK(defaults.*argument.toggle == (expected != 0));
      }
    }
  }
  CHECK(passes::default_optimizer(OptimizerKind::kAdamW).weight_decay == 0.004f);
  CHECK(passes::default_optimizer(OptimizerKind::kLamb).epsilon == 1e-6f);
  CHECK(passes::default_optimizer(OptimizerKind::kAdam).epsilon == 1e-7f);
  // A config made without default_optimizer (an ONNX model's SGD) holds SGD's defaults too.
  const passes::OptimizerConfig plain;
  const passes::OptimizerConfig sgd = passes::default_optimizer(OptimizerKind::kSgd);
  for (const passes::OptimizerArgument& argument : passes::optimizer_arguments()) {
    CAPTURE(std::string(argument.key));
    if (argument.number) CHECK(plain.*argument.number == sgd.*argument.number);
    if (argument.toggle) CHECK(plain.*argument.toggle == sgd.*argument.toggle);
  }
  CHECK(plain.learning_rate == sgd.learning_rate);
}

TEST_CASE("optimizer arguments: names and kinds map one to one, in the table's order") {
  for (size_t i = 0; i < format::kOptimizerNames.size(); ++i) {
    const std::string name(format::kOptimizerNames[i]);
    REQUIRE(passes::optimizer_kind(name).has_value());
    CHECK(static_cast<size_t>(*passes::optimizer_kind(name)) == i);
    CHECK(passes::optimizer_name(*passes::optimizer_kind(name)) == name);
  }
  CHECK_FALSE(passes::optimizer_kind("nadam").has_value());
  CHECK(format::optimizer_names_text() == "sgd, adam, adamw, rmsprop, adagrad, adamax or lamb");
}

TEST_CASE("optimizer arguments: each flag's help says who takes it, its range and defaults") {
  CHECK(format::optimizer_argument_spec("epsilon").help() ==
        "Epsilon added to the denominator (adam, adamw, adamax, lamb, rmsprop and adagrad; a positive "
        "number that float32 holds; default 1e-07, lamb 1e-06; overrides the spec)");
  CHECK(format::optimizer_argument_spec("momentum").help() ==
        "Momentum (sgd and rmsprop; in [0, 1); default 0; overrides the spec)");
  const format::OptimizerArgumentSpec& nesterov = format::optimizer_argument_spec("nesterov");
  CHECK(nesterov.help() == "Nesterov momentum (sgd; default off; overrides the spec)");
  CHECK(nesterov.negated_flag() == "--no-nesterov");
  CHECK(nesterov.negated_help() == "No Nesterov momentum (sgd)");
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
  options.optimizer_arguments.numbers["rho"] = 0.9f;
  auto refused = compiler::compile_model(spec_with_optimizer(R"({"type": "sgd"})"), options);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message() == "--rho applies to rmsprop, not adam");
  options.optimizer = OptimizerKind::kRmsProp;
  options.optimizer_arguments.numbers["rho"] = 1.5f;
  refused = compiler::compile_model(spec_with_optimizer(R"({"type": "sgd"})"), options);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message() == "--rho must be in [0, 1)");
  options.optimizer_arguments.numbers["rho"] = 0.5f;
  CHECK(compiler::compile_model(spec_with_optimizer(R"({"type": "sgd"})"), options).ok());
}

} // namespace
