// Shape and lowering helpers shared by the generic tensor ops (elementwise_ops.cpp,
// movement_ops.cpp, reduce_ops.cpp): the split of an output range over tiles, and the gradient
// helpers that undo broadcasting (broadcasting and strides themselves: compiler/ir/shape_util.h).
#pragma once

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/op_registry.h"
#include "compiler/ir/shape_util.h"
#include "compiler/lowering/lower_context.h"
#include "compiler/lowering/split_helpers.h"
#include "runtime/format/tensor_kinds.h"

namespace ipu::ops {

// Error unless the rank is at most the codelets' limit.
Status check_rank(const ir::TensorType& type);

// The least and greatest Σ idx_k·strides_k over the indices of `dims` whose row-major positions
// lie in [first, last] (inclusive): the part of an input that the outputs there read. Exact.
std::pair<int64_t, int64_t> strided_extent(const std::vector<int64_t>& dims,
                                           const std::vector<int64_t>& strides, int64_t first, int64_t last);

// The input elements that the outputs [begin, end) of a strided copy read, as at most
// `max_regions` regions of `tensor`: out[idx] = in[offset + Σ idx_k·strides_k] where idx lies in
// the box [lo, hi) (outside it the output is a fill, which reads nothing). Each output row (the
// last axis) reads a run or a strided column; successive rows that continue a block (a
// transpose's rows, a head split's slices) join it. A read that repeats elements (a broadcast,
// overlapping windows) or needs more regions than that is the range strided_extent bounds,
// clamped to the input's `in_elements`. Empty when every output is a fill.
// The regions a vertex's read may take before it counts the range they span instead: each is a
// descriptor in the vertex and the exchange.
inline constexpr size_t kMaxStridedReadRegions = 64;
std::vector<lowering::Region> strided_read_regions(uint32_t tensor, const std::vector<int64_t>& dims,
                                                   const std::vector<int64_t>& strides, int64_t offset,
                                                   const std::vector<int64_t>& lo,
                                                   const std::vector<int64_t>& hi, int64_t in_elements,
                                                   int64_t begin, int64_t end, size_t max_regions);

// Sums the shares of a [shares, elements] partials temporary into `out` (out[i] = Σ_s
// partials[s·elements + i], a Reduce in order) in the compute set after the open one: `reduce`
// splits out's elements over vertices, placed on consecutive tiles of the IPU from `first_tile`
// (the first of those that computed partials) round the IPU, so a reduce with more vertices than
// the op had tiles spreads as poplibs' reductions do instead of stacking receive buffers.
// A MatMul split over K, a convolution split over input channels, its input gradient over output
// channels and its kernel gradient over samples or rows end so.
// `kind` kSumRelu takes max(0, ·) of each sum: a convolution whose Relu was fused in.
void emit_sum_of_shares(lowering::LowerContext& ctx, uint32_t partials, uint32_t out, int64_t shares,
                        int64_t elements, const lowering::Split& reduce, uint32_t first_tile,
                        format::ReduceKind kind = format::ReduceKind::kSum);

// emit_sum_of_shares with the reduce split over the whole IPU (plan_split at the partial-sum rate),
// as a convolution's plan estimates its reduce: a deep layer's dW (2.4 M elements at 512 × 512 ×
// 3 × 3) reduced on the few tiles of a plan split over samples would give each of them more
// receive buffers than a tile holds.
void emit_spread_sum_of_shares(lowering::LowerContext& ctx, uint32_t partials, uint32_t out, int64_t shares,
                               int64_t elements, uint32_t first_tile,
                               format::ReduceKind kind = format::ReduceKind::kSum);

// How the outputs of an op read one input: output index idx (row-major over `dims`, the output's
// elements) reads offsets Σ idx_k·strides_k, plus every offset of the axes it reduces over
// (`reduced_dims` at `reduced_strides`: a reduction's other axes).
struct InputAccess {
  std::vector<int64_t> dims, strides;
  std::vector<int64_t> reduced_dims = {}, reduced_strides = {};
};

// The input elements that the outputs [begin, end) of a reduction read (kept axes `dims` at
// `strides`, each output reading all of the reduced axes): the kept axes' runs, each repeated
// down the reduced axis as a block, when the reduced axes make one evenly strided axis (a column
// sum of a [rows, n] matrix: one block of rows × its columns); otherwise the range they span,
// clamped to `in_elements`.
std::vector<lowering::Region> reduction_read_regions(uint32_t tensor, const InputAccess& access,
                                                     int64_t in_elements, int64_t begin, int64_t end);

// Splits the output of `op` (n elements) over tiles, or places it where an input of its shape
// lives (lowering::lower_where_operands_live); each vertex gets params from make(begin, end). It reads an
// input of the output's shape at [begin, end), one with an `access` entry at the range its outputs map to,
// and any other whole.
template <typename Make>
void lower_output_range(lowering::LowerContext& ctx, const ir::Op& op, format::Codelet codelet,
                        double cycles_per_element, const std::vector<float>& fparams, Make&& make,
                        const std::vector<InputAccess>& access = {});

// Gradient helpers: each adds backward-phase ops named after `op` and returns the new value.
StatusOr<int> grad_op(ir::GradContext& ctx, const ir::Op& op, ir::OpKind kind, std::vector<int> inputs,
                      ir::OpAttrs attrs, const std::string& suffix);
StatusOr<int> grad_unary(ir::GradContext& ctx, const ir::Op& op, format::UnaryKind kind, int x, float alpha,
                         float beta, const std::string& suffix);
StatusOr<int> grad_binary(ir::GradContext& ctx, const ir::Op& op, format::BinaryKind kind, int a, int b,
                          const std::string& suffix);
// Sums `gradient` (shaped like the broadcast output) over the axes along which a value of
// `shape` was broadcast, and reshapes it to `shape`. Shapes are taken by value: callers pass a
// graph value's shape, which the ops added here may move.
StatusOr<int> unbroadcast(ir::GradContext& ctx, const ir::Op& op, int gradient, std::vector<int64_t> shape,
                          const std::string& suffix);
// `value` broadcast to `shape` (a StridedCopy with zero strides; the value itself if equal).
StatusOr<int> broadcast_to(ir::GradContext& ctx, const ir::Op& op, int value,
                           const std::vector<int64_t>& shape, const std::string& suffix);

template <typename Make>
void lower_output_range(lowering::LowerContext& ctx, const ir::Op& op, format::Codelet codelet,
                        double cycles_per_element, const std::vector<float>& fparams, Make&& make,
                        const std::vector<InputAccess>& access) {
  const ir::Graph& g = ctx.graph();
  const ir::TensorType& out = g.value(op.outputs[0]).type;
  const int64_t n = out.elements();
  std::vector<uint32_t> inputs;
  for (int in : op.inputs)
    inputs.push_back(ctx.tensor(in));
  const uint32_t y = ctx.tensor(op.outputs[0]);
  lowering::ElementwiseWork work{n, 1, cycles_per_element, 4.0 * static_cast<double>(inputs.size()), {}};
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (g.value(op.inputs[i]).type.shape == out.shape) work.aligned.push_back(inputs[i]);
  }
  lowering::lower_where_operands_live(ctx, work, [&](int64_t begin, int64_t end) {
    lowering::VertexSpec v;
    v.codelet = codelet;
    v.operands = inputs;
    v.operands.push_back(y);
    v.params = make(begin, end);
    v.fparams = fparams;
    v.compute_cycles = cycles_per_element * static_cast<double>(end - begin);
    for (size_t i = 0; i < inputs.size(); ++i) {
      const ir::TensorType& t = g.value(op.inputs[i]).type;
      if (t.shape == out.shape) {
        v.reads.push_back(lowering::flat_region(inputs[i], begin, end));
      } else if (i < access.size() && !access[i].dims.empty()) {
        for (const lowering::Region& r :
             reduction_read_regions(inputs[i], access[i], t.elements(), begin, end))
          v.reads.push_back(r);
      } else {
        v.reads.push_back(lowering::flat_region(inputs[i], 0, t.elements()));
      }
    }
    v.writes = {lowering::flat_region(y, begin, end)};
    return v;
  });
}

} // namespace ipu::ops
