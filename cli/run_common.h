// What ipurun's commands share: the tool's name in messages, loading the executable (a file, a
// cache key, or a model looked up in the cache or compiled), its weights and data, and the checks
// and JSON every command's output goes through.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/progress_bar.h"
#include "cli/run_flags.h"
#include "compile_cache/cache_outcome.h"
#include "runtime/base/status.h"
#include "runtime/collectives/collectives.h"
#include "runtime/data/dataset.h"
#include "runtime/session/session.h"

namespace ipu::cli {

// "ipurun", or "ipurun: instance I" in a job of several instances (after name_ipurun_instance), so
// every message says whose it is.
const char* ipurun_tool();
void name_ipurun_instance(int rank);

struct Loaded {
  std::unique_ptr<session::Session> session;
  std::string origin;
  std::string key;
  std::optional<compile_cache::CacheOutcome> cache;
  data::Dataset data;
};

// Executable, weights and data: everything a command needs, with exit codes on failure. In a job
// of several instances given a model, instance 0 compiles and the others wait for its entry.
int load(const RunFlags& f, Loaded& out, collectives::Collectives* job);

// Errors about the executable itself (a program it lacks) and data faults met while running it
// (which name one of its nodes) name it; errors the host finds in the data name the data.
Status with_origin(const Status& status, const std::string& origin);

// The start of a command's --json object (docs/json.md): the tool and the command, the executable,
// its cache key (null for a file) and, for a model, how the cache had it
// (compile_cache::cache_outcome_name; null otherwise).
nlohmann::json run_json(const char* command, const Loaded& loaded);

// Each metric of the executable under its name (docs/json.md): "accuracy" where the loss has one
// and the metrics ask for it, "sparse_top_k_categorical_accuracy", "mse", "mae"; validation's with
// Keras's "val_" before each name.
void add_metrics(nlohmann::json& out, const std::vector<session::MetricValue>& metrics,
                 const std::string& prefix = "");

// Writes `value` to `path` (an output file: runtime/base/output_file.h); the exit code.
int write_json_file(const std::string& path, const nlohmann::json& value);

// Every output path the flags name is checked before any work (compiling, training), so a typo
// costs milliseconds and never a run's results (runtime/base/output_file.h has the rule).
int check_outputs(const RunFlags& f);

ProgressStyle progress_style(const RunFlags& f);

} // namespace ipu::cli
