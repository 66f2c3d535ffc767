// What the host side of the runtime (runtime/session) relies on in an executable, beyond the
// device structure: the names of the programs it runs and of the streams it feeds and drains,
// the limits of the sizes it allocates from, and the dtypes it converts model inputs and outputs
// to. The compiler writes these names and stays within these limits; verify_executable proves
// both for every file it accepts (docs/executable_format.md, "What the verifier guarantees").
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace ipu::format {

// Programs.
inline constexpr std::string_view kWeightsFromHostProgram = "weights_from_host";
inline constexpr std::string_view kWeightsToHostProgram = "weights_to_host";
inline constexpr std::string_view kTrainProgram = "train";
inline constexpr std::string_view kEvaluateProgram = "evaluate";
inline constexpr std::string_view kPredictProgram = "predict";
// The programs that run steps_per_execution steps per run (the others move the weights).
inline bool runs_steps(std::string_view program) {
  return program == kTrainProgram || program == kEvaluateProgram || program == kPredictProgram;
}

// Streams. A model's first input is fed through `features`; further inputs through
// "features:<i>", outputs through `predictions` and "predictions:<i>" (ModelIo names them).
inline constexpr std::string_view kFeaturesStream = "features";
inline constexpr std::string_view kLabelsStream = "labels";
inline constexpr std::string_view kLossStream = "loss";
inline constexpr std::string_view kCorrectStream = "correct";
// The other metrics: "metric:<name>" (name as History shows it: "mse", "mae",
// "sparse_top_k_categorical_accuracy"), each the sum over a step's rows.
inline constexpr std::string_view kMetricStreamPrefix = "metric:";
inline constexpr std::string_view kPredictionsStream = "predictions";
// Dynamic loss scaling (docs/training.md, "Loss scaling"): once per weight update, float32 [2],
// the scale that update's gradients were unscaled by and 1 when it was skipped (a non-finite
// gradient), else 0.
inline constexpr std::string_view kLossScaleStream = "loss_scale";
// Its state, an optimizer-state tensor per pipeline stage ("<kLossScaleStateTensor>@<s>" on
// stage s > 0): float32 {scale, finite updates since the scale last changed}.
inline constexpr std::string_view kLossScaleStateTensor = "optimizer/loss_scale";
// Weights and optimizer state travel as "to_device:<tensor>" and "to_host:<tensor>".
inline constexpr std::string_view kToDeviceStreamPrefix = "to_device:";
inline constexpr std::string_view kToHostStreamPrefix = "to_host:";

// The optimizer's hyper-parameters are run-time values, not program constants (as Graphcore's
// optimizer tensors are): every update vertex reads them from a tensor of kHyperParameterCount
// float32 values, one slot per hyper-parameter below, which the host writes through the stream
// kHyperParametersStream once per weight update (an execution of S steps and K micro-batches per
// update moves S / K rows). That tensor is named kHyperParametersTensor on the first pipeline
// stage's IPU; each further stage s reads a copy, "<kHyperParametersTensor>@<s>", copied from it
// after every transfer. The executable's `hyper_parameters` names the slots its optimizer reads
// (what the host may set); every tensor's initial value holds the compiled values, the defaults.
// A new hyper-parameter is a slot appended here (and a format version): kernels read
// hyper[HyperParameter::kName], the compiler writes the defaults by the same names.
struct HyperParameter {
  enum Index : uint32_t {
    kLearningRate,
    kMomentum,
    kDampening,
    kWeightDecay,
    kBeta1,
    kBeta2,
    kEpsilon,
    kRho,
    // The static loss scale (docs/training.md, "Loss scaling"): the loss gradient is multiplied by
    // it and every gradient divided by it before the update. Read only under static scaling.
    kLossScale,
    kCount
  };
};
inline constexpr uint32_t kHyperParameterCount = HyperParameter::kCount;
// The slots' names, as the executable's `hyper_parameters`, the JSON spec and docs/training.md
// spell them.
inline constexpr std::array<std::string_view, kHyperParameterCount> kHyperParameterNames = {
    "learning_rate", "momentum", "dampening", "weight_decay", "beta_1",
    "beta_2",        "epsilon",  "rho",       "loss_scale"};
inline constexpr std::string_view kHyperParametersStream = "optimizer/hyper_parameters";
inline constexpr std::string_view kHyperParametersTensor = "optimizer/hyper_parameters";

// Limits: the ranges `ipucc compile` accepts, so every executable it writes is within them.
inline constexpr uint32_t kMaxBatchSize = uint32_t{1} << 20;
inline constexpr uint32_t kMaxStepsPerExecution = uint32_t{1} << 24;
inline constexpr uint32_t kMaxGradientAccumulation = uint32_t{1} << 16;
inline constexpr uint64_t kMaxBytesPerTile = uint64_t{1} << 32;
// float32 holds every integer of magnitude up to 2^24 exactly, and the device holds every value
// as a float: integer model inputs, integer constants and counters stay within it.
inline constexpr int64_t kExactFloatIntegers = int64_t{1} << 24;
// Dynamic loss scaling's growth steps: its counter is a float32.
inline constexpr int64_t kMaxLossScaleGrowthSteps = kExactFloatIntegers;

// A compute set runs once per step of a program, twice where a pipeline stage recomputes its
// forward pass before the backward one.
inline constexpr uint64_t kMaxExecutionsPerStep = 2;

// The numpy dtypes ModelIo names: what the host converts a model's inputs from and its
// outputs to (the device holds every value as a float). "f2" is a FLOAT16 tensor's.
inline bool is_model_io_dtype(std::string_view dtype) {
  for (std::string_view known : {"f4", "f2", "b1", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8"}) {
    if (dtype == known) return true;
  }
  return false;
}

} // namespace ipu::format
