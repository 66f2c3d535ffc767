#include "compiler/driver/compile_internal.h"

#include <algorithm>
#include <map>
#include <utility>

#include "compiler/lowering/lower_context.h"
#include "compiler/lowering/pipeline_schedule.h"
#include "compiler/target/ipu_links.h"
#include "runtime/format/verifier.h"

namespace ipu::compiler {
namespace {

// Stages the measuring compile of the automatic split may use: consecutive layers share one when
// a model has more (lowering a stage per IPU costs a plan of its tiles each).
constexpr size_t kMaxMeasuredStages = 256;

} // namespace

StatusOr<MeasuredChain> measure_chain(const frontend::LoadedModel& loaded, const CompileOptions& options,
                                      const target::TargetSpec& target) {
  if (!options.stage_assignment.empty()) {
    return bad_option("--pipeline-stages chooses the stages: give it or --stage-assignment, not both");
  }
  MeasuredChain chain;
  chain.units = loaded.stage_units();
  const std::vector<std::string>& units = chain.units;
  const size_t groups = std::min(units.size(), kMaxMeasuredStages);
  CompileOptions measure = options;
  measure.pipeline_stages = 0;
  measure.stage_assignment.clear();
  for (size_t i = 0; i < units.size(); ++i)
    measure.stage_assignment.push_back(static_cast<int>(i * groups / units.size()));
  measure.gradient_accumulation = 1;
  measure.steps_per_execution = 1;
  measure.replicas = 1;
  measure.num_ipus = static_cast<uint32_t>(std::max<size_t>(1, groups));
  measure.schedule = lowering::Schedule::kSequential; // one micro-batch, no stashes beyond it
  measure.recompute = false;
  measure.recompute_checkpoints.clear();
  IPU_ASSIGN_OR_RETURN(Model model, load_model(loaded, measure, target.bytes_per_tile));
  // The measuring compile's executable is read for its estimates and thrown away: its weights'
  // values would only cost memory (BERT-base's are 340 MB, and half as much again in fp16 in the
  // executable). Nothing it estimates depends on them.
  for (int w : model.forward.graph.values_with_role(ir::Role::kWeight))
    model.forward.graph.value(w).initial = std::vector<float>();
  const bool graph_loss = !model.loss_output.empty();
  StatusOr<LoweredModel> lowered = lower_model(std::move(model), measure, target, true);
  if (!lowered.ok() && graph_loss && lowered.status().code() == StatusCode::kUnsupported) {
    // A loss the graph computes must sit on the last stage: measuring each node as its own stage
    // spreads it over several.
    return unsupported(
        lowered.status().message() +
        " (--pipeline-stages measures every node as a stage of its own, which a loss the graph "
        "computes in several nodes cannot be; give --stage-assignment instead)");
  }
  IPU_ASSIGN_OR_RETURN(LoweredModel measured, std::move(lowered));

  const format::ScheduleEstimate& estimate = measured.lowered.executable.estimates().schedule();
  lowering::StagePartitionProblem& problem = chain.problem;
  problem.stages = static_cast<int>(options.pipeline_stages);
  problem.bytes_per_tile = target.bytes_per_tile;
  problem.code_bytes_per_codelet = target.cycles.codelet_code_bytes;
  problem.unit_kind = loaded.is_onnx() ? "node" : "layer";
  const bool train = options.mode == Mode::kTrain;
  if (train && problem.stages > 1) {
    const lowering::Schedule schedule = options.schedule;
    const lowering::PipelinePlan plan =
        lowering::plan_pipeline(problem.stages, static_cast<int>(options.gradient_accumulation), schedule);
    problem.stash_depth = plan.stash_depth;
    problem.forward_depth = plan.forward_depth;
    problem.backward_depth = plan.backward_depth;
    problem.phased = schedule == lowering::Schedule::kGrouped;
  } else if (problem.stages > 1) {
    // A pipelined inference receives each boundary's values into one buffer (pipeline_inference.h).
    problem.forward_depth.assign(static_cast<size_t>(problem.stages - 1), 1);
  }
  problem.accumulates = train && (options.gradient_accumulation > 1 || options.replicas > 1);
  problem.recompute = train && options.recompute && problem.stages > 1;
  // Each unit's forward pass, from its work in the measuring compile's slots (its backward pass is
  // the rest of its busy cycles); all of it when inferring.
  std::vector<double> forward_cycles(static_cast<size_t>(estimate.busy_cycles_size()), 0);
  for (const format::ScheduleSlot& slot : estimate.slots()) {
    for (const format::SlotWork& work : slot.work()) {
      if (work.forward() && work.stage() < forward_cycles.size())
        forward_cycles[work.stage()] += work.cycles();
    }
  }
  std::vector<lowering::UnitMemory>& memory = measured.lowered.unit_memory;
  for (size_t i = 0; i < units.size(); ++i) {
    if (i == 0 || measure.stage_assignment[i] != measure.stage_assignment[i - 1]) {
      const size_t g = chain.group_begin.size();
      chain.group_begin.push_back(i);
      const double cycles = g < forward_cycles.size() ? estimate.busy_cycles(static_cast<int>(g)) : 0;
      problem.units.push_back({units[i], cycles,
                               train && g < forward_cycles.size() ? forward_cycles[g] : cycles,
                               g < memory.size() ? std::move(memory[g]) : lowering::UnitMemory()});
    }
  }
  // Bytes over each cut, each way: a value crosses every cut between its stage and the farthest
  // that reads it, forward (activations) or backward (the gradients that autodiff sends back).
  const size_t cuts = problem.units.empty() ? 0 : problem.units.size() - 1;
  std::vector<double> forward_bytes(cuts, 0), backward_bytes(cuts, 0);
  problem.forward_cut_tile_bytes.assign(cuts, 0);
  problem.backward_cut_tile_bytes.assign(cuts, 0);
  const ir::Graph& graph = measured.forward.graph;
  const lowering::Precision precision = options.precision;
  std::map<std::pair<int, bool>, std::pair<int, int>> crossing; // (value, forward) -> stage span
  for (const ir::Op& op : graph.ops()) {
    // Clipping's squared norms cross once per update, 4 bytes each: not a micro-batch's traffic.
    if (op.kind != ir::OpKind::kStageCopy || op.phase == ir::Phase::kClip) continue;
    const int value = op.inputs.at(0);
    const int from = graph.value(value).stage;
    auto [it, inserted] = crossing.try_emplace({value, op.phase == ir::Phase::kForward}, from, from);
    it->second = {std::min(it->second.first, op.stage), std::max(it->second.second, op.stage)};
  }
  for (const auto& [key, span] : crossing) {
    const ir::Value& value = graph.value(key.first);
    const int64_t elements = value.type.elements();
    // As the copy moves it: 2 bytes an element for an fp16 activation or gradient.
    const uint64_t element_bytes = format::dtype_size(lowering::stored_dtype(graph, value, precision));
    const double bytes = static_cast<double>(element_bytes) * static_cast<double>(elements);
    for (int cut = span.first; cut < span.second; ++cut) {
      const auto c = static_cast<size_t>(cut);
      (key.second ? forward_bytes : backward_bytes).at(c) += bytes;
      (key.second ? problem.forward_cut_tile_bytes : problem.backward_cut_tile_bytes).at(c) +=
          lowering::linear_tile_share(elements, target.tiles_per_ipu, element_bytes);
    }
  }
  for (size_t c = 0; c < cuts; ++c) {
    problem.forward_cut_cycles.push_back(target::neighbour_link_cycles(target, forward_bytes[c]));
    problem.backward_cut_cycles.push_back(target::neighbour_link_cycles(target, backward_bytes[c]));
  }
  return chain;
}

StatusOr<ChosenStages> choose_stages(const MeasuredChain& chain, const std::string& model_path) {
  StatusOr<lowering::StagePartition> partition = lowering::partition_stages(chain.problem);
  if (!partition.ok()) return partition.status().with_context(model_path);
  ChosenStages chosen;
  chosen.assignment.assign(chain.units.size(), 0);
  for (size_t s = 0; s < partition->first_unit.size(); ++s) {
    const size_t begin = chain.group_begin[static_cast<size_t>(partition->first_unit[s])];
    chosen.first_units.push_back(chain.units[begin]);
    for (size_t i = begin; i < chain.units.size(); ++i)
      chosen.assignment[i] = static_cast<int>(s);
  }
  chosen.partition = std::move(*partition);
  return chosen;
}

std::string refuse_overflowing_stages(MeasuredChain& chain, const ChosenStages& chosen,
                                      const lowering::MemoryPlan& plan, const target::TargetSpec& target) {
  const std::vector<int>& first = chosen.partition.first_unit;
  std::string firsts, why;
  for (size_t s = 0; s < first.size(); ++s) {
    firsts += (s == 0 ? "'" : ", '") + chosen.first_units[s] + "'";
    const uint32_t base = static_cast<uint32_t>(s) * target.tiles_per_ipu;
    uint32_t fullest = base;
    for (uint32_t t = base; t < base + target.tiles_per_ipu; ++t) {
      if (plan.peak_per_tile[t] > plan.peak_per_tile[fullest]) fullest = t;
    }
    const uint64_t peak = plan.peak_per_tile[fullest];
    if (peak <= target.bytes_per_tile) continue;
    const int end = s + 1 < first.size() ? first[s + 1] : static_cast<int>(chain.problem.units.size());
    chain.problem.refused.emplace_back(first[s], end);
    why += std::string(why.empty() ? "" : "; ") + "stage " + std::to_string(s) + " needs " +
           lowering::with_commas(peak) + " bytes on tile " + std::to_string(fullest - base) + " (bound " +
           lowering::with_commas(chosen.partition.stage_tile_bytes[s]) + ")";
  }
  return "the split starting at " + firsts + " does not fit its memory plan: " + why + " of " +
         lowering::with_commas(target.bytes_per_tile) + "; trying the next best split without " +
         (why.find(';') == std::string::npos ? "that stage" : "those stages");
}

StatusOr<std::vector<int>> stage_assignment_from_starts(const frontend::LoadedModel& model,
                                                        const std::vector<std::string>& starts) {
  const std::vector<std::string> units = model.stage_units();
  const std::string unit = model.is_onnx() ? "node" : "layer";
  std::vector<int> assignment;
  assignment.reserve(units.size());
  size_t next = 0; // the start looked for
  for (size_t i = 0; i < units.size(); ++i) {
    if (next < starts.size() && units[i] == starts[next]) {
      if (i == 0) {
        return bad_option("--stage-starts: '" + starts[next] + "' is the model's first " + unit +
                          ", where stage 0 begins; name where stages 1, 2, ... begin");
      }
      ++next;
    }
    assignment.push_back(static_cast<int>(next));
  }
  if (next == starts.size()) return assignment;
  const std::string& missing = starts[next];
  if (std::find(units.begin(), units.end(), missing) == units.end())
    return bad_option("--stage-starts: the model has no " + unit + " '" + missing + "'");
  return bad_option("--stage-starts: '" + missing + "' does not come after '" + starts.at(next - 1) +
                    "' in the model's order: give each " + unit + " once, in that order");
}

} // namespace ipu::compiler
