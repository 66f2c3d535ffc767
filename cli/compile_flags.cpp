#include "cli/compile_flags.h"

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli/cache_size.h"
#include "runtime/format/host_contract.h"
#include "runtime/format/optimizer_arguments.h"

namespace ipu::cli {
namespace {

// The options added so far, each in the help section current when it was added (followed by the
// qualifier).
struct AddedFlags {
  const std::string& qualifier;
  std::string section;
  std::vector<const CLI::Option*> options;

  void keep(CLI::Option* option) {
    option->group(section + qualifier);
    options.push_back(option);
  }
};

// A float32 within `range`, as the compiler checks the spec's values (format::ArgumentRange).
CLI::Validator float32_in(const format::ArgumentRange& range) {
  return CLI::Validator(
      [range](std::string& value) -> std::string {
        char* end = nullptr;
        const float number = std::strtof(value.c_str(), &end);
        if (end == value.c_str() || *end != '\0' || !range.contains(number))
          return "must be " + std::string(range.text) + ", got " + value;
        return "";
      },
      ""); // the help says the range
}

// The device computes in float32: a rate that rounds to 0 or to infinity there is refused, not
// trained with (1e-46 was read as 0, and the spec's rate silently used instead).
CLI::Validator positive_float32() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        char* end = nullptr;
        const float rate = std::strtof(value.c_str(), &end);
        if (end == value.c_str() || *end != '\0' || !(rate > 0.0f) || !std::isfinite(rate)) {
          return "must be a positive number that float32 holds (from 1.4e-45 to 3.4e38), got " + value;
        }
        return "";
      },
      "POSITIVE FLOAT32");
}

void add_target_and_batch_flags(CLI::App* cmd, CompileFlags& f, AddedFlags& added) {
  added.section = "Target";
  added.keep(cmd->add_option("--arch", f.arch, "Target IPU: mk2 (GC200) or mk1 (GC2)")
                 ->capture_default_str()
                 ->check(CLI::IsMember({"mk2", "mk1"})));
  added.keep(cmd->add_option("--tiles-per-ipu", f.tiles_per_ipu, "Override the tiles per IPU")
                 ->check(CLI::Range(1, 65536)));
  added.keep(cmd->add_option("--bytes-per-tile", f.bytes_per_tile, "Override the memory per tile")
                 ->check(CLI::Range(uint64_t{1024}, format::kMaxBytesPerTile)));
  added.section = "Batch and steps";
  added.keep(cmd->add_option("--batch-size", f.batch_size, "Micro-batch size")
                 ->capture_default_str()
                 ->check(CLI::Range(uint32_t{1}, format::kMaxBatchSize)));
  added.keep(
      cmd->add_option("--steps-per-execution", f.steps_per_execution,
                      "Micro-batch steps per on-device loop, a multiple of --gradient-accumulation (default: "
                      "--gradient-accumulation, one weight update)")
          ->check(CLI::Range(uint32_t{1}, format::kMaxStepsPerExecution)));
  added.keep(
      cmd->add_option(
             "--gradient-accumulation", f.gradient_accumulation,
             "Micro-batches whose gradients are averaged into one weight update (default: training a "
             "pipelined model under the grouped or interleaved schedule, its stage count, the fewest that "
             "fill the pipeline; else 1)")
          ->check(CLI::Range(uint32_t{1}, format::kMaxGradientAccumulation)));
  added.keep(
      cmd->add_option("--replicas", f.replicas, "Data-parallel replicas (mean all-reduce of gradients)")
          ->capture_default_str()
          ->check(CLI::Range(1, 64)));
  added.section = "Target";
  added.keep(
      cmd->add_option("--num-ipus", f.num_ipus, "IPUs of the target machine (default 16, an IPU-POD16)")
          ->check(CLI::Range(1, 1024)));
}

