// Shape and lowering helpers shared by the generic tensor ops (elementwise_ops.cpp,
// movement_ops.cpp, reduce_ops.cpp): numpy broadcasting, row-major strides, the split of an
// output range over tiles, and the gradient helpers that undo broadcasting.
#pragma once

#include <string>
#include <vector>

#include "compiler/ir/op_registry.h"
#include "compiler/lowering/lower_context.h"
#include "compiler/lowering/split_helpers.h"
#include "runtime/format/tensor_kinds.h"

namespace ipu::ir {

// The numpy broadcast of two shapes, or an error naming both.
StatusOr<std::vector<int64_t>> broadcast_shapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b);
// Row-major strides of `shape`.
std::vector<int64_t> row_major_strides(const std::vector<int64_t>& shape);
// Strides with which an operand of shape `in` is read at each index of `out` (its broadcast):
// aligned on the right, 0 where `in` has no axis or a 1 against a larger output dimension.
std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& in, const std::vector<int64_t>& out);
// Error unless the rank is at most the codelets' limit.
Status check_rank(const TensorType& type);

// Splits the output of `op` (n elements) over tiles; each vertex gets params from
// make(begin, end) and reads the inputs whole unless they have the output's shape.
template <typename Make>
void lower_output_range(lowering::LowerContext& ctx, const Op& op, format::Codelet codelet, double cycles_per_element,
                        const std::vector<float>& fparams, Make&& make);

// Gradient helpers: each adds backward-phase ops named after `op` and returns the new value.
StatusOr<int> grad_op(GradContext& ctx, const Op& op, OpKind kind, std::vector<int> inputs, OpAttrs attrs,
                      const std::string& suffix);
StatusOr<int> grad_unary(GradContext& ctx, const Op& op, format::UnaryKind kind, int x, float alpha, float beta,
                         const std::string& suffix);
StatusOr<int> grad_binary(GradContext& ctx, const Op& op, format::BinaryKind kind, int a, int b,
                          const std::string& suffix);
// Sums `gradient` (shaped like the broadcast output) over the axes along which a value of
// `shape` was broadcast, and reshapes it to `shape`. Shapes are taken by value: callers pass a
// graph value's shape, which the ops added here may move.
StatusOr<int> unbroadcast(GradContext& ctx, const Op& op, int gradient, std::vector<int64_t> shape,
                          const std::string& suffix);
// `value` broadcast to `shape` (a StridedCopy with zero strides; the value itself if equal).
StatusOr<int> broadcast_to(GradContext& ctx, const Op& op, int value, std::vector<int64_t> shape,
                           const std::string& suffix);

template <typename Make>
void lower_output_range(lowering::LowerContext& ctx, const Op& op, format::Codelet codelet, double cycles_per_element,
                        const std::vector<float>& fparams, Make&& make) {
  const Graph& g = ctx.graph();
  const TensorType& out = g.value(op.outputs[0]).type;
  const int64_t n = out.elements();
  std::vector<uint32_t> inputs;
  for (int in : op.inputs) inputs.push_back(ctx.tensor(in));
  const uint32_t y = ctx.tensor(op.outputs[0]);
  lowering::lower_split(ctx, n, cycles_per_element, 4.0 * static_cast<double>(inputs.size()),
                        [&](uint32_t tile, int64_t begin, int64_t end) {
                          lowering::VertexSpec v;
                          v.codelet = codelet;
                          v.operands = inputs;
                          v.operands.push_back(y);
                          v.params = make(begin, end);
                          v.fparams = fparams;
                          v.compute_cycles = cycles_per_element * static_cast<double>(end - begin);
                          for (size_t i = 0; i < inputs.size(); ++i) {
                            const TensorType& t = g.value(op.inputs[i]).type;
                            v.reads.push_back(t.shape == out.shape ? lowering::flat_region(inputs[i], begin, end)
                                                                   : lowering::flat_region(inputs[i], 0, t.elements()));
                          }
                          v.writes = {lowering::flat_region(y, begin, end)};
                          ctx.emit(tile, std::move(v));
                        });
}

}  // namespace ipu::ir
