// The optimizer's run-time hyper-parameters in an executable (runtime/format/host_contract.h has
// the slots and names): the compiled defaults, replacing them, and learning-rate schedules, the
// one definition both the compiler (which stores a schedule) and the host (which evaluates it
// before every update) use. docs/training.md, "Hyper-parameters at run time", describes them.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/format/executable.pb.h"
#include "runtime/format/host_contract.h"

namespace ipu::format {

using HyperParameterValues = std::array<float, kHyperParameterCount>;

// The slot named `name` ("learning_rate"), or nullopt.
std::optional<uint32_t> hyper_parameter_slot(std::string_view name);

// The compiled defaults: the initial value of the tensor named kHyperParametersTensor (role
// HYPER_PARAMETERS); nullopt when the executable has none (inference) or it is malformed
// (verify_host_contract refuses such executables).
std::optional<HyperParameterValues> hyper_parameter_defaults(const Executable& executable);

// Gives every HYPER_PARAMETERS tensor the initial value `values`: a cached executable compiled
// with other hyper-parameters serves this compile (they are not part of the cache key).
void set_hyper_parameter_defaults(Executable& executable, const HyperParameterValues& values);

// A learning-rate schedule with Keras's semantics (keras.optimizers.schedules), evaluated per
// optimizer step (Keras's optimizer.iterations: 0 at the first update) or, with per_epoch, per
// epoch (0 for the first, as Keras's LearningRateScheduler callback counts).
struct LearningRateSchedule {
  enum class Kind { kConstant, kExponential, kPiecewise, kCosine, kPolynomial };
  Kind kind = Kind::kConstant;
  // Every kind but piecewise; unset: the optimizer's learning rate (the executable's default or
  // the one given at run time).
  std::optional<double> initial_learning_rate;
  double decay_steps = 1;              // exponential, cosine, polynomial
  double decay_rate = 1;               // exponential
  bool staircase = false;              // exponential: step decay
  std::vector<double> boundaries;      // piecewise
  std::vector<double> values;          // piecewise: one more than boundaries
  double alpha = 0;                    // cosine: the final fraction of the rate decayed from
  std::optional<double> warmup_target; // cosine: linear warm-up from initial to this
  double warmup_steps = 0;             // cosine
  double end_learning_rate = 0.0001;   // polynomial
  double power = 1;                    // polynomial
  bool cycle = false;                  // polynomial
  bool per_epoch = false;              // evaluated per epoch instead of per update
};

// The rate at `step` (updates done, or epochs done with per_epoch), in double, as Keras computes
// it; `base` stands for an unset initial_learning_rate.
double learning_rate_at(const LearningRateSchedule& schedule, int64_t step, double base);

// The text form, as --lr-schedule takes it and the executable stores it: KIND[:KEY=VALUE,...],
// KIND one of constant, exponential, piecewise, cosine, polynomial; lists separated by '/'
// ("piecewise:boundaries=100/200,values=0.1/0.01/0.001"). InvalidArgument names the text and
// what is wrong with it (an unknown key, a missing one, a value out of range).
StatusOr<LearningRateSchedule> parse_learning_rate_schedule(std::string_view text);
// The text parse_learning_rate_schedule reads back to `schedule` (round-trips exactly).
std::string learning_rate_schedule_text(const LearningRateSchedule& schedule);

} // namespace ipu::format