void add_recompute_and_memory_flags(CLI::App* cmd, CompileFlags& f, AddedFlags& added) {
  added.section = "Pipeline and recomputation";
  added.keep(
      cmd->add_option("--schedule", f.schedule, "Pipeline schedule: grouped, interleaved or sequential")
          ->capture_default_str()
          ->check(CLI::IsMember({"grouped", "interleaved", "sequential"})));
  added.keep(cmd->add_flag("--recompute", f.recompute,
                           "Recompute activations for the backward pass instead of keeping them: a pipeline "
                           "stashes only each stage's inputs; one IPU keeps checkpoints, round(sqrt(n)) of n "
                           "forward ops by default (Chen et al. 2016; docs/training.md)"));
  added.keep(
      cmd->add_option("--recompute-checkpoints", f.recompute_checkpoints,
                      "With --recompute on one IPU: keep the outputs of these op kinds (Conv, MatMul, as "
                      "--dump-ir prints them), ops or layers, comma-separated, and recompute the rest")
          ->delimiter(','));
  added.section = "Memory";
  added.keep(
      cmd->add_option("--available-memory-proportion", f.available_memory_proportion,
                      "The share of a tile one convolution's or MatMul's working set may take in their "
                      "plans, in (0, 1] (poplibs' availableMemoryProportion; default 0.6)")
          ->check(CLI::Validator(
              [](std::string& value) -> std::string {
                char* end = nullptr;
                const double p = std::strtod(value.c_str(), &end);
                return end != value.c_str() && *end == '\0' && p > 0 && p <= 1
                           ? ""
                           : "must be a number in (0, 1], got " + value;
              },
              "(0, 1]")));
}

void add_precision_and_loss_flags(CLI::App* cmd, CompileFlags& f, AddedFlags& added) {
  added.section = "Precision";
  added.keep(cmd->add_option(
                    "--precision", f.precision,
                    "fp32; fp16: inputs, weights, activations and their gradients in IEEE half with fp32 "
                    "partial sums, losses, weight gradients and optimizer state, at the fp16 AMP rate; mixed "
                    "(training): as fp16 but with fp32 master weights, each step cast to an fp16 copy. fp16 "
                    "and mixed training scale the loss by 2^15 unless --loss-scaling says otherwise")
                 ->capture_default_str()
                 ->check(CLI::IsMember({"fp32", "fp16", "mixed"})));
  added.section = "Training";
  added.keep(cmd->add_option("--mode", f.mode, "train or infer (default train; ipurun predict: infer)")
                 ->check(CLI::IsMember({"train", "infer"})));
  // The compiler checks the name (passes::loss_kind), so the list of losses lives in one place.
  added.keep(
      cmd->add_option("--loss", f.loss,
                      "Loss to train with: sparse_categorical_crossentropy, categorical_crossentropy, "
                      "binary_crossentropy, mean_squared_error (mse), mean_absolute_error (mae) or huber "
                      "(required for ONNX models that do not compute their loss; overrides a spec's, keeping "
                      "its from_logits and delta)"));
  added.keep(
      cmd->add_option("--loss-output", f.loss_output,
                      "ONNX: train on this scalar graph output, the loss the model computes (default: the "
                      "output of a SoftmaxCrossEntropyLoss or NegativeLogLikelihoodLoss node); the labels "
                      "are the graph input only the loss reads"));
  added.keep(
      cmd->add_option("--metrics", f.metrics,
                      "Metrics beside the loss, comma-separated: accuracy, top_k[:K] "
                      "(sparse_top_k_categorical_accuracy, k 5), mse, mae (overrides a spec's; default: "
                      "accuracy for the cross-entropies)"));
}

