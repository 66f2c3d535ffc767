// The optimizers' arguments as the compiler applies them: format::optimizer_argument_specs (the
// one table of keys, flags, the optimizers that take each, ranges and defaults), each with the
// OptimizerConfig field it sets. The spec parser (frontend/graph_spec_training.cpp), the
// compiler's checks and overrides of the flags (driver/options.cpp) and default_optimizer read
// it, so they agree on every argument.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "compiler/passes/training.h"
#include "runtime/format/optimizer_arguments.h"

namespace ipu::passes {

using format::ArgumentRange;

struct OptimizerArgument {
  const format::OptimizerArgumentSpec* spec = nullptr;
  std::string_view key;  // "beta_1"
  std::string_view flag; // "--beta1"
  std::vector<OptimizerKind> kinds;
  // A number (with its range) or a switch.
  float OptimizerConfig::*number = nullptr;
  ArgumentRange range{};
  bool OptimizerConfig::*toggle = nullptr;
  bool takes(OptimizerKind kind) const;
  // "sgd and rmsprop", for messages.
  std::string kinds_text() const { return spec->optimizers_text(); }
};

// In format::optimizer_argument_specs' order.
const std::vector<OptimizerArgument>& optimizer_arguments();

// The argument with this key; every key the table holds is one, any other is a bug.
const OptimizerArgument& optimizer_argument(std::string_view key);

} // namespace ipu::passes
