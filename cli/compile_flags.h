// The flags `ipucc compile` and `ipurun MODEL` share: codegen options and cache use. One
// definition, so both tools spell, document and check them the same way.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/format/optimizer_arguments.h"

namespace ipu::cli {

// Everything that selects the compiled program. Plain values, names as given: cli/compile_options.h
// parses them into compiler::CompileOptions' types (only where the compiler is built).
struct CompileFlags {
  std::string arch = "mk2";
  uint32_t tiles_per_ipu = 0;  // 0: the preset's
  uint64_t bytes_per_tile = 0; // 0: the preset's
  uint32_t batch_size = 32;
  uint32_t steps_per_execution = 0;   // 0: from the model (compiler::with_model_defaults)
  uint32_t gradient_accumulation = 0; // 0: from the model
  uint32_t replicas = 1;
  uint32_t num_ipus = 16;
  std::string schedule = "grouped";
  bool recompute = false;
  std::vector<std::string> recompute_checkpoints;
  std::optional<double> available_memory_proportion; // unset: poplibs' default
  std::string precision = "fp32";
  std::string mode; // "" until the tool applies its default (ipucc: train; ipurun: by command)
  std::string loss;
  std::string loss_output;
  std::string metrics;
  std::string optimizer;
  // The optimizers' arguments (format::optimizer_argument_specs says which optimizers take each);
  // not given: the spec's or Keras's defaults.
  std::optional<float> learning_rate;
  format::GivenOptimizerArguments optimizer_arguments;
  std::optional<float> global_clipnorm;
  std::string loss_scaling; // "": the spec's
  std::optional<float> loss_scale;
  std::optional<int64_t> loss_scale_growth_steps;
  std::string lr_schedule; // "": the spec's rate or schedule (format::parse_learning_rate_schedule's form)
  std::vector<int> stage_assignment;
  std::vector<std::string> stage_starts;
  uint32_t pipeline_stages = 0;             // 0: not given
  std::vector<std::string> constant_inputs; // NAME=FILE, each checked for that form by CLI11
};

// How a compile uses the cache.
struct CacheUseFlags {
  std::string cache_dir; // "": cache::default_cache_dir()
  bool no_cache = false;
  std::string cache_max_size;          // "": default_cache_max_size()
  std::string remote_cache;            // "": $IPUCC_REMOTE_CACHE, else none
  bool remote_cache_read_only = false; // also $IPUCC_REMOTE_CACHE_READONLY=1
};

// Registers the codegen flags on `cmd` in help sections (Target, Batch and steps, ...), each
// heading followed by `qualifier` (" (when EXECUTABLE is a model)"); returns them so a tool can
// tell whether any was given. A default that is a plain value is shown from CompileFlags'
// initialisers.
std::vector<const CLI::Option*> add_compile_flags(CLI::App* cmd, CompileFlags& flags,
                                                  const std::string& qualifier);

void add_cache_use_flags(CLI::App* cmd, CacheUseFlags& flags);

// The remote cache URL (--remote-cache, else $IPUCC_REMOTE_CACHE; "" for none) and whether it
// is read-only (--remote-cache-readonly or $IPUCC_REMOTE_CACHE_READONLY=1). A URL that is not
// http(s) is InvalidArgument naming the flag or variable.
StatusOr<std::string> remote_cache_url(const CacheUseFlags& flags);
bool remote_cache_read_only(const CacheUseFlags& flags);

// The eviction limit: --cache-max-size, else $IPUCC_CACHE_MAX_SIZE, else 5G. InvalidArgument
// names the flag or variable and the text.
StatusOr<uint64_t> cache_max_size(const CacheUseFlags& flags);

} // namespace ipu::cli
