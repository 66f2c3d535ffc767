#include "compiler/passes/loss_scaling.h"

#include <map>
#include <string>

#include "compiler/passes/stage_gather.h"
#include "runtime/format/host_contract.h"

namespace ipu::passes {

namespace {

StatusOr<int> loss_scale_factor(ir::Graph& graph, int hyper, bool reciprocal, ir::Phase phase, int stage) {
  ir::LossScaleFactorAttrs attrs;
  attrs.reciprocal = reciprocal;
  const std::string name = std::string(reciprocal ? "loss_scale/reciprocal" : "loss_scale/factor") +
                           "@stage" + std::to_string(stage);
  IPU_ASSIGN_OR_RETURN(int op,
                       graph.add_op(ir::OpKind::kLossScaleFactor, name, {hyper}, attrs, phase, stage));
  const int factor = graph.op(op).outputs[0];
  graph.value(factor).keeps_float32 = true; // a scale may exceed binary16's largest value
  return factor;
}

} // namespace

Status scale_loss_gradient(ir::GradContext& context, const ir::Op& loss, int hyper) {
  ir::Graph& graph = context.graph();
  int factor = -1;
  for (int in : loss.inputs) {
    const int gradient = context.gradient_of(in);
    if (gradient < 0) continue;
    if (factor < 0) {
      IPU_ASSIGN_OR_RETURN(factor, loss_scale_factor(graph, hyper, false, ir::Phase::kBackward, loss.stage));
    }
    IPU_ASSIGN_OR_RETURN(int op,
                         graph.add_op(ir::OpKind::kScaleGradient, graph.value(gradient).name + "/scaled",
                                      {gradient, factor}, {}, ir::Phase::kBackward, loss.stage));
    context.replace_gradient(in, graph.op(op).outputs[0]);
  }
  return Status();
}

StatusOr<std::vector<int>> unscale_gradients(ir::Graph& graph, const std::vector<int>& gradients,
                                             const std::function<int(int)>& hyper_of_stage) {
  std::map<int, int> factor_of_stage;
  std::vector<int> unscaled;
  unscaled.reserve(gradients.size());
  for (int g : gradients) {
    const int stage = graph.value(g).stage;
    auto found = factor_of_stage.find(stage);
    if (found == factor_of_stage.end()) {
      IPU_ASSIGN_OR_RETURN(int factor,
                           loss_scale_factor(graph, hyper_of_stage(stage), true, ir::Phase::kClip, stage));
      found = factor_of_stage.emplace(stage, factor).first;
    }
    IPU_ASSIGN_OR_RETURN(int op, graph.add_op(ir::OpKind::kScaleGradient, graph.value(g).name + "/unscaled",
                                              {g, found->second}, {}, ir::Phase::kClip, stage));
    unscaled.push_back(graph.op(op).outputs[0]);
  }
  return unscaled;
}

int add_loss_scale_state(ir::Graph& graph, int stage, float initial_scale) {
  std::string name(format::kLossScaleStateTensor);
  if (stage != 0) name += "@" + std::to_string(stage);
  const int state = graph.add_value(name, {ir::DType::kFloat32, {2}}, ir::Role::kOptimizerState);
  graph.value(state).initial = {initial_scale, 0.0f};
  graph.value(state).stage = stage;
  return state;
}

Status add_dynamic_loss_scale_update(ir::Graph& graph, const std::vector<int>& unscaled,
                                     const std::vector<int>& accumulators,
                                     const std::map<int, int>& state_of_stage, int64_t growth_steps) {
  if (unscaled.empty()) return Status(); // no gradient: nothing to check, nothing to skip
  // Each stage's finite check: the squared norm of its gradients times 0, 0 or NaN.
  IPU_ASSIGN_OR_RETURN(const StageValues checks,
                       squared_norm_per_stage(graph, unscaled, 0.0f, "loss_scale/finite_check"));
  // Every stage that scales keeps the scale: all run the same schedule on the same checks.
  for (const auto& [stage, state] : state_of_stage) {
    IPU_ASSIGN_OR_RETURN(int all, gather_onto_stage(graph, checks, stage,
                                                    "loss_scale/finite_checks@stage" + std::to_string(stage),
                                                    ir::Phase::kClip, ir::Phase::kLossScale));
    ir::LossScaleUpdateAttrs attrs;
    attrs.growth_steps = growth_steps;
    IPU_RETURN_IF_ERROR(graph
                            .add_op(ir::OpKind::kLossScaleUpdate,
                                    "loss_scale/update@stage" + std::to_string(stage), {state, all}, attrs,
                                    ir::Phase::kLossScale, stage)
                            .status());
  }
  for (int acc : accumulators) {
    IPU_RETURN_IF_ERROR(graph
                            .add_op(ir::OpKind::kZeroGradient, graph.value(acc).name + "/zero", {acc}, {},
                                    ir::Phase::kSkip, graph.value(acc).stage)
                            .status());
  }
  return Status();
}

} // namespace ipu::passes
