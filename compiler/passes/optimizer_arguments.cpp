#include "compiler/passes/optimizer_arguments.h"

#include <algorithm>
#include <cstdlib>
#include <map>

namespace ipu::passes {

bool OptimizerArgument::takes(OptimizerKind kind) const {
  return std::find(kinds.begin(), kinds.end(), kind) != kinds.end();
}

const std::vector<OptimizerArgument>& optimizer_arguments() {
  using C = OptimizerConfig;
  static const std::vector<OptimizerArgument> arguments = [] {
    // The field each argument of the format's table sets, by its key.
    const std::map<std::string_view, float C::*> numbers = {
        {"momentum", &C::momentum}, {"dampening", &C::dampening},
        {"beta_1", &C::beta_1},     {"beta_2", &C::beta_2},
        {"epsilon", &C::epsilon},   {"weight_decay", &C::weight_decay},
        {"rho", &C::rho},           {"initial_accumulator_value", &C::initial_accumulator_value}};
    const std::map<std::string_view, bool C::*> toggles = {{"nesterov", &C::nesterov},
                                                           {"centered", &C::centered}};
    std::vector<OptimizerArgument> table;
    for (const format::OptimizerArgumentSpec& spec : format::optimizer_argument_specs()) {
      OptimizerArgument argument{&spec, spec.key, spec.flag, {}, nullptr, spec.range, nullptr};
      for (std::string_view name : spec.optimizers)
        argument.kinds.push_back(*optimizer_kind(std::string(name)));
      if (spec.is_switch) {
        argument.toggle = toggles.at(spec.key);
      } else {
        argument.number = numbers.at(spec.key);
      }
      table.push_back(std::move(argument));
    }
    return table;
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
