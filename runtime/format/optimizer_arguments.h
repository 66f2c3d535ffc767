// The optimizers and their arguments as users give them, written once: the JSON spec's keys
// (Keras's; dampening is torch's), ipucc's and ipurun's flags, which optimizers take each, the
// values it may hold and its defaults. The spec parser and the compiler read it through
// compiler/passes/optimizer_arguments.h, which adds the OptimizerConfig field each one sets; the
// flags of both tools (cli/compile_flags.cpp) and ipurun's run-time hyper-parameters
// (cli/hyper_parameter_flags.cpp) read it here, since the runtime-only ipurun has no compiler.
// The learning rate (a number or a schedule) and global_clipnorm (null or 0 for none) have rules
// of their own and are not in it.
#pragma once

#include <array>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ipu::format {

// Keras's names, in the order --optimizer lists them.
inline constexpr std::array<std::string_view, 7> kOptimizerNames = {"sgd",     "adam",   "adamw", "rmsprop",
                                                                    "adagrad", "adamax", "lamb"};

// "sgd, adam, adamw, rmsprop, adagrad, adamax or lamb", for help and messages.
std::string optimizer_names_text();

// Closed or open bounds, finite float32 values only.
struct ArgumentRange {
  double low = 0;
  bool low_open = false;
  double high = 0; // infinity: no upper bound but float32's
  bool high_open = false;
  const char* text = ""; // "in [0, 1)"; what "must be" is followed by
  bool contains(double value) const;
};

// An optimizer's default where it differs from the argument's.
struct OptimizerDefault {
  std::string_view optimizer;
  float value;
};

struct OptimizerArgumentSpec {
  std::string_view key;  // "beta_1"
  std::string_view flag; // "--beta1"; a switch also has "--no-" + its name
  std::vector<std::string_view> optimizers;
  std::string_view what; // "Decay of the gradient's moving mean", for the flag's help
  bool is_switch = false;
  std::string_view negated_what;                // a switch's --no- flag: "No Nesterov momentum"
  ArgumentRange range{};                        // a number's
  float default_value = 0;                      // a number's, or a switch's (0: off)
  std::vector<OptimizerDefault> other_defaults; // {"adamw", 0.004}

  bool takes(std::string_view optimizer) const;
  float default_for(std::string_view optimizer) const;
  // "sgd and rmsprop", for messages.
  std::string optimizers_text() const;
  // The flag's help: what it is, who takes it, its range and defaults.
  std::string help() const;
  // A switch's --no- flag and its help.
  std::string negated_flag() const;
  std::string negated_help() const;
};

// In the order the flags list them: momentum, dampening, nesterov, beta_1, beta_2, epsilon,
// weight_decay, rho, centered, initial_accumulator_value.
const std::vector<OptimizerArgumentSpec>& optimizer_argument_specs();

// The argument with this key; every key the table holds is one, any other is a bug.
const OptimizerArgumentSpec& optimizer_argument_spec(std::string_view key);

// Arguments given by flags, by key, not yet checked against the optimizer: what ipucc's and
// ipurun's flags collect and the compiler's options carry.
struct GivenOptimizerArguments {
  std::map<std::string, float, std::less<>> numbers;
  std::map<std::string, bool, std::less<>> switches;
  bool empty() const { return numbers.empty() && switches.empty(); }
};

} // namespace ipu::format
