#include "compiler/passes/optimizer_arguments.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace ipu::passes {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
constexpr ArgumentRange kFraction{0, false, 1, true, "in [0, 1)"};
constexpr ArgumentRange kPositive{0, true, kInfinity, true, "a positive number that float32 holds"};
constexpr ArgumentRange kNonNegative{0, false, kInfinity, true, "a non-negative number that float32 holds"};

} // namespace

bool ArgumentRange::contains(double value) const {
  const auto as_float = static_cast<float>(value);
  return std::isfinite(as_float) && (low_open ? value > low : value >= low) &&
         (high_open ? value < high : value <= high);
}

bool OptimizerArgument::takes(OptimizerKind kind) const {
  return std::find(kinds.begin(), kinds.end(), kind) != kinds.end();
}

std::string OptimizerArgument::kinds_text() const {
  std::string text;
  for (size_t i = 0; i < kinds.size(); ++i) {
    text += (i == 0 ? "" : i + 1 == kinds.size() ? " and " : ", ");
    text += optimizer_name(kinds[i]);
  }
  return text;
}

// Which optimizer takes which argument, and the ranges, are Keras's (tf.keras.optimizers; AdaMax
// and LAMB as Adam's family); momentum and dampening as torch.optim.SGD.
const std::vector<OptimizerArgument>& optimizer_arguments() {
  using K = OptimizerKind;
  using C = OptimizerConfig;
  static const std::vector<OptimizerArgument> arguments = [] {
    const std::vector<K> adam_family = {K::kAdam, K::kAdamW, K::kAdaMax, K::kLamb};
    const std::vector<K> all_but_sgd = {K::kAdam, K::kAdamW, K::kAdaMax, K::kLamb, K::kRmsProp, K::kAdagrad};
    const std::vector<K> all = {K::kSgd, K::kAdam, K::kAdamW, K::kAdaMax, K::kLamb, K::kRmsProp, K::kAdagrad};
    return std::vector<OptimizerArgument>{
        {"momentum", "--momentum", {K::kSgd, K::kRmsProp}, &C::momentum, kFraction},
        {"dampening", "--dampening", {K::kSgd}, &C::dampening, {0, false, 1, false, "in [0, 1]"}},
        {"nesterov", "--nesterov", {K::kSgd}, nullptr, {}, &C::nesterov},
        {"beta_1", "--beta1", adam_family, &C::beta_1, kFraction},
        {"beta_2", "--beta2", adam_family, &C::beta_2, kFraction},
        {"epsilon", "--epsilon", all_but_sgd, &C::epsilon, kPositive},
        {"weight_decay", "--weight-decay", all, &C::weight_decay, kNonNegative},
        {"rho", "--rho", {K::kRmsProp}, &C::rho, kFraction},
        {"centered", "--centered", {K::kRmsProp}, nullptr, {}, &C::centered},
        {"initial_accumulator_value",
         "--initial-accumulator-value",
         {K::kAdagrad},
         &C::initial_accumulator_value,
         kNonNegative},
    };
  }();
  return arguments;
}

const OptimizerArgument& optimizer_argument(std::string_view key) {
  const std::vector<OptimizerArgument>& arguments = optimizer_arguments();
  const auto it = std::find_if(arguments.begin(), arguments.end(),
                               [&](const OptimizerArgument& argument) { return argument.key == key; });
  if (it == arguments.end()) std::abort(); // a caller's typo, not an input's
  return *it;
}

} // namespace ipu::passes
