#include "compiler/passes/fuse_activations.h"

#include <algorithm>

namespace ipu::passes {

int fuse_conv_relu(ir::Graph& graph, const std::vector<int>& interface_values) {
  auto is_interface = [&](int value) {
    return std::find(interface_values.begin(), interface_values.end(), value) != interface_values.end();
  };
  std::vector<int> fused;
  for (const ir::Op& relu : graph.ops()) {
    if (relu.kind != ir::OpKind::kRelu) continue;
    const int pre_activation = relu.inputs[0];
    const int producer = graph.value(pre_activation).producer;
    if (producer < 0) continue;
    const ir::Op& conv = graph.op(producer);
    if (conv.kind != ir::OpKind::kConv || conv.phase != relu.phase || conv.stage != relu.stage) continue;
    if (is_interface(pre_activation) || graph.consumers(pre_activation).size() != 1) continue;
    fused.push_back(relu.id);
  }
  for (int id : fused) {
    const ir::Op& relu = graph.op(id);
    ir::Value& pre_activation = graph.value(relu.inputs[0]);
    ir::Op& conv = graph.op(pre_activation.producer);
    conv.attrs.fused_relu = true;
    conv.outputs[0] = relu.outputs[0];
    graph.value(relu.outputs[0]).producer = conv.id;
    pre_activation.producer = -1;  // produced and read by nothing now, so it never gets a tensor
  }
  graph.remove_ops(fused);
  return static_cast<int>(fused.size());
}

}  // namespace ipu::passes
