#include "cli/compare_command.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>

#include "cli/diagnostics.h"
#include "cli/exit_codes.h"
#include "cli/json_output.h"
#include "cli/number_text.h"
#include "cli/op_costs.h"
#include "cli/resolve_executable.h"
#include "cli/tool_names.h"
#include "runtime/format/host_contract.h"

namespace ipu::cli {
namespace {

// Ops the text output lists; --json has them all.
constexpr size_t kListedChanges = 25;

struct CompareFlags {
  std::string a;
  std::string b;
  std::string cache_dir;
  bool json = false;
};

nlohmann::json summary(const format::Executable& exe) {
  nlohmann::json programs = nlohmann::json::object();
  for (const format::NamedProgram& p : exe.programs()) {
    if (format::runs_steps(p.name())) programs[p.name()] = p.cycles_per_step();
  }
  const format::Estimates& e = exe.estimates();
  return {{"model", exe.model_name()},
          {"mode", exe.mode()},
          {"num_ipus", exe.target().num_ipus()},
          {"batch_size", exe.batch_size()},
          {"cycles_per_step", std::move(programs)},
          {"peak_tile_bytes", e.peak_tile_bytes()},
          {"total_bytes", e.total_bytes()},
          {"tiles_used", e.tiles_used()},
          {"vertices", e.vertices()}};
}

bool differs(const OpCost& a, const OpCost& b) {
  return std::abs(a.cycles - b.cycles) >= 0.5 || std::abs(a.exchange_bytes - b.exchange_bytes) >= 0.5 ||
         a.tiles != b.tiles;
}

nlohmann::json side(const OpCost* cost) {
  if (cost == nullptr) return nullptr;
  return {{"cycles", cost->cycles},
          {"exchange_bytes", cost->exchange_bytes},
          {"tiles", cost->tiles},
          {"vertices", cost->vertices}};
}

std::string change(double a, double b) {
  if (a == 0) return b == 0 ? "" : "new";
  char text[32];
  std::snprintf(text, sizeof text, "%+.1f%%", 100.0 * (b - a) / a);
  return text;
}

void print_text(const CompareFlags& flags, const nlohmann::json& c) {
  std::printf("A: %s (%s, %s)\nB: %s (%s, %s)\n\n", flags.a.c_str(),
              c["a"]["model"].get<std::string>().c_str(), c["a"]["mode"].get<std::string>().c_str(),
              flags.b.c_str(), c["b"]["model"].get<std::string>().c_str(),
              c["b"]["mode"].get<std::string>().c_str());
  std::printf("%-28s %14s %14s %9s\n", "", "A", "B", "change");
  for (const auto& [program, cycles] : c["programs"].items()) {
    const double a = cycles["a"].is_null() ? 0 : cycles["a"].get<double>();
    const double b = cycles["b"].is_null() ? 0 : cycles["b"].get<double>();
    std::printf("%-28s %14s %14s %9s\n", (program + " cycles/step").c_str(),
                cycles["a"].is_null() ? "-" : rounded_with_commas(a).c_str(),
                cycles["b"].is_null() ? "-" : rounded_with_commas(b).c_str(),
                cycles["a"].is_null() || cycles["b"].is_null() ? "" : change(a, b).c_str());
  }
  for (const char* key : {"peak_tile_bytes", "total_bytes", "tiles_used", "vertices"}) {
    const double a = c["a"][key].get<double>(), b = c["b"][key].get<double>();
    std::printf("%-28s %14s %14s %9s\n", key, rounded_with_commas(a).c_str(), rounded_with_commas(b).c_str(),
                change(a, b).c_str());
  }
  const auto& ops = c["ops_changed"];
  std::printf("\n%zu op(s) changed, %llu unchanged", ops.size(),
              static_cast<unsigned long long>(c["ops_unchanged"].get<uint64_t>()));
  if (ops.empty()) {
    std::printf("\n");
    return;
  }
  std::printf("; by the change in cycles per step:\n%-44s %12s %12s %9s %7s %7s\n", "op", "A cycles",
              "B cycles", "change", "A tiles", "B tiles");
  for (size_t i = 0; i < std::min(ops.size(), kListedChanges); ++i) {
    const auto& op = ops[i];
    const auto cell = [&](const char* which, const char* what) {
      return op[which].is_null() ? std::string("-") : rounded_with_commas(op[which][what].get<double>());
    };
    const double a = op["a"].is_null() ? 0 : op["a"]["cycles"].get<double>();
    const double b = op["b"].is_null() ? 0 : op["b"]["cycles"].get<double>();
    std::printf("%-44s %12s %12s %9s %7s %7s\n", op["op"].get<std::string>().c_str(),
                cell("a", "cycles").c_str(), cell("b", "cycles").c_str(),
                op["b"].is_null() ? "gone" : change(a, b).c_str(), cell("a", "tiles").c_str(),
                cell("b", "tiles").c_str());
  }
  if (ops.size() > kListedChanges)
    std::printf("and %zu more (--json lists every one)\n", ops.size() - kListedChanges);
}

int run_compare(const CompareFlags& flags) {
  auto load = [&](const std::string& name) -> StatusOr<format::Executable> {
    if (names_a_model(name)) {
      return bad_option(name + ": a model; compare compares compiled executables (ipucc compile " + name +
                        " -o FILE.ipuexe, or its cache key)");
    }
    IPU_ASSIGN_OR_RETURN(ResolvedExecutable resolved, resolve_executable(name, flags.cache_dir));
    return std::move(resolved.loaded.executable);
  };
  StatusOr<format::Executable> a = load(flags.a);
  if (!a.ok()) return fail(kIpuccTool, a.status(), exit_code_for(a.status()));
  StatusOr<format::Executable> b = load(flags.b);
  if (!b.ok()) return fail(kIpuccTool, b.status(), exit_code_for(b.status()));
  StatusOr<nlohmann::json> compared = compare_executables(*a, *b);
  if (!compared.ok()) return fail(kIpuccTool, compared.status(), kExitBadExecutable);
  if (flags.json) {
    nlohmann::json out = json_document(kIpuccTool, "compare");
    out.update(*compared);
    out["a"]["executable"] = flags.a;
    out["b"]["executable"] = flags.b;
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    print_text(flags, *compared);
  }
  return kExitOk;
}

} // namespace

StatusOr<nlohmann::json> compare_executables(const format::Executable& a, const format::Executable& b) {
  IPU_ASSIGN_OR_RETURN(const std::vector<OpCost> ops_a, op_costs(a));
  IPU_ASSIGN_OR_RETURN(const std::vector<OpCost> ops_b, op_costs(b));
  std::map<std::string, std::pair<const OpCost*, const OpCost*>> ops;
  for (const OpCost& op : ops_a)
    ops[op.op].first = &op;
  for (const OpCost& op : ops_b)
    ops[op.op].second = &op;
  nlohmann::json changed = nlohmann::json::array();
  uint64_t unchanged = 0;
  std::vector<std::pair<double, nlohmann::json>> rows;
  for (const auto& [name, sides] : ops) {
    const auto [in_a, in_b] = sides;
    if (in_a != nullptr && in_b != nullptr && !differs(*in_a, *in_b)) {
      ++unchanged;
      continue;
    }
    const double delta = (in_b ? in_b->cycles : 0) - (in_a ? in_a->cycles : 0);
    rows.emplace_back(
        std::abs(delta),
        nlohmann::json{{"op", name}, {"a", side(in_a)}, {"b", side(in_b)}, {"cycles_change", delta}});
  }
  std::stable_sort(rows.begin(), rows.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
  for (auto& row : rows)
    changed.push_back(std::move(row.second));
  nlohmann::json sum_a = summary(a), sum_b = summary(b);
  nlohmann::json programs = nlohmann::json::object();
  for (const auto& [name, cycles] : sum_a["cycles_per_step"].items())
    programs[name] = {{"a", cycles}, {"b", sum_b["cycles_per_step"].value(name, nlohmann::json())}};
  for (const auto& [name, cycles] : sum_b["cycles_per_step"].items()) {
    if (!programs.contains(name)) programs[name] = {{"a", nullptr}, {"b", cycles}};
  }
  return nlohmann::json{{"a", std::move(sum_a)},
                        {"b", std::move(sum_b)},
                        {"programs", std::move(programs)},
                        {"ops_changed", std::move(changed)},
                        {"ops_unchanged", unchanged}};
}

std::function<int()> add_compare_command(CLI::App& app) {
  auto flags = std::make_shared<CompareFlags>();
  CLI::App* cmd = app.add_subcommand(
      "compare",
      "What changed between two compiles: cycles per program, memory, and each op whose cost moved");
  cmd->add_option("a", flags->a, "The first executable: a file or a cache key")->required();
  cmd->add_option("b", flags->b, "The second executable: a file or a cache key")->required();
  cmd->add_option("--cache-dir", flags->cache_dir,
                  "Where cache keys are looked up (default: the user's cache)");
  cmd->add_flag("--json", flags->json, "Print one JSON object (docs/json.md)");
  return [flags, cmd]() { return cmd->parsed() ? run_compare(*flags) : -1; };
}

} // namespace ipu::cli