void add_optimizer_flags(CLI::App* cmd, CompileFlags& f, AddedFlags& added) {
  added.section = "Optimizer";
  const std::vector<std::string> names(format::kOptimizerNames.begin(), format::kOptimizerNames.end());
  added.keep(cmd->add_option("--optimizer", f.optimizer,
                             "Optimizer: " + format::optimizer_names_text() +
                                 " (ONNX models: default sgd; overrides the spec's)")
                 ->check(CLI::IsMember(names)));
  added.keep(cmd->add_option("--learning-rate", f.learning_rate, "Learning rate (overrides the spec)")
                 ->check(positive_float32()));
  for (const format::OptimizerArgumentSpec& spec : format::optimizer_argument_specs()) {
    const std::string key(spec.key);
    if (spec.is_switch) {
      // Flag callbacks, so that a flag not given leaves the spec's value (CLI11's add_flag gave an
      // optional<bool> a value even when its flag was absent).
      added.keep(cmd->add_flag_callback(
          std::string(spec.flag), [&f, key] { f.optimizer_arguments.switches[key] = true; }, spec.help()));
      added.keep(cmd->add_flag_callback(
          spec.negated_flag(), [&f, key] { f.optimizer_arguments.switches[key] = false; },
          spec.negated_help()));
    } else {
      added.keep(cmd->add_option_function<float>(
                        std::string(spec.flag),
                        [&f, key](const float& value) { f.optimizer_arguments.numbers[key] = value; },
                        spec.help())
                     ->check(float32_in(spec.range)));
    }
  }
  added.keep(cmd->add_option("--global-clipnorm", f.global_clipnorm,
                             "Clip the gradients' global norm to this before the update, any optimizer "
                             "(Keras's global_clipnorm; 0: no clipping, the default)")
                 ->check(CLI::NonNegativeNumber));
}

void add_loss_scaling_and_schedule_flags(CLI::App* cmd, CompileFlags& f, AddedFlags& added) {
  added.section = "Precision";
  added.keep(
      cmd->add_option("--loss-scaling", f.loss_scaling,
                      "Loss scaling, as Keras's LossScaleOptimizer: none, static or dynamic (default: the "
                      "spec's, else none; docs/training.md)")
          ->check(CLI::IsMember({"none", "static", "dynamic"})));
  added.keep(
      cmd->add_option("--loss-scale", f.loss_scale,
                      "The static loss scale, or the dynamic one's initial scale (default 32768, Keras's "
                      "initial_scale); static: a run-time value, which ipurun train takes on any "
                      "executable compiled with static loss scaling")
          ->check(positive_float32()));
  added.keep(
      cmd->add_option("--loss-scale-growth-steps", f.loss_scale_growth_steps,
                      "Dynamic loss scaling: finite updates in a row before the scale doubles (default "
                      "2000, Keras's dynamic_growth_steps)")
          ->check(CLI::Range(int64_t{1}, format::kMaxLossScaleGrowthSteps)));
  added.section = "Optimizer";
  added.keep(cmd->add_option(
      "--lr-schedule", f.lr_schedule,
      "Learning-rate schedule, Keras's, evaluated on the host before every update: "
      "KIND[:KEY=VALUE,...], e.g. cosine:warmup_target=0.01,warmup_steps=100,decay_steps=1000 "
      "(kinds constant, exponential, piecewise, cosine, polynomial; docs/training.md)"));
}

void add_pipeline_stage_flags(CLI::App* cmd, CompileFlags& f, AddedFlags& added) {
  added.section = "Pipeline and recomputation";
  added.keep(cmd->add_option("--stage-assignment", f.stage_assignment,
                             "Pipeline stage of each layer, e.g. 0,0,1,1,1,1")
                 ->delimiter(','));
  added.keep(
      cmd->add_option("--stage-starts", f.stage_starts,
                      "The layers (ONNX: nodes) where pipeline stages 1, 2, ... begin, in model order, e.g. "
                      "dense3 (overrides the spec's stages; what --pipeline-stages reports as first units)")
          ->delimiter(','));
  added.keep(
      cmd->add_option("--pipeline-stages", f.pipeline_stages,
                      "Split the model into N pipeline stages chosen to balance estimated cycles within each "
                      "IPU's memory (overrides the spec's stages)")
          ->check(CLI::Range(1, 1024)));
}

