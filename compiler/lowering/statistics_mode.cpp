#include "compiler/lowering/statistics_mode.h"

#include <map>
#include <string>

#include "compiler/lowering/program_builder.h"
#include "runtime/format/tensor_kinds.h"

namespace ipu::lowering {

StatisticsModeSets lower_statistics_mode(LowerContext& ctx, const ir::Graph& graph) {
  std::map<int, std::vector<int>> flags_of_stage;
  for (int v : graph.values_with_role(ir::Role::kStatisticsMode))
    flags_of_stage[graph.value(v).stage].push_back(v);
  StatisticsModeSets sets;
  for (const bool training : {true, false}) {
    for (const auto& [stage, flags] : flags_of_stage) {
      ctx.begin_compute_set(
          std::string("statistics_mode/") + (training ? "train/" : "infer/") + std::to_string(stage), stage);
      for (int flag : flags) {
        ctx.begin_op(graph.value(flag).name);
        const uint32_t t = ctx.tensor(flag);
        // Unary's affine map with a zero slope: the flag becomes the constant, whatever it held.
        VertexSpec v;
        v.codelet = format::Codelet::kUnary;
        v.operands = {t, t};
        using P = format::params::Unary;
        using F = format::fparams::Unary;
        v.params = format::make_params<P>(
            {{P::kKind, static_cast<int64_t>(format::UnaryKind::kAffine)}, {P::kBegin, 0}, {P::kEnd, 1}});
        v.fparams = format::make_fparams<F>({{F::kAlpha, 0.0f}, {F::kBeta, training ? 1.0f : 0.0f}});
        v.compute_cycles = 1.0;
        v.reads = {flat_region(t, 0, 1)};
        v.in_place = {flat_region(t, 0, 1)};
        ctx.emit(ctx.take_tiles(1)[0], std::move(v));
      }
      if (auto index = ctx.end_compute_set()) (training ? sets.training : sets.inference).push_back(*index);
    }
  }
  return sets;
}

format::Program after_sets(const std::vector<uint32_t>& sets, format::Program body) {
  if (sets.empty()) return body;
  // Inside a step program's Repeat, so that the program stays a Repeat (what tools take a step
  // program to be) and every step sets the mode: a compute set per step, a few hundred cycles.
  format::Program* inner = body.has_repeat() ? body.mutable_repeat()->mutable_body() : &body;
  format::Sequence seq;
  ProgramBuilder::execute(seq, sets);
  *seq.add_steps() = std::move(*inner);
  *inner = ProgramBuilder::sequence(std::move(seq));
  return body;
}

} // namespace ipu::lowering
