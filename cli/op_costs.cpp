#include "cli/op_costs.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>

#include "compiler/lowering/program_estimator.h"
#include "compiler/target/target.h"
#include "runtime/format/host_contract.h"
#include "runtime/format/verifier.h"

namespace ipu::cli {
namespace {

// How many times per step the main program runs each compute set.
StatusOr<std::vector<double>> runs_per_step(const format::Executable& exe) {
  const std::string_view main = exe.mode() == "train" ? format::kTrainProgram : format::kPredictProgram;
  const format::NamedProgram* program = nullptr;
  for (const format::NamedProgram& p : exe.programs()) {
    if (p.name() == main) program = &p;
  }
  if (program == nullptr) return invalid_argument("the executable has no " + std::string(main) + " program");
  const uint32_t replicas = format::replica_count(exe);
  IPU_ASSIGN_OR_RETURN(const target::TargetSpec target, target::target_of(exe.target(), replicas));
  const lowering::ProgramEstimator estimator(exe, target, replicas);
  std::vector<double> runs(static_cast<size_t>(exe.compute_sets_size()), 0.0);
  // Every step visited (no budget): counting is cheap, and a loop cut short would be miscounted.
  uint64_t unlimited = UINT64_MAX;
  const double cycles = estimator.place(
      program->program(), 0,
      [&](const lowering::PlacedStep& step) {
        if (step.kind == lowering::PlacedStep::Kind::kComputeSet) runs[step.program->execute()] += 1;
      },
      unlimited);
  const double steps =
      program->cycles_per_step() > 0 ? cycles / static_cast<double>(program->cycles_per_step()) : 1;
  for (double& r : runs)
    r /= std::max(1.0, std::round(steps));
  return runs;
}

} // namespace

StatusOr<std::vector<OpCost>> op_costs(const format::Executable& exe) {
  IPU_ASSIGN_OR_RETURN(const std::vector<double> runs, runs_per_step(exe));
  std::map<std::string, OpCost> by_name;
  std::map<std::string, std::set<uint32_t>> tiles;
  for (int c = 0; c < exe.compute_sets_size(); ++c) {
    const format::ComputeSet& cs = exe.compute_sets(c);
    if (cs.vertices_size() == 0) continue;
    // Each op's vertices' compute cycles in this set; unnamed vertices belong to the set itself.
    std::map<std::string, double> work;
    double total_work = 0;
    for (const format::Vertex& v : cs.vertices()) {
      const std::string& op =
          static_cast<int>(v.op()) < cs.ops_size() ? cs.ops(static_cast<int>(v.op())) : cs.name();
      work[op] += static_cast<double>(v.cycles());
      total_work += static_cast<double>(v.cycles());
      OpCost& cost = by_name[op];
      cost.vertices += 1;
      tiles[op].insert(v.tile());
    }
    const double run = runs[static_cast<size_t>(c)];
    for (const auto& [op, cycles] : work) {
      const double share = total_work > 0 ? cycles / total_work : 1.0 / static_cast<double>(work.size());
      OpCost& cost = by_name[op];
      cost.cycles += run * share * static_cast<double>(cs.cycles());
      cost.exchange_bytes += run * share * static_cast<double>(cs.exchange_bytes());
      cost.compute_sets += 1;
    }
  }
  std::vector<OpCost> out;
  out.reserve(by_name.size());
  for (auto& [name, cost] : by_name) {
    cost.op = name;
    cost.tiles = static_cast<uint32_t>(tiles[name].size());
    out.push_back(std::move(cost));
  }
  std::sort(out.begin(), out.end(), [](const OpCost& a, const OpCost& b) {
    return a.cycles != b.cycles ? a.cycles > b.cycles : a.op < b.op;
  });
  return out;
}

} // namespace ipu::cli
