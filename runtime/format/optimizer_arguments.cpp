#include "runtime/format/optimizer_arguments.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace ipu::format {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
constexpr ArgumentRange kFraction{0, false, 1, true, "in [0, 1)"};
constexpr ArgumentRange kPositive{0, true, kInfinity, true, "a positive number that float32 holds"};
constexpr ArgumentRange kNonNegative{0, false, kInfinity, true, "a non-negative number that float32 holds"};

// The shortest text that reads back as `value` ("0.9", "1e-07").
std::string float_text(float value) {
  std::array<char, 32> text{};
  const auto written = std::to_chars(text.data(), text.data() + text.size(), value);
  return {text.data(), written.ptr};
}

} // namespace

std::string optimizer_names_text() {
  std::string text;
  for (size_t i = 0; i < kOptimizerNames.size(); ++i) {
    text += (i == 0 ? "" : i + 1 == kOptimizerNames.size() ? " or " : ", ");
    text += kOptimizerNames[i];
  }
  return text;
}

bool ArgumentRange::contains(double value) const {
  const auto as_float = static_cast<float>(value);
  return std::isfinite(as_float) && (low_open ? value > low : value >= low) &&
         (high_open ? value < high : value <= high);
}

bool OptimizerArgumentSpec::takes(std::string_view optimizer) const {
  return std::find(optimizers.begin(), optimizers.end(), optimizer) != optimizers.end();
}

float OptimizerArgumentSpec::default_for(std::string_view optimizer) const {
  for (const OptimizerDefault& other : other_defaults) {
    if (other.optimizer == optimizer) return other.value;
  }
  return default_value;
}

std::string OptimizerArgumentSpec::optimizers_text() const {
  std::string text;
  for (size_t i = 0; i < optimizers.size(); ++i) {
    text += (i == 0 ? "" : i + 1 == optimizers.size() ? " and " : ", ");
    text += optimizers[i];
  }
  return text;
}

std::string OptimizerArgumentSpec::help() const {
  std::string text = std::string(what) + " (" + optimizers_text() + "; ";
  if (is_switch) {
    text += default_value != 0 ? "default on" : "default off";
  } else {
    text += std::string(range.text) + "; default " + float_text(default_value);
    for (const OptimizerDefault& other : other_defaults)
      text += ", " + std::string(other.optimizer) + " " + float_text(other.value);
  }
  return text + "; overrides the spec)";
}

std::string OptimizerArgumentSpec::negated_flag() const {
  return "--no-" + std::string(flag.substr(2));
}

std::string OptimizerArgumentSpec::negated_help() const {
  return std::string(negated_what) + " (" + optimizers_text() + ")";
}

// Which optimizer takes which argument, the ranges and the defaults are Keras's
// (tf.keras.optimizers; AdaMax and LAMB as Adam's family); momentum and dampening as
// torch.optim.SGD.
const std::vector<OptimizerArgumentSpec>& optimizer_argument_specs() {
  static const std::vector<OptimizerArgumentSpec> arguments = [] {
    const std::vector<std::string_view> adam_family = {"adam", "adamw", "adamax", "lamb"};
    const std::vector<std::string_view> all_but_sgd = {"adam", "adamw",   "adamax",
                                                       "lamb", "rmsprop", "adagrad"};
    const std::vector<std::string_view> all = {"sgd",  "adam",    "adamw",  "adamax",
                                               "lamb", "rmsprop", "adagrad"};
    std::vector<OptimizerArgumentSpec> table;
    const auto number = [&](std::string_view key, std::string_view flag,
                            std::vector<std::string_view> optimizers, std::string_view what,
                            ArgumentRange range, float default_value,
                            std::vector<OptimizerDefault> other_defaults = {}) {
      table.push_back({key,
                       flag,
                       std::move(optimizers),
                       what,
                       false,
                       {},
                       range,
                       default_value,
                       std::move(other_defaults)});
    };
    const auto toggle = [&](std::string_view key, std::string_view flag,
                            std::vector<std::string_view> optimizers, std::string_view what,
                            std::string_view negated_what) {
      table.push_back({key, flag, std::move(optimizers), what, true, negated_what, {}, 0, {}});
    };
    number("momentum", "--momentum", {"sgd", "rmsprop"}, "Momentum", kFraction, 0);
    number("dampening", "--dampening", {"sgd"}, "Dampening of the momentum",
           {0, false, 1, false, "in [0, 1]"}, 0);
    toggle("nesterov", "--nesterov", {"sgd"}, "Nesterov momentum", "No Nesterov momentum");
    number("beta_1", "--beta1", adam_family, "Moving-mean decay of the gradient, beta_1", kFraction, 0.9f);
    number("beta_2", "--beta2", adam_family, "Moving-mean decay of the squared gradient, beta_2", kFraction,
           0.999f);
    number("epsilon", "--epsilon", all_but_sgd, "Epsilon added to the denominator", kPositive, 1e-7f,
           {{"lamb", 1e-6f}});
    number("weight_decay", "--weight-decay", all,
           "Weight decay: L2 added to the gradient, decoupled for adamw", kNonNegative, 0,
           {{"adamw", 0.004f}});
    number("rho", "--rho", {"rmsprop"}, "Discount of the square average", kFraction, 0.9f);
    toggle("centered", "--centered", {"rmsprop"}, "Normalise by the gradient's variance, not its mean square",
           "Normalise by the gradient's mean square");
    number("initial_accumulator_value", "--initial-accumulator-value", {"adagrad"},
           "Starting sum of squared gradients", kNonNegative, 0.1f);
    return table;
  }();
  return arguments;
}

const OptimizerArgumentSpec& optimizer_argument_spec(std::string_view key) {
  const std::vector<OptimizerArgumentSpec>& arguments = optimizer_argument_specs();
  const auto it = std::find_if(arguments.begin(), arguments.end(),
                               [&](const OptimizerArgumentSpec& argument) { return argument.key == key; });
  if (it == arguments.end()) std::abort(); // a caller's typo, not an input's
  return *it;
}

} // namespace ipu::format
