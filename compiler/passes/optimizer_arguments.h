// The optimizers' arguments, each written once: its name in a spec (Keras's), its flag, the
// optimizers that take it, the values it may hold and the OptimizerConfig field it sets. The spec
// parser (frontend/graph_spec.cpp) and the compiler's checks and overrides of the flags
// (driver/options.cpp) read this table, so they agree on every argument. The learning rate (a
// number or a schedule) and global_clipnorm (null or 0 for none) have rules of their own.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "compiler/passes/training.h"

namespace ipu::passes {

// Closed or open bounds, finite float32 values only.
struct ArgumentRange {
  double low;
  bool low_open;
  double high; // infinity: no upper bound but float32's
  bool high_open;
  const char* text; // "in [0, 1)"; what "must be" is followed by
  bool contains(double value) const;
};

struct OptimizerArgument {
  std::string_view key;  // "beta_1"
  std::string_view flag; // "--beta1"
  std::vector<OptimizerKind> kinds;
  // A number (with its range) or a switch.
  float OptimizerConfig::*number = nullptr;
  ArgumentRange range{};
  bool OptimizerConfig::*toggle = nullptr;
  bool takes(OptimizerKind kind) const;
  // "sgd and rmsprop", for messages.
  std::string kinds_text() const;
};

// In the order the flags list them: momentum, dampening, nesterov, beta_1, beta_2, epsilon,
// weight_decay, rho, centered, initial_accumulator_value.
const std::vector<OptimizerArgument>& optimizer_arguments();

// The argument with this spec key; every key the table holds is one, any other is a bug.
const OptimizerArgument& optimizer_argument(std::string_view key);

} // namespace ipu::passes
