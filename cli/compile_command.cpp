#include "cli/compile_command.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <set>

#include "cli/compile_failure.h"
#include "cli/compile_flags.h"
#include "cli/compile_options.h"
#include "cli/compile_report.h"
#include "cli/diagnostics.h"
#include "cli/estimated_trace.h"
#include "cli/exit_codes.h"
#include "cli/json_output.h"
#include "cli/number_text.h"
#include "cli/schedule_report.h"
#include "cli/tool_names.h"
#include "compile_cache/compile_through_cache.h"
#include "compiler/driver/compile.h"
#include "runtime/base/output_file.h"
#include "runtime/format/host_contract.h"

namespace ipu::cli {
namespace {

struct CompileCommandFlags {
  std::string model;
  CompileFlags compile;
  CacheUseFlags cache;
  std::string output;
  bool json = false;
  bool force = false;
  bool dump_ir = false;
  std::vector<std::string> dump_ir_after; // graph pass names, or "all"
  std::string report;
  std::string report_scale = "fullest"; // --report-scale: fullest | capacity
  std::string trace;
  bool dump_plan = false;
};

nlohmann::json estimates_json(const format::ExecutableSummary& exe) {
  nlohmann::json cycles = nlohmann::json::object(), breakdown = nlohmann::json::object();
  for (const auto& p : exe.programs()) {
    if (!format::runs_steps(p.name())) continue;
    cycles[p.name()] = p.cycles_per_step();
    const auto& b = p.breakdown_per_step();
    breakdown[p.name()] = {{"compute", b.compute()},
                           {"vertex_launch", b.vertex_launch()},
                           {"exchange", b.exchange()},
                           {"sync", b.sync()},
                           {"transfer", b.transfer()}};
  }
  const auto& e = exe.estimates();
  uint64_t train_cycles =
      cycles.contains("train") ? cycles["train"].get<uint64_t>() : cycles.value("predict", uint64_t{0});
  return {{"cycles_per_step", cycles},
          {"cycle_breakdown_per_step", breakdown},
          {"seconds_per_step", static_cast<double>(train_cycles) / exe.target().clock_hz()},
          {"peak_tile_bytes", e.peak_tile_bytes()},
          {"fullest_tile", e.fullest_tile()},
          {"tiles_used", e.tiles_used()},
          {"total_bytes", e.total_bytes()},
          {"vertices", e.vertices()},
          {"compute_sets", exe.compute_set_count()},
          {"all_reduce", all_reduce_json(exe.estimates(), exe.target())}};
}

// One line per compute set: what the BSP schedule does each step and what it costs.
void print_plan(const format::Executable& exe) {
  std::printf("%-4s %-14s %9s %7s %10s %12s  %s\n", "cs", "name", "vertices", "tiles", "cycles", "exchange_B",
              "ops");
  for (int i = 0; i < exe.compute_sets_size(); ++i) {
    const auto& cs = exe.compute_sets(i);
    std::set<uint32_t> tiles;
    for (const auto& v : cs.vertices())
      tiles.insert(v.tile());
    // The first op names the set; a fused or merged set says how many more it runs.
    std::string ops = cs.ops().empty() ? "-" : cs.ops(0);
    if (cs.ops_size() > 1) ops += " (+" + std::to_string(cs.ops_size() - 1) + ")";
    std::printf("%-4d %-14s %9d %7zu %10llu %12llu  %s\n", i, cs.name().c_str(), cs.vertices_size(),
                tiles.size(), static_cast<unsigned long long>(cs.cycles()),
                static_cast<unsigned long long>(cs.exchange_bytes()), ops.c_str());
  }
}

bool has_suffix(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

ReportPage report_page(const CompileCommandFlags& flags, const std::string& failure) {
  return {flags.model, failure,
          flags.report_scale == "capacity" ? TileScale::kCapacity : TileScale::kFullestTile};
}

// Output paths are checked before compiling: a mistake costs milliseconds, not a compile.
Status check_outputs(const CompileCommandFlags& flags) {
  if (!flags.report.empty() && !has_suffix(flags.report, ".svg") && !has_suffix(flags.report, ".html"))
    return bad_option("--report " + flags.report +
                      ": the file name must end in .svg or .html (the format it selects)");
  if (!flags.trace.empty() && !has_suffix(flags.trace, ".json"))
    return bad_option("--trace " + flags.trace + ": the file name must end in .json (Chrome trace events)");
  for (const std::string* path : {&flags.output, &flags.report, &flags.trace}) {
    if (path->empty()) continue;
    IPU_RETURN_IF_ERROR(check_output_file(*path));
  }
  return Status();
}

// --dump-ir-after: the IR after each pass asked for, under a heading as MLIR's
// -mlir-print-ir-after prints it. A pass named that did not run in this compile is said so, not
// passed over in silence.
void print_ir_after_passes(const CompileCommandFlags& flags,
                           const std::vector<compiler::GraphPassRun>& runs) {
  const std::vector<compiler::GraphPassInfo> passes = compiler::graph_passes();
  for (size_t i = 0; i < runs.size(); ++i) {
    const compiler::GraphPassRun& run = runs[i];
    if (!run.ir_after.empty()) std::printf("// IR after %s\n%s", run.name.c_str(), run.ir_after.c_str());
    const auto& asked = flags.dump_ir_after;
    if (!run.ran && std::find(asked.begin(), asked.end(), run.name) != asked.end()) {
      print_note(kIpuccTool, "--dump-ir-after " + run.name +
                                 ": the pass did not run in this compile (it runs " +
                                 std::string(passes[i].runs_when) + ")");
    }
  }
}

// --json: the compile's one object (docs/json.md).
nlohmann::json compile_json(const CompileCommandFlags& flags, const compile_cache::CachedCompile& compiled) {
  const format::ExecutableSummary& summary = compiled.summary;
  const compiler::CompileTimings& timings = compiled.timings;
  nlohmann::json out = json_document(kIpuccTool, "compile");
  out["model"] = flags.model;
  out["fits"] = true;
  out["key"] = compiled.key;
  out["cache"] = compile_cache::cache_outcome_name(compiled.outcome);
  out["entry"] = compiled.entry.empty() ? nlohmann::json() : nlohmann::json(compiled.entry);
  out["output"] = flags.output.empty() ? nlohmann::json() : nlohmann::json(flags.output);
  out["bytes"] = compiled.size;
  out["timings"] = {{"total_s", compiled.seconds},
                    {"frontend_s", timings.frontend_seconds},
                    {"passes_s", timings.passes_seconds},
                    {"lowering_s", timings.lowering_seconds}};
  out["passes"] = nlohmann::json::array();
  for (const compiler::GraphPassRun& run : compiled.passes)
    out["passes"].push_back({{"name", run.name}, {"ran", run.ran}, {"seconds", run.seconds}});
  out["target"] = {{"arch", summary.target().arch()},
                   {"num_ipus", summary.target().num_ipus()},
                   {"tiles_per_ipu", summary.target().tiles_per_ipu()},
                   {"bytes_per_tile", summary.target().bytes_per_tile()}};
  out["mode"] = summary.mode();
  out["folded_onnx_nodes"] = summary.folded_onnx_nodes();
  out["batch_size"] = summary.batch_size();
  out["steps_per_execution"] = summary.steps_per_execution();
  out["estimates"] = estimates_json(summary);
  out["pipeline"] = schedule_json(summary);
  return out;
}

// The compile's summary on stdout: key, tiles, cycles per step, the pipeline, where it went.
void print_compile_summary(const CompileCommandFlags& flags, const compile_cache::CachedCompile& compiled) {
  const format::ExecutableSummary& summary = compiled.summary;
  const auto est = estimates_json(summary);
  std::printf("%s: %s (%s, %.3f s)\n", flags.model.c_str(), compiled.key.substr(0, 16).c_str(),
              compile_cache::cache_outcome_name(compiled.outcome).c_str(), compiled.seconds);
  std::printf("  %u tiles used, %s vertices in %d compute sets; fullest tile %u holds %s of %s bytes\n",
              summary.estimates().tiles_used(), with_commas(summary.estimates().vertices()).c_str(),
              summary.compute_set_count(), summary.estimates().fullest_tile(),
              with_commas(summary.estimates().peak_tile_bytes()).c_str(),
              with_commas(summary.target().bytes_per_tile()).c_str());
  for (const auto& [program, cycles] : est["cycles_per_step"].items()) {
    std::printf("  %s: %s cycles/step (%.1f us at %.2f GHz)\n", program.c_str(),
                with_commas(cycles.get<uint64_t>()).c_str(),
                1e6 * static_cast<double>(cycles.get<uint64_t>()) / summary.target().clock_hz(),
                summary.target().clock_hz() / 1e9);
  }
  const auto pipeline = schedule_json(summary);
  std::printf("  %s schedule, %u stage(s) x %u replica(s), %u micro-batches per update: bubble %.1f%%\n",
              summary.pipeline().schedule().c_str(), summary.pipeline().num_stages(),
              summary.pipeline().replicas(), summary.pipeline().gradient_accumulation(),
              100.0 * pipeline["bubble_fraction"].get<double>());
  if (summary.folded_onnx_nodes() > 0)
    std::printf("  %s ONNX node(s) computed at compile time\n",
                with_commas(summary.folded_onnx_nodes()).c_str());
  if (!compiled.entry.empty()) std::printf("  entry %s\n", compiled.entry.c_str());
  if (!flags.output.empty()) std::printf("  wrote %s\n", flags.output.c_str());
}

int run_compile(const CompileCommandFlags& flags) {
  compile_cache::CachedCompileRequest request;
  lowering::MemoryReport overflow;
  if (flags.json) request.overflow = &overflow;
  // Every error, on stderr; with --json also as the one object on stdout.
  const auto failed = [&](const Status& status, int exit_code) {
    if (flags.json) {
      const bool overflowed =
          status.code() == StatusCode::kResourceExhausted && !overflow.peak_per_tile.empty();
      const compiler::CompileOptions* options =
          request.options.model_path.empty() ? nullptr : &request.options;
      std::printf("%s\n", compile_failure_json(flags.model, status, exit_code,
                                               overflowed ? &overflow : nullptr, options)
                              .dump(2)
                              .c_str());
    }
    return fail(kIpuccTool, status, exit_code);
  };
  if (Status outputs = check_outputs(flags); !outputs.ok())
    return failed(outputs, outputs.code() == StatusCode::kBadOption ? kExitUsage : kExitIoError);
  StatusOr<compiler::CompileOptions> options = to_compile_options(flags.compile, flags.model, "train");
  if (!options.ok()) return failed(options.status(), exit_code_for(options.status()));
  request.options = std::move(*options);
  request.cache_dir = flags.cache.cache_dir;
  request.use_cache = !flags.cache.no_cache;
  request.force = flags.force;
  request.options.dump_ir_after = flags.dump_ir_after;
  request.keep_ir = flags.dump_ir || !flags.dump_ir_after.empty();
  // What reads more than the summary: the file written, the trace and the plan.
  request.summary_only = flags.output.empty() && flags.trace.empty() && !flags.dump_plan;
  if (request.use_cache) {
    StatusOr<uint64_t> max_size = cache_max_size(flags.cache);
    if (!max_size.ok()) return failed(max_size.status(), kExitUsage);
    request.max_size = *max_size;
    StatusOr<std::string> remote = remote_cache_url(flags.cache);
    if (!remote.ok()) return failed(remote.status(), kExitUsage);
    request.remote_url = *remote;
    request.remote_read_only = remote_cache_read_only(flags.cache);
  }
  // The HTML report shows the memory plan, which only a compile gives: asking for it compiles even
  // on a hit, as --dump-ir does.
  const bool html_report = has_suffix(flags.report, ".html");
  compiler::CompileReport report;
  if (html_report) request.report = &report;
  auto compiled = compile_cache::compile_through_cache(
      request, [](const std::string& w) { print_warning(kIpuccTool, w); });
  if (!compiled.ok()) {
    // Out of memory is when the report helps most: it is written before the error, whose exit
    // code stays the compile's.
    const bool planned = !report.memory.peak_per_tile.empty();
    if (html_report && planned && compiled.status().code() == StatusCode::kResourceExhausted) {
      Status written = write_output_file(
          flags.report, compile_report_html(report, report_page(flags, compiled.status().message())));
      if (!written.ok()) print_error(kIpuccTool, written.message());
    }
    return failed(compiled.status(), exit_code_for(compiled.status()));
  }
  const format::ExecutableSummary& summary = compiled->summary;
  if (const std::string note = model_defaults_note(flags.compile, flags.model, summary); !note.empty())
    print_note(kIpuccTool, note);
  for (const std::string& note : compiled->notes)
    print_note(kIpuccTool, note);
  if (const std::string note = stage_split_note(flags.model, summary); !note.empty())
    print_note(kIpuccTool, note);
  print_ir_after_passes(flags, compiled->passes);
  if (flags.dump_ir) std::printf("%s", compiled->ir_text.c_str());
  if (!flags.output.empty()) {
    Status written = write_output_file(flags.output, compiled->framed.bytes);
    if (!written.ok()) return failed(written, kExitIoError);
  }
  if (!flags.report.empty()) {
    Status written =
        write_output_file(flags.report, html_report ? compile_report_html(report, report_page(flags, ""))
                                                    : schedule_svg(summary));
    if (!written.ok()) return failed(written, kExitIoError);
  }
  if (!flags.trace.empty()) {
    StatusOr<nlohmann::json> trace = estimated_trace(compiled->loaded.executable);
    if (!trace.ok()) return failed(trace.status(), kExitBadExecutable);
    Status written = write_output_file(flags.trace, trace->dump() + "\n");
    if (!written.ok()) return failed(written, kExitIoError);
  }

  if (flags.dump_plan) print_plan(compiled->loaded.executable);
  if (flags.json) {
    std::printf("%s\n", compile_json(flags, *compiled).dump(2).c_str());
  } else {
    print_compile_summary(flags, *compiled);
  }
  return kExitOk;
}

} // namespace

std::function<int()> add_compile_command(CLI::App& app) {
  auto flags = std::make_shared<CompileCommandFlags>();
  CLI::App* cmd =
      app.add_subcommand("compile", "Compile a model (.onnx or JSON graph spec) into an executable");
  cmd->add_option("model", flags->model, "Model file: .onnx, or a .json graph spec")->required();
  add_compile_flags(cmd, flags->compile, "");
  add_cache_use_flags(cmd, flags->cache);
  cmd->add_option("-o,--output", flags->output, "Also write the executable to this file");
  cmd->add_flag("--json", flags->json, "Print one JSON object (docs/json.md)");
  cmd->add_flag("--force", flags->force, "Compile even when the cache has the executable");
  cmd->add_option(
      "--report", flags->report,
      "Draw the pipeline schedule into FILE.svg, or tile memory, schedule and cycle estimate into "
      "FILE.html (compiles even on a hit; written also when the model does not fit)");
  cmd->add_option("--report-scale", flags->report_scale,
                  "What the HTML report's tile colours measure a tile against: the fullest tile, or a "
                  "tile's capacity (a fixed scale, for comparing reports)")
      ->capture_default_str()
      ->check(CLI::IsMember({"fullest", "capacity"}));
  cmd->add_option("--trace", flags->trace,
                  "Write the estimated execution of one train (or predict) run into FILE.json, Chrome "
                  "trace events that Perfetto's UI and chrome://tracing open (docs/trace.md)");
  cmd->add_flag("--dump-ir", flags->dump_ir, "Print the IR after the graph passes (compiles even on a hit)");
  std::string pass_names;
  for (const compiler::GraphPassInfo& pass : compiler::graph_passes())
    pass_names += (pass_names.empty() ? "" : ", ") + std::string(pass.name);
  cmd->add_option("--dump-ir-after", flags->dump_ir_after,
                  "Print the IR after each graph pass named (comma-separated, or all; compiles even on a "
                  "hit). The passes, in order: " +
                      pass_names)
      ->delimiter(',');
  cmd->add_flag("--dump-plan", flags->dump_plan, "Print the compute sets: vertices, tiles, cycles, exchange");
  return [flags, cmd]() { return cmd->parsed() ? run_compile(*flags) : -1; };
}

} // namespace ipu::cli
