#include "cli/compile_command.h"

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <set>

#include "cache/cache_dir.h"
#include "cache/cache_stats.h"
#include "cache/file_lock.h"
#include "cache/local_store.h"
#include "cache/manifest.h"
#include "cli/build_identity.h"
#include "cli/cache_command.h"
#include "cli/diagnostics.h"
#include "cli/exit_codes.h"
#include "cli/json_output.h"
#include "cli/schedule_report.h"
#include "compiler/driver/compile.h"
#include "runtime/base/file_io.h"
#include "runtime/base/sha256.h"
#include "runtime/format/executable_file.h"

namespace ipu::cli {
namespace {

constexpr const char* kTool = "ipucc";
constexpr const char* kKeySchemaVersion = "1";

struct CompileFlags {
  std::string model;
  std::string arch = "mk2";
  uint32_t tiles_per_ipu = 0;
  uint64_t bytes_per_tile = 0;
  uint32_t batch_size = 32;
  uint32_t steps_per_execution = 1;
  uint32_t gradient_accumulation = 1;
  uint32_t replicas = 1;
  uint32_t num_ipus = 16;
  std::string schedule = "grouped";
  bool recompute = false;
  std::string mode = "train";
  std::string loss;
  std::string optimizer;
  float learning_rate = 0;
  float momentum = -1;
  std::vector<int> stage_assignment;
  std::string cache_dir;
  std::string output;
  bool json = false;
  bool force = false;
  bool no_cache = false;
  std::string cache_max_size;
  bool dump_ir = false;
  std::string report;
  bool dump_plan = false;
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string with_commas(uint64_t n) {
  std::string s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

compiler::CompileOptions to_options(const CompileFlags& f) {
  compiler::CompileOptions o;
  o.model_path = f.model;
  o.arch = f.arch;
  if (f.tiles_per_ipu) o.tiles_per_ipu = f.tiles_per_ipu;
  if (f.bytes_per_tile) o.bytes_per_tile = f.bytes_per_tile;
  o.batch_size = f.batch_size;
  o.steps_per_execution = f.steps_per_execution;
  o.gradient_accumulation = f.gradient_accumulation;
  o.replicas = f.replicas;
  o.num_ipus = f.num_ipus;
  o.schedule = f.schedule;
  o.recompute = f.recompute;
  o.mode = f.mode == "infer" ? compiler::Mode::kInfer : compiler::Mode::kTrain;
  if (!f.loss.empty()) o.loss = f.loss;
  if (!f.optimizer.empty()) o.optimizer = f.optimizer;
  if (f.learning_rate > 0) o.learning_rate = f.learning_rate;
  if (f.momentum >= 0) o.momentum = f.momentum;
  o.stage_assignment = f.stage_assignment;
  return o;
}

cache::Manifest make_manifest(const compiler::CompileOptions& options, const std::string& model_text) {
  cache::Manifest m;
  m.set("key_schema", kKeySchemaVersion);
  m.set("format_version", std::to_string(format::kFormatVersion));
  m.set("compiler_build", compiler_build_identity());
  m.set("model_sha256", sha256_hex(model_text));
  for (auto& [name, value] : compiler::codegen_options(options)) m.set("option." + name, value);
  return m;
}

nlohmann::json estimates_json(const format::Executable& exe) {
  nlohmann::json cycles = nlohmann::json::object();
  for (const auto& p : exe.programs()) {
    if (p.program().has_repeat()) cycles[p.name()] = p.cycles_per_step();
  }
  const auto& e = exe.estimates();
  uint64_t train_cycles = cycles.contains("train") ? cycles["train"].get<uint64_t>() : cycles.value("predict", uint64_t{0});
  return {{"cycles_per_step", cycles},
          {"seconds_per_step", static_cast<double>(train_cycles) / exe.target().clock_hz()},
          {"peak_tile_bytes", e.peak_tile_bytes()},
          {"fullest_tile", e.fullest_tile()},
          {"tiles_used", e.tiles_used()},
          {"total_bytes", e.total_bytes()},
          {"vertices", e.vertices()},
          {"compute_sets", exe.compute_sets_size()}};
}

// One line per compute set: what the BSP schedule does each step and what it costs.
void print_plan(const format::Executable& exe) {
  std::printf("%-4s %-14s %9s %7s %10s %12s\n", "cs", "name", "vertices", "tiles", "cycles", "exchange_B");
  for (int i = 0; i < exe.compute_sets_size(); ++i) {
    const auto& cs = exe.compute_sets(i);
    std::set<uint32_t> tiles;
    for (const auto& v : cs.vertices()) tiles.insert(v.tile());
    std::printf("%-4d %-14s %9d %7zu %10llu %12llu\n", i, cs.name().c_str(), cs.vertices_size(), tiles.size(),
                static_cast<unsigned long long>(cs.cycles()), static_cast<unsigned long long>(cs.exchange_bytes()));
  }
}

int run_compile(const CompileFlags& flags) {
  const auto start = std::chrono::steady_clock::now();
  auto model_text = read_file(flags.model);
  if (!model_text.ok()) return fail(kTool, model_text.status());
  const compiler::CompileOptions options = to_options(flags);
  const cache::Manifest manifest = make_manifest(options, *model_text);
  const std::string key = manifest.key();
  const std::string max_size_text = flags.cache_max_size.empty() ? default_cache_max_size() : flags.cache_max_size;
  const std::optional<uint64_t> max_size = parse_size(max_size_text);
  if (!max_size && !flags.no_cache) {
    print_error(kTool, std::string(flags.cache_max_size.empty() ? "$IPUCC_CACHE_MAX_SIZE" : "--cache-max-size") +
                           ": invalid size '" + max_size_text + "' (expected bytes or e.g. 1024K, 500M, 2G)");
    return kExitUsage;
  }

  // The cache is an accelerator: if it cannot be opened, compile anyway and say so once.
  std::unique_ptr<cache::LocalStore> store;
  if (!flags.no_cache) {
    auto opened = cache::LocalStore::open(flags.cache_dir.empty() ? cache::default_cache_dir() : flags.cache_dir);
    if (opened.ok()) {
      store = std::make_unique<cache::LocalStore>(std::move(*opened));
    } else {
      print_warning(kTool, opened.status().message() + "; compiling without the cache");
    }
  }

  std::string outcome = "miss";
  std::string bytes;
  format::Executable executable;
  compiler::CompileTimings timings;
  // Statistics are bookkeeping: failing to update them warns, never fails the compile.
  auto count = [&](const cache::CacheStats& delta) {
    Status s = cache::add_stats(store->dir(), delta);
    if (!s.ok()) print_warning(kTool, s.message() + "; cache statistics not updated");
  };
  // Held from a miss until the entry is stored, so concurrent compiles of one key compile once.
  std::optional<cache::FileLock> key_lock;
  if (store && !flags.force && !flags.dump_ir) {
    cache::CacheStats delta;
    // Loads the entry if the cache has a sound one; a damaged entry never runs: it is moved
    // aside for inspection and the model compiled again.
    // `holding_lock`: no other compile of this key is between writing its executable and its
    // manifest, so an executable without a manifest is a dead put worth reporting.
    auto try_hit = [&](bool holding_lock) {
      auto found = store->lookup(manifest);
      if (!found.ok()) {
        print_warning(kTool, found.status().message());
        return false;
      }
      for (const auto& w : found->warnings) print_warning(kTool, w);
      if (found->uncommitted_executable && holding_lock) {
        print_warning(kTool, found->path + ": executable without its manifest (a compile that died before "
                                           "committing); treated as a cache miss");
      }
      if (!found->hit) return false;
      auto parsed = format::parse_executable(found->executable_bytes, found->path);
      if (parsed.ok()) {
        bytes = std::move(found->executable_bytes);
        executable = std::move(*parsed);
        return true;
      }
      Status moved = store->quarantine(key);
      if (moved.ok()) {
        delta.corrupt_found += 1;
        print_warning(kTool, parsed.status().message() + "; moved to " + store->corrupt_dir() + "; recompiling");
      } else {
        print_warning(kTool, parsed.status().message() + "; recompiling (" + moved.message() + ")");
      }
      return false;
    };
    bool hit = try_hit(false);
    if (!hit) {
      auto locked = store->lock_key(key);
      if (locked.ok()) {
        key_lock.emplace(std::move(*locked));
        hit = try_hit(true);  // another process may have compiled it while we waited
      } else {
        print_warning(kTool, locked.status().message() + "; compiling without waiting for other compiles");
      }
    }
    if (hit) {
      outcome = "hit";
      delta.hits = 1;
      delta.compiles_avoided = 1;
    } else {
      delta.misses = 1;
    }
    count(delta);
  } else if (flags.force) {
    outcome = "forced";
  }

  if (outcome != "hit") {
    auto compiled = compiler::compile_model(*model_text, options);
    if (!compiled.ok()) return fail(kTool, compiled.status());
    executable = std::move(compiled->executable);
    for (const auto& [name, value] : manifest.entries()) {
      auto* entry = executable.add_manifest();
      entry->set_name(name);
      entry->set_value(value);
    }
    executable.set_compiler_build(compiler_build_identity());
    timings = compiled->timings;
    if (flags.dump_ir) std::printf("%s", compiled->ir_text.c_str());
    bytes = format::serialize_executable(executable);
    if (store) {
      Status put = store->put(manifest, bytes);
      if (!put.ok()) print_warning(kTool, put.message() + "; the executable was not cached");
      auto evicted = store->evict_to(*max_size);
      if (!evicted.ok()) {
        print_warning(kTool, evicted.status().message() + "; cache size limit not enforced");
      } else if (!evicted->empty()) {
        cache::CacheStats delta;
        delta.evictions = evicted->size();
        count(delta);
      }
    }
  }
  if (!flags.output.empty()) {
    Status written = write_file_atomic(flags.output, bytes);
    if (!written.ok()) return fail(kTool, written, kExitIoError);
  }
  if (!flags.report.empty()) {
    const bool html = flags.report.size() >= 5 && flags.report.compare(flags.report.size() - 5, 5, ".html") == 0;
    Status written = write_file_atomic(flags.report, html ? schedule_html(executable) : schedule_svg(executable));
    if (!written.ok()) return fail(kTool, written, kExitIoError);
  }

  const double total = seconds_since(start);
  if (flags.dump_plan) print_plan(executable);
  const std::string entry = store ? store->entry_path(key) : "";
  if (flags.json) {
    nlohmann::json out = json_document(kTool, "compile");
    out["model"] = flags.model;
    out["key"] = key;
    out["cache"] = store ? outcome : "disabled";
    out["entry"] = entry.empty() ? nlohmann::json() : nlohmann::json(entry);
    out["output"] = flags.output.empty() ? nlohmann::json() : nlohmann::json(flags.output);
    out["bytes"] = bytes.size();
    out["timings"] = {{"total_s", total},
                      {"frontend_s", timings.frontend_seconds},
                      {"passes_s", timings.passes_seconds},
                      {"lowering_s", timings.lowering_seconds}};
    out["target"] = {{"arch", executable.target().arch()},
                     {"num_ipus", executable.target().num_ipus()},
                     {"tiles_per_ipu", executable.target().tiles_per_ipu()},
                     {"bytes_per_tile", executable.target().bytes_per_tile()}};
    out["mode"] = executable.mode();
    out["batch_size"] = executable.batch_size();
    out["steps_per_execution"] = executable.steps_per_execution();
    out["estimates"] = estimates_json(executable);
    out["pipeline"] = schedule_json(executable);
    std::printf("%s\n", out.dump(2).c_str());
    return kExitOk;
  }
  const auto est = estimates_json(executable);
  std::printf("%s: %s (%s, %.3f s)\n", flags.model.c_str(), key.substr(0, 16).c_str(), outcome.c_str(), total);
  std::printf("  %u tiles used, %s vertices in %d compute sets; fullest tile %u holds %s of %s bytes\n",
              executable.estimates().tiles_used(), with_commas(executable.estimates().vertices()).c_str(),
              executable.compute_sets_size(), executable.estimates().fullest_tile(),
              with_commas(executable.estimates().peak_tile_bytes()).c_str(),
              with_commas(executable.target().bytes_per_tile()).c_str());
  for (const auto& [program, cycles] : est["cycles_per_step"].items()) {
    std::printf("  %s: %s cycles/step (%.1f us at %.2f GHz)\n", program.c_str(), with_commas(cycles.get<uint64_t>()).c_str(),
                1e6 * static_cast<double>(cycles.get<uint64_t>()) / executable.target().clock_hz(),
                executable.target().clock_hz() / 1e9);
  }
  const auto pipeline = schedule_json(executable);
  std::printf("  %s schedule, %u stage(s) x %u replica(s), %u micro-batches per update: bubble %.1f%%\n",
              executable.pipeline().schedule().c_str(), executable.pipeline().num_stages(),
              executable.pipeline().replicas(), executable.pipeline().gradient_accumulation(),
              100.0 * pipeline["bubble_fraction"].get<double>());
  if (!entry.empty()) std::printf("  entry %s\n", entry.c_str());
  if (!flags.output.empty()) std::printf("  wrote %s\n", flags.output.c_str());
  return kExitOk;
}

}  // namespace

std::function<int()> add_compile_command(CLI::App& app) {
  auto flags = std::make_shared<CompileFlags>();
  CLI::App* cmd = app.add_subcommand("compile", "Compile a model (.onnx or JSON graph spec) into an executable");
  cmd->add_option("model", flags->model, "Model file: .onnx, or a .json graph spec")->required();
  cmd->add_option("--arch", flags->arch, "Target IPU: mk2 (GC200) or mk1 (GC2)")->check(CLI::IsMember({"mk2", "mk1"}));
  cmd->add_option("--tiles-per-ipu", flags->tiles_per_ipu, "Override the tiles per IPU")->check(CLI::Range(1, 65536));
  cmd->add_option("--bytes-per-tile", flags->bytes_per_tile, "Override the memory per tile")
      ->check(CLI::Range(uint64_t{1024}, uint64_t{1} << 32));
  cmd->add_option("--batch-size", flags->batch_size, "Micro-batch size")->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--steps-per-execution", flags->steps_per_execution,
                  "Micro-batch steps per on-device loop (a multiple of --gradient-accumulation)")
      ->check(CLI::Range(1, 1 << 24));
  cmd->add_option("--gradient-accumulation", flags->gradient_accumulation,
                  "Micro-batches whose gradients are averaged into one weight update")
      ->check(CLI::Range(1, 1 << 16));
  cmd->add_option("--replicas", flags->replicas, "Data-parallel replicas (mean all-reduce of gradients)")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--num-ipus", flags->num_ipus, "IPUs of the target machine (default 16, an IPU-POD16)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--schedule", flags->schedule, "Pipeline schedule: grouped, interleaved or sequential")
      ->check(CLI::IsMember({"grouped", "interleaved", "sequential"}));
  cmd->add_flag("--recompute", flags->recompute,
                "Pipelines: recompute activations for the backward pass instead of stashing them");
  cmd->add_option("--mode", flags->mode, "train or infer")->check(CLI::IsMember({"train", "infer"}));
  cmd->add_option("--loss", flags->loss, "Loss to train with (required for ONNX models; overrides a spec's)")
      ->check(CLI::IsMember({"sparse_categorical_crossentropy"}));
  cmd->add_option("--optimizer", flags->optimizer, "Optimizer (ONNX models: default sgd)")->check(CLI::IsMember({"sgd"}));
  cmd->add_option("--learning-rate", flags->learning_rate, "SGD learning rate (overrides the spec)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--momentum", flags->momentum, "SGD momentum (overrides the spec)")->check(CLI::Range(0.0, 0.999999));
  cmd->add_option("--stage-assignment", flags->stage_assignment, "Pipeline stage of each layer, e.g. 0,0,1,1,1,1")
      ->delimiter(',');
  cmd->add_option("--cache-dir", flags->cache_dir, "Executable cache (default $IPUCC_CACHE_DIR, $XDG_CACHE_HOME/ipucc, ~/.cache/ipucc)");
  cmd->add_flag("--no-cache", flags->no_cache, "Neither read nor write the cache");
  cmd->add_option("--cache-max-size", flags->cache_max_size,
                  "Evict least recently used cache entries above this size, e.g. 500M, 2G "
                  "(default $IPUCC_CACHE_MAX_SIZE, else 5G)");
  cmd->add_option("-o,--output", flags->output, "Also write the executable to this file");
  cmd->add_flag("--json", flags->json, "Print one JSON object (docs/json.md)");
  cmd->add_flag("--force", flags->force, "Compile even when the cache has the executable");
  cmd->add_option("--report", flags->report, "Draw the compiled schedule into FILE.svg or FILE.html");
  cmd->add_flag("--dump-ir", flags->dump_ir, "Print the IR after the training passes (compiles even on a hit)");
  cmd->add_flag("--dump-plan", flags->dump_plan, "Print the compute sets: vertices, tiles, cycles, exchange");
  return [flags, cmd]() { return cmd->parsed() ? run_compile(*flags) : -1; };
}

}  // namespace ipu::cli