void add_model_input_flags(CLI::App* cmd, CompileFlags& f, AddedFlags& added) {
  const CLI::Validator name_equals_file(
      [](std::string& value) {
        const size_t eq = value.find('=');
        return eq == std::string::npos || eq == 0 || eq + 1 == value.size()
                   ? "expected NAME=FILE, got '" + value + "'"
                   : std::string();
      },
      "NAME=FILE");
  added.section = "Model inputs";
  added.keep(
      cmd->add_option("--constant-input", f.constant_inputs,
                      "ONNX: bind graph input NAME to the tensor in FILE (.npy, or an ONNX TensorProto .pb) "
                      "at compile time; it becomes a constant and is no longer an input of the executable "
                      "(repeatable)")
          ->check(name_equals_file));
}

} // namespace

std::vector<const CLI::Option*> add_compile_flags(CLI::App* cmd, CompileFlags& f,
                                                  const std::string& qualifier) {
  AddedFlags added{qualifier, "", {}};
  add_target_and_batch_flags(cmd, f, added);
  add_recompute_and_memory_flags(cmd, f, added);
  add_precision_and_loss_flags(cmd, f, added);
  add_optimizer_flags(cmd, f, added);
  add_loss_scaling_and_schedule_flags(cmd, f, added);
  add_pipeline_stage_flags(cmd, f, added);
  add_model_input_flags(cmd, f, added);
  return added.options;
}

void add_cache_use_flags(CLI::App* cmd, CacheUseFlags& f) {
  const std::string group = "Cache";
  cmd->add_option("--cache-dir", f.cache_dir,
                  "Executable cache (default $IPUCC_CACHE_DIR, $XDG_CACHE_HOME/ipucc, ~/.cache/ipucc)")
      ->group(group);
  cmd->add_flag("--no-cache", f.no_cache, "Neither read nor write the cache")->group(group);
  cmd->add_option("--cache-max-size", f.cache_max_size,
                  "Evict least recently used cache entries above this size, e.g. 500M, 2G "
                  "(default $IPUCC_CACHE_MAX_SIZE, else 5G)")
      ->group(group);
  cmd->add_option(
         "--remote-cache", f.remote_cache,
         "Shared HTTP cache: look executables up at URL/<key[0:2]>/<key>.ipuexe after a local miss, upload "
         "after a compile (default $IPUCC_REMOTE_CACHE)")
      ->group(group);
  cmd->add_flag("--remote-cache-readonly", f.remote_cache_read_only,
                "Never upload to the remote cache (also $IPUCC_REMOTE_CACHE_READONLY=1)")
      ->group(group);
}

StatusOr<std::string> remote_cache_url(const CacheUseFlags& f) {
  const char* env = std::getenv("IPUCC_REMOTE_CACHE");
  const std::string url = !f.remote_cache.empty() ? f.remote_cache : env ? env : "";
  if (url.empty() || url.starts_with("http://") || url.starts_with("https://")) return url;
  return invalid_argument(std::string(f.remote_cache.empty() ? "$IPUCC_REMOTE_CACHE" : "--remote-cache") +
                          ": '" + url + "' is not an http:// or https:// URL");
}

bool remote_cache_read_only(const CacheUseFlags& f) {
  const char* env = std::getenv("IPUCC_REMOTE_CACHE_READONLY");
  return f.remote_cache_read_only || (env && std::string(env) == "1");
}

StatusOr<uint64_t> cache_max_size(const CacheUseFlags& f) {
  const std::string text = f.cache_max_size.empty() ? default_cache_max_size() : f.cache_max_size;
  if (std::optional<uint64_t> size = parse_size(text)) return *size;
  return invalid_argument(
      std::string(f.cache_max_size.empty() ? "$IPUCC_CACHE_MAX_SIZE" : "--cache-max-size") +
      ": invalid size '" + text + "' (expected bytes or e.g. 1024K, 500M, 2G)");
}

} // namespace ipu::cli
