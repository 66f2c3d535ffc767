#include "compiler/passes/lamb_update.h"

#include <string>

namespace ipu::passes {

Status add_lamb_update(ir::Graph& graph, int weight, int gradient, int m, int v, int step,
                       int hyper_parameters, const ir::LambAttrs& attrs) {
  const ir::Value w = graph.value(weight);
  IPU_ASSIGN_OR_RETURN(int moments, graph.add_op(ir::OpKind::kLambMoments, w.name + "/lamb_moments",
                                                 {weight, gradient, m, v, step, hyper_parameters}, attrs,
                                                 ir::Phase::kUpdate, w.stage));
  const int update = graph.op(moments).outputs[0];
  IPU_ASSIGN_OR_RETURN(int weight_norm,
                       graph.add_op(ir::OpKind::kSquaredNorm, w.name + "/weight_norm", {weight},
                                    ir::SquaredNormAttrs{1.0f}, ir::Phase::kUpdate, w.stage));
  IPU_ASSIGN_OR_RETURN(int update_norm,
                       graph.add_op(ir::OpKind::kSquaredNorm, w.name + "/update_norm", {update},
                                    ir::SquaredNormAttrs{1.0f}, ir::Phase::kUpdate, w.stage));
  return graph
      .add_op(ir::OpKind::kLambApply, w.name + "/update",
              {weight, update, graph.op(weight_norm).outputs[0], graph.op(update_norm).outputs[0],
               hyper_parameters},
              attrs, ir::Phase::kUpdate, w.stage)
      .status();
}

} // namespace ipu::passes
