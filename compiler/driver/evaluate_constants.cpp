#include "compiler/driver/evaluate_constants.h"

#include <string>

#include "compiler/lowering/lower_graph.h"
#include "compiler/ops/op_table.h"
#include "compiler/target/target.h"
#include "runtime/format/executable_file.h"
#include "runtime/session/session.h"

namespace ipu::compiler {

StatusOr<std::vector<std::vector<float>>> evaluate_on_device(const ir::Graph& graph,
                                                             const std::vector<int>& outputs) {
  IPU_ASSIGN_OR_RETURN(target::TargetSpec target, target::target_preset("mk2"));
  target.num_ipus = 1;
  lowering::GraphInterface io; // no inputs: a predict program that streams the values out
  for (size_t i = 0; i < outputs.size(); ++i)
    io.outputs.push_back({outputs[i], "constant:" + std::to_string(i), "f4", false});
  IPU_ASSIGN_OR_RETURN(
      lowering::LoweringResult lowered,
      lowering::lower_graph(graph, io, target, lowering::LoweringOptions{}, ops::op_lowerings()));
  if (!lowered.memory.overflowing.empty())
    return resource_exhausted("the values computed from constants do not fit one IPU");
  format::Executable& exe = lowered.executable;
  exe.set_format_version(format::kFormatVersion);
  exe.set_model_name("constants");
  exe.set_mode("infer");
  format::PipelineInfo* pipeline = exe.mutable_pipeline();
  pipeline->set_num_stages(1);
  pipeline->set_gradient_accumulation(1);
  pipeline->set_replicas(1);
  pipeline->set_schedule("none");
  pipeline->add_stage_ipu(0);
  IPU_ASSIGN_OR_RETURN(std::unique_ptr<session::Session> session,
                       session::Session::create(std::move(exe), engine::EngineOptions{}));
  IPU_ASSIGN_OR_RETURN(session::InferResult result, session->infer({}));
  std::vector<std::vector<float>> values;
  for (const data::NpyArray& array : result.outputs)
    values.push_back(data::floats_as_is(array));
  return values;
}

} // namespace ipu::compiler
