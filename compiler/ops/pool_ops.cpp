// MaxPool and AveragePool over NCHW values (global pooling is a window over the whole plane) and
// their gradients. A vertex owns whole planes (n, c), or a band of rows of one plane.
#include "compiler/ir/op_registry.h"
#include "compiler/ir/window_geometry.h"
#include "compiler/lowering/split_helpers.h"
#include "compiler/ops/op_table.h"

namespace ipu::ops {
using ir::Op;
using ir::OpKind;
using ir::TensorType;
using ir::WindowGradAttrs;

namespace {

using lowering::LowerContext;

Status infer_pool(const ir::Graph& g, const Op& op, std::vector<TensorType>& out) {
  const TensorType& x = g.value(op.inputs[0]).type;
  if (x.shape.size() != 4) return invalid_argument("expects an NCHW input, got " + x.to_string());
  IPU_ASSIGN_OR_RETURN(std::vector<int64_t> shape,
                       ir::window_output_shape(x, op.attrs<ir::WindowAttrs>(), x.shape[1]));
  out.push_back({ir::DType::kFloat32, shape});
  return Status();
}

// MaxPoolGrad(X, dY) and AveragePoolGrad(dY) produce dX of their shape; dY must be the pooled shape.
Status infer_pool_grad(const ir::Graph& g, const Op& op, std::vector<TensorType>& out) {
  const TensorType x{ir::DType::kFloat32, op.attrs<WindowGradAttrs>().shape};
  if (x.shape.size() != 4) return invalid_argument("expects an NCHW shape");
  IPU_ASSIGN_OR_RETURN(std::vector<int64_t> y,
                       ir::window_output_shape(x, op.attrs<WindowGradAttrs>().window, x.shape[1]));
  if (g.value(op.inputs.back()).type.shape != y)
    return invalid_argument("dY does not match the pooled shape");
  out.push_back(x);
  return Status();
}

Status grad_pool(ir::GradContext& ctx, const Op& op) {
  const int dy = ctx.gradient_of(op.outputs[0]);
  const int x = op.inputs[0];
  if (dy < 0 || !ctx.needs_gradient(x)) return Status();
  WindowGradAttrs attrs;
  attrs.window = op.attrs<ir::WindowAttrs>();
  attrs.shape = ctx.graph().value(x).type.shape;
  // MaxPool routes dY to the window's maximum, so it reads X again; AveragePool needs only dY.
  const bool max = op.kind == OpKind::kMaxPool;
  IPU_ASSIGN_OR_RETURN(int id, ctx.graph().add_op(max ? OpKind::kMaxPoolGrad : OpKind::kAveragePoolGrad,
                                                  op.name + "/grad",
                                                  max ? std::vector<int>{x, dy} : std::vector<int>{dy}, attrs,
                                                  ir::Phase::kBackward, op.stage));
  return ctx.add_gradient(x, ctx.graph().op(id).outputs[0]);
}

format::Codelet codelet_of(OpKind kind) {
  switch (kind) {
  case OpKind::kMaxPool:
    return format::Codelet::kMaxPool;
  case OpKind::kMaxPoolGrad:
    return format::Codelet::kMaxPoolGrad;
  case OpKind::kAveragePool:
    return format::Codelet::kAveragePool;
  default:
    return format::Codelet::kAveragePoolGrad;
  }
}

// A pooling op's input X [N, C, H, W] and output Y [N, C, OH, OW] (a gradient's dX and dY) and
// its window.
struct PoolShape {
  bool forward;
  const std::vector<int64_t>& x;
  const std::vector<int64_t>& y;
  const ir::WindowAttrs& win;
};
PoolShape pool_shape(const ir::Graph& g, const Op& op) {
  const bool forward = op.kind == OpKind::kMaxPool || op.kind == OpKind::kAveragePool;
  return {forward, forward ? g.value(op.inputs[0]).type.shape : op.attrs<WindowGradAttrs>().shape,
          forward ? g.value(op.outputs[0]).type.shape : g.value(op.inputs.back()).type.shape,
          ir::window_of(op)};
}

// The rows a pooling vertex owns: output rows in the forward pass, input rows (of dX) in the
// gradients', whose windows scatter into them.
struct PoolRows {
  int64_t begin, end;
};

// One vertex of planes [pb, pe) and rows [rows.begin, rows.end) of them; a band narrower than the
// plane has a single plane. It reads the rows of each input its rows' windows reach and costs one
// compare-or-add per tap of every output it visits.
void emit_pool_vertex(LowerContext& ctx, const Op& op, uint32_t tile, int64_t pb, int64_t pe, PoolRows rows) {
  const auto [forward, x, y, win] = pool_shape(ctx.graph(), op);
  const bool average = op.kind == OpKind::kAveragePool || op.kind == OpKind::kAveragePoolGrad;
  const int64_t in_plane = x[2] * x[3], out_plane = y[2] * y[3];
  const bool whole = rows.begin == 0 && rows.end == (forward ? y[2] : x[2]);
  // The output rows the vertex visits (its own forward; a gradient's, the rows of dY whose windows
  // reach its rows of dX) and the input rows their windows reach.
  using Rows = std::pair<int64_t, int64_t>;
  const auto [ob, oe] = forward ? Rows{rows.begin, rows.end}
                        : whole ? Rows{0, y[2]}
                                : ir::window_output_rows_reaching(y[2], win, rows.begin, rows.end);
  const auto [ib, ie] = oe > ob ? ir::window_input_rows(x[2], win, ob, oe) : Rows{0, 0};

  lowering::VertexSpec v;
  v.codelet = codelet_of(op.kind);
  for (int in : op.inputs)
    v.operands.push_back(ctx.tensor(in));
  const uint32_t out = ctx.tensor(op.outputs[0]);
  v.operands.push_back(out);
  const std::vector<int64_t> window = ir::window_params(x, y, win);
  if (average) {
    using P = format::params::AveragePool; // AveragePoolGrad's layout is the same
    static_assert(format::same_layout<P, format::params::AveragePoolGrad>);
    v.params = format::make_params<P>(window, {{P::kCountIncludePad, win.count_include_pad},
                                               {P::kPlaneBegin, pb},
                                               {P::kPlaneEnd, pe},
                                               {P::kRowBegin, rows.begin},
                                               {P::kRowEnd, rows.end}});
    if (whole) v.params.resize(P::kRowBegin);
  } else {
    using P = format::params::MaxPool; // MaxPoolGrad's layout is the same
    static_assert(format::same_layout<P, format::params::MaxPoolGrad>);
    v.params = format::make_params<P>(
        window,
        {{P::kPlaneBegin, pb}, {P::kPlaneEnd, pe}, {P::kRowBegin, rows.begin}, {P::kRowEnd, rows.end}});
    if (whole) v.params.resize(P::kRowBegin);
  }
  v.compute_cycles = static_cast<double>((oe - ob) * y[3] * win.kernel[0] * win.kernel[1]) /
                     ctx.target().cycles.vector_flops_per_cycle * static_cast<double>(pe - pb);
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    const bool is_x = forward || (op.kind == OpKind::kMaxPoolGrad && i == 0);
    if (whole) {
      const int64_t plane = is_x ? in_plane : out_plane;
      v.reads.push_back(lowering::flat_region(v.operands[i], pb * plane, pe * plane));
    } else if (oe > ob) {
      const int64_t base = pb * (is_x ? in_plane : out_plane);
      v.reads.push_back(is_x ? lowering::flat_region(v.operands[i], base + ib * x[3], base + ie * x[3])
                             : lowering::flat_region(v.operands[i], base + ob * y[3], base + oe * y[3]));
    }
  }
  const int64_t plane = forward ? out_plane : in_plane, width = forward ? y[3] : x[3];
  v.writes = {
      whole ? lowering::flat_region(out, pb * plane, pe * plane)
            : lowering::flat_region(out, pb * plane + rows.begin * width, pb * plane + rows.end * width)};
  ctx.emit(tile, std::move(v));
}

// Planes, and when there are at most half as many planes as tiles, bands of rows within them (as
// poplibs' pooling planner splits the field over tiles beside the batch and channels). The split
// is planned over (plane, band) items of the finest bands that leave a tile for each; when it
// gives a vertex several items, the bands widen to that many, so that every vertex owns one band
// of one plane (one region of the output on its tile, which the ops after read where it lies); when
// it gives a vertex a plane's worth or more, the planes stay whole.
Status lower_pool(LowerContext& ctx, const Op& op) {
  const auto [forward, x, y, win] = pool_shape(ctx.graph(), op);
  const int64_t planes = x[0] * x[1], rows = forward ? y[2] : x[2];
  const double per_plane = static_cast<double>(y[2] * y[3] * win.kernel[0] * win.kernel[1]) /
                           ctx.target().cycles.vector_flops_per_cycle;
  const double bytes = 4.0 * static_cast<double>(x[2] * x[3] + y[2] * y[3]);
  const int64_t finest = std::clamp<int64_t>(ctx.target().tiles_per_ipu / planes, 1, rows);
  const auto fb = static_cast<double>(finest);
  const lowering::Split split =
      finest > 1 ? lowering::plan_split(planes * finest, per_plane / fb, bytes / fb, 2 * bytes / fb,
                                        ctx.target(), ctx.target().tiles_per_ipu)
                 : lowering::Split{};
  if (finest == 1 || split.chunk >= finest) {
    lowering::lower_split(ctx, planes, per_plane, bytes, [&](uint32_t tile, int64_t pb, int64_t pe) {
      emit_pool_vertex(ctx, op, tile, pb, pe, {0, rows});
    });
    return Status();
  }
  const int64_t band = lowering::ceil_div(rows, finest / split.chunk);
  const int64_t bands = lowering::ceil_div(rows, band);
  const std::vector<uint32_t> tiles = ctx.take_tiles(planes * bands);
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t k = 0; k < bands; ++k) {
      emit_pool_vertex(ctx, op, tiles[static_cast<size_t>(p * bands + k)], p, p + 1,
                       {k * band, std::min(rows, (k + 1) * band)});
    }
  }
  return Status();
}

} // namespace

const OpDefinition& max_pool_op() {
  static const OpDefinition def{{OpKind::kMaxPool, 1, infer_pool, grad_pool}, lower_pool};
  return def;
}
const OpDefinition& max_pool_grad_op() {
  static const OpDefinition def{{OpKind::kMaxPoolGrad, 2, infer_pool_grad, nullptr}, lower_pool};
  return def;
}
const OpDefinition& average_pool_op() {
  static const OpDefinition def{{OpKind::kAveragePool, 1, infer_pool, grad_pool}, lower_pool};
  return def;
}
const OpDefinition& average_pool_grad_op() {
  static const OpDefinition def{{OpKind::kAveragePoolGrad, 1, infer_pool_grad, nullptr}, lower_pool};
  return def;
}

} // namespace ipu::ops
