// ONNX data movement and shape converters. Every affine view of a tensor (Transpose, Slice,
// Expand, Tile, Split, constant Pad) is one StridedCopy; Concat and Gather have their own ops;
// Squeeze and Unsqueeze are reshapes; Shape, Size, ConstantOfShape and Range are folded at
// compile time (shapes are static here) into constants.
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "compiler/frontend/onnx_tensor_helpers.h"
#include "compiler/ir/shape_util.h"
#include "runtime/data/tensor_proto.h"
#include "runtime/format/host_contract.h"

namespace ipu::frontend {
namespace {

std::vector<int64_t> strides_of(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size());
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    s[i] = stride;
    stride *= shape[i];
  }
  return s;
}

Status convert_transpose(OnnxImportContext& ctx) {
  IPU_ASSIGN_OR_RETURN(int x, ctx.input(0));
  const std::vector<int64_t> in = ctx.shape(x);
  const int64_t rank = static_cast<int64_t>(in.size());
  std::vector<int64_t> perm = ctx.ints_attr("perm");
  if (!ctx.attribute("perm")) {
    for (int64_t i = rank - 1; i >= 0; --i)
      perm.push_back(i);
  }
  std::vector<bool> seen(in.size(), false);
  if (static_cast<int64_t>(perm.size()) != rank)
    return invalid_argument("perm " + shape_text(perm) + " does not match the rank");
  for (int64_t& p : perm) {
    IPU_ASSIGN_OR_RETURN(p, normalize_axis(p, rank, "perm entry"));
    if (seen[static_cast<size_t>(p)])
      return invalid_argument("perm " + shape_text(ctx.ints_attr("perm")) + " repeats an axis");
    seen[static_cast<size_t>(p)] = true;
  }
  IPU_RETURN_IF_ERROR(check_not_empty(in, "input"));
  const std::vector<int64_t> s = strides_of(in);
  std::vector<int64_t> shape, strides;
  for (int64_t p : perm) {
    shape.push_back(in[static_cast<size_t>(p)]);
    strides.push_back(s[static_cast<size_t>(p)]);
  }
  IPU_ASSIGN_OR_RETURN(int y, add_strided_copy(ctx, x, shape, strides, 0));
  ctx.set_output(0, y, ctx.input_dtype(0));
  return Status();
}

// Slice: starts, ends, axes, steps as attributes (version 1) or constant inputs (10+), clamped as
// ONNX specifies; negative steps walk backwards.
Status convert_slice(OnnxImportContext& ctx) {
  IPU_ASSIGN_OR_RETURN(int x, ctx.input(0));
  const std::vector<int64_t> in = ctx.shape(x);
  const int64_t rank = static_cast<int64_t>(in.size());
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.version() < 10) {
    starts = ctx.ints_attr("starts");
    ends = ctx.ints_attr("ends");
    axes = ctx.ints_attr("axes");
  } else {
    IPU_ASSIGN_OR_RETURN(starts, ctx.int_constant_input(1));
    IPU_ASSIGN_OR_RETURN(ends, ctx.int_constant_input(2));
    if (ctx.has_input(3)) {
      IPU_ASSIGN_OR_RETURN(axes, ctx.int_constant_input(3));
    }
    if (ctx.has_input(4)) {
      IPU_ASSIGN_OR_RETURN(steps, ctx.int_constant_input(4));
    }
  }
  if (axes.empty()) {
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(static_cast<int64_t>(i));
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size()) {
    return invalid_argument("starts, ends, axes and steps differ in length");
  }
  std::vector<int64_t> shape = in, strides = strides_of(in);
  int64_t offset = 0;
  std::vector<bool> seen(in.size(), false);
  for (size_t i = 0; i < starts.size(); ++i) {
    IPU_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axes[i], rank, "axis"));
    if (seen[static_cast<size_t>(axis)])
      return invalid_argument("axis " + std::to_string(axis) + " is sliced twice");
    seen[static_cast<size_t>(axis)] = true;
    const int64_t d = in[static_cast<size_t>(axis)], step = steps[i];
    if (step == 0) return invalid_argument("step 0");
    int64_t start = starts[i], end = ends[i];
    if (start < 0) start = start < -d ? 0 : start + d;
    if (end < 0) end = end < -d ? -1 : end + d;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, d);
      end = std::clamp<int64_t>(end, 0, d);
    } else {
      start = std::clamp<int64_t>(start, 0, d - 1);
      end = std::clamp<int64_t>(end, -1, d - 1);
    }
    const int64_t count = step > 0 ? (end - start + step - 1) / step : (start - end + (-step) - 1) / (-step);
    shape[static_cast<size_t>(axis)] = std::max<int64_t>(count, 0);
    offset += start * strides[static_cast<size_t>(axis)];
    strides[static_cast<size_t>(axis)] *= step;
  }
  if (product(shape, 0, shape.size()) == 0) { // shape arithmetic slices a Shape to nothing
    ctx.set_empty_output(0, shape, ctx.input_dtype(0));
    return Status();
  }
  IPU_ASSIGN_OR_RETURN(int y, add_strided_copy(ctx, x, shape, strides, offset));
  ctx.set_output(0, y, ctx.input_dtype(0));
  return Status();
}

// Expand: numpy broadcast of the input against a constant shape (either may have the larger
// dimension).
Status convert_expand(OnnxImportContext& ctx) {
  IPU_ASSIGN_OR_RETURN(int x, ctx.input(0));
  IPU_ASSIGN_OR_RETURN(std::vector<int64_t> target, ctx.int_constant_input(1));
  IPU_ASSIGN_OR_RETURN(std::vector<int64_t> shape, ir::broadcast_shapes(ctx.shape(x), target));
  IPU_RETURN_IF_ERROR(check_not_empty(shape, "the output"));
  int y = x;
  if (shape != ctx.shape(x)) {
    IPU_ASSIGN_OR_RETURN(y, add_strided_copy(ctx, x, shape, ir::broadcast_strides(ctx.shape(x), shape), 0));
  }
  ctx.set_output(0, y, ctx.input_dtype(0));
  return Status();
}

// Tile: each repeated axis k becomes two axes [repeats_k (stride 0), d_k], then a reshape.
Status convert_tile(OnnxImportContext& ctx) {
  IPU_ASSIGN_OR_RETURN(int x, ctx.input(0));
  IPU_ASSIGN_OR_RETURN(std::vector<int64_t> repeats, ctx.int_constant_input(1));
  const std::vector<int64_t> in = ctx.shape(x);
  if (repeats.size() != in.size())
    return invalid_argument("repeats " + shape_text(repeats) + " do not match the rank");
  const std::vector<int64_t> s = strides_of(in);
  std::vector<int64_t> shape, strides, out;
  for (size_t k = 0; k < in.size(); ++k) {
    if (repeats[k] < 0) return invalid_argument("negative repeat");
    if (repeats[k] != 1) {
      shape.push_back(repeats[k]);
      strides.push_back(0);
    }
    shape.push_back(in[k]);
    strides.push_back(s[k]);
    out.push_back(in[k] * repeats[k]);
  }
  IPU_RETURN_IF_ERROR(check_not_empty(out, "the output"));
  if (static_cast<int64_t>(shape.size()) > format::kMaxTensorRank) {
    return unsupported("Tile repeating " + std::to_string(shape.size() - in.size()) + " axes of a rank-" +
                       std::to_string(in.size()) + " input exceeds the supported rank");
  }
  IPU_ASSIGN_OR_RETURN(int tiled, add_strided_copy(ctx, x, shape, strides, 0));
  IPU_ASSIGN_OR_RETURN(int y, ctx.reshape(tiled, out, "/reshape"));
  ctx.set_output(0, y, ctx.input_dtype(0));
  return Status();
}

Status convert_concat(OnnxImportContext& ctx) {
  const int n = ctx.num_inputs();
  if (n < 1) return invalid_argument("needs at least one input");
  std::vector<int> inputs;
  int64_t axis = 0;
  for (int i = 0; i < n; ++i) {
    IPU_ASSIGN_OR_RETURN(int x, ctx.input(i));
    if (i == 0) {
      IPU_ASSIGN_OR_RETURN(
          axis, normalize_axis(ctx.int_attr("axis", 0), static_cast<int64_t>(ctx.shape(x).size()), "axis"));
    }
    if (ctx.graph().value(x).type.elements() > 0) inputs.push_back(x);
  }
  if (inputs.empty()) return unsupported("Concat of empty tensors only");
  int y = inputs[0];
  if (inputs.size() > 1) {
    ir::AxisAttrs attrs;
    attrs.axis = axis;
    IPU_ASSIGN_OR_RETURN(y, ctx.add_op(ir::OpKind::kConcat, inputs, attrs));
  }
  ctx.set_output(0, y, ctx.input_dtype(0));
  return Status();
}

// Split into the outputs along `axis`: sizes from the `split` attribute (2, 11) or input (13+),
// else equal parts (18: `num_outputs`, the last part smaller).
Status convert_split(OnnxImportContext& ctx) {
  IPU_ASSIGN_OR_RETURN(int x, ctx.input(0));
  const std::vector<int64_t> in = ctx.shape(x);
  IPU_ASSIGN_OR_RETURN(int64_t axis,
                       normalize_axis(ctx.int_attr("axis", 0), static_cast<int64_t>(in.size()), "axis"));
  const int64_t d = in[static_cast<size_t>(axis)];
  const int outputs = ctx.node().output_size();
  std::vector<int64_t> sizes;
  if (ctx.version() < 13) {
    sizes = ctx.ints_attr("split");
  } else if (ctx.has_input(1)) {
    IPU_ASSIGN_OR_RETURN(sizes, ctx.int_constant_input(1));
  }
  if (sizes.empty()) {
    if (ctx.version() >= 18) {
      const int64_t parts = ctx.int_attr("num_outputs", 0);
      if (parts != outputs) return invalid_argument("num_outputs differs from the number of outputs");
      const int64_t chunk = (d + parts - 1) / parts;
      for (int64_t p = 0; p < parts; ++p)
        sizes.push_back(std::max<int64_t>(0, std::min(chunk, d - p * chunk)));
    } else {
      if (d % outputs != 0)
        return invalid_argument("axis of size " + std::to_string(d) + " does not split evenly");
      sizes.assign(static_cast<size_t>(outputs), d / outputs);
    }
  }
  int64_t total = 0;
  for (int64_t s : sizes)
    total += s;
  if (static_cast<int>(sizes.size()) != outputs || total != d) {
    return invalid_argument("split " + shape_text(sizes) + " does not cover axis " + std::to_string(axis) +
                            " of " + shape_text(in) + " in " + std::to_string(outputs) + " outputs");
  }
  const std::vector<int64_t> strides = strides_of(in);
  int64_t start = 0;
  for (int i = 0; i < outputs; ++i) {
    std::vector<int64_t> shape = in;
    shape[static_cast<size_t>(axis)] = sizes[static_cast<size_t>(i)];
    if (sizes[static_cast<size_t>(i)] == 0) {
      ctx.set_empty_output(i, shape, ctx.input_dtype(0));
      continue;
    }
    IPU_ASSIGN_OR_RETURN(int y,
                         add_strided_copy(ctx, x, shape, strides, start * strides[static_cast<size_t>(axis)],
                                          "/" + std::to_string(i)));
    ctx.set_output(i, y, ctx.input_dtype(0));
    start += sizes[static_cast<size_t>(i)];
  }
  return Status();
}

// The source index along one axis of `size` for output position `j` of a Pad in `mode` (edge,
// reflect or wrap) with `before` positions added in front; `size` >= 1.
int64_t pad_source_index(const std::string& mode, int64_t j, int64_t before, int64_t size) {
  const int64_t p = j - before;
  if (mode == "edge" || size == 1) return std::clamp<int64_t>(p, 0, size - 1);
  if (mode == "wrap") return ((p % size) + size) % size;
  // reflect: mirrored about the edge elements, which are not repeated (period 2 * (size - 1)).
  const int64_t period = 2 * (size - 1);
  const int64_t q = ((p % period) + period) % period;
  return q < size ? q : period - q;
}

// Pad in edge, reflect or wrap mode: along each padded axis, a Gather of the input by constant
// indices (these modes repeat input elements, so they are not one affine view).
StatusOr<int> pad_by_gather(OnnxImportContext& ctx, int x, const std::string& mode,
                            const std::vector<int64_t>& before, const std::vector<int64_t>& after) {
  for (size_t axis = 0; axis < before.size(); ++axis) {
    if (before[axis] < 0 || after[axis] < 0) {
      return unsupported("negative pads (cropping) are supported in constant mode only, not '" + mode + "'");
    }
    if (before[axis] == 0 && after[axis] == 0) continue;
    const int64_t size = ctx.shape(x)[axis];
    const int64_t out = size + before[axis] + after[axis];
    std::vector<float> indices(static_cast<size_t>(out));
    for (int64_t j = 0; j < out; ++j) {
      indices[static_cast<size_t>(j)] = static_cast<float>(pad_source_index(mode, j, before[axis], size));
    }
    const int id =
        ctx.add_constant_tensor("/indices" + std::to_string(axis), {out}, std::move(indices), true);
    ir::AxisAttrs attrs;
    attrs.axis = static_cast<int64_t>(axis);
    IPU_ASSIGN_OR_RETURN(x, ctx.add_op(ir::OpKind::kGather, {x, id}, attrs, "/axis" + std::to_string(axis)));
  }
  return x;
}

// Pad in constant mode: a StridedCopy reading the input inside the box and the value outside;
// negative pads crop. Edge, reflect and wrap: pad_by_gather.
Status convert_pad(OnnxImportContext& ctx) {
  std::string mode = "constant";
  if (const onnx::AttributeProto* a = ctx.attribute("mode")) mode = a->s();
  if (mode != "constant" && mode != "edge" && mode != "reflect" && mode != "wrap") {
    return invalid_argument("Pad mode '" + mode + "' is not one of constant, edge, reflect, wrap");
  }
  if (mode == "wrap" && ctx.version() < 19) return invalid_argument("Pad mode 'wrap' needs version 19");
  IPU_ASSIGN_OR_RETURN(int x, ctx.input(0));
  const std::vector<int64_t> in = ctx.shape(x);
  const int64_t rank = static_cast<int64_t>(in.size());
  std::vector<int64_t> pads, axes;
  float value = 0.0f;
  if (ctx.version() < 11) {
    pads = ctx.ints_attr("pads");
    value = ctx.float_attr("value", 0.0f);
  } else {
    IPU_ASSIGN_OR_RETURN(pads, ctx.int_constant_input(1));
    if (ctx.has_input(2)) {
      const data::NpyArray* c = ctx.constant_input(2);
      if (!c) return ctx.constant_required(2);
      IPU_ASSIGN_OR_RETURN(std::vector<float> v, data::to_floats(*c, "constant_value"));
      if (v.size() != 1) return invalid_argument("constant_value must be a scalar");
      value = v[0];
    }
    if (ctx.has_input(3)) {
      IPU_ASSIGN_OR_RETURN(axes, ctx.int_constant_input(3));
    }
  }
  if (axes.empty()) {
    for (int64_t k = 0; k < rank; ++k)
      axes.push_back(k);
  }
  if (pads.size() != 2 * axes.size())
    return invalid_argument("pads " + shape_text(pads) + " do not match the axes");
  std::vector<int64_t> before(in.size(), 0), after(in.size(), 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    IPU_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axes[i], rank, "axis"));
    before[static_cast<size_t>(axis)] = pads[i];
    after[static_cast<size_t>(axis)] = pads[i + axes.size()];
  }
  if (mode != "constant") {
    IPU_RETURN_IF_ERROR(check_not_empty(in, "the input"));
    IPU_ASSIGN_OR_RETURN(int y, pad_by_gather(ctx, x, mode, before, after));
    ctx.set_output(0, y, ctx.input_dtype(0));
    return Status();
  }
  const std::vector<int64_t> s = strides_of(in);
  ir::StridedCopyAttrs attrs;
  attrs.strides = s;
  attrs.fill = value;
  for (size_t k = 0; k < in.size(); ++k) {
    attrs.shape.push_back(in[k] + before[k] + after[k]);
    attrs.offset -= before[k] * s[k];
    attrs.lower.push_back(before[k]);
    attrs.upper.push_back(before[k] + in[k]);
  }
  IPU_RETURN_IF_ERROR(check_not_empty(attrs.shape, "the output"));
  IPU_ASSIGN_OR_RETURN(int y, ctx.add_op(ir::OpKind::kStridedCopy, {x}, attrs));
  ctx.set_output(0, y, ctx.input_dtype(0));
  return Status();
}

// Axes from the attribute (before version 13) or the optional constant input 1.
StatusOr<std::vector<int64_t>> axes_of(OnnxImportContext& ctx) {
  if (ctx.version() < 13) return ctx.ints_attr("axes");
  if (!ctx.has_input(1)) return std::vector<int64_t>{};
  return ctx.int_constant_input(1);
}

Status convert_squeeze(OnnxImportContext& ctx) {
  IPU_ASSIGN_OR_RETURN(std::vector<int64_t> axes, axes_of(ctx));
  IPU_ASSIGN_OR_RETURN(int x, ctx.input(0));
  const std::vector<int64_t> in = ctx.shape(x);
  std::vector<bool> drop(in.size(), false);
  for (int64_t a : axes) {
    IPU_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(a, static_cast<int64_t>(in.size()), "axis"));
    if (in[static_cast<size_t>(axis)] != 1)
      return invalid_argument("axis " + std::to_string(a) + " of " + shape_text(in) + " is not 1");
    drop[static_cast<size_t>(axis)] = true;
  }
  std::vector<int64_t> shape;
  for (size_t k = 0; k < in.size(); ++k) {
    if (!(axes.empty() ? in[k] == 1 : drop[k])) shape.push_back(in[k]);
  }
  IPU_ASSIGN_OR_RETURN(int y, ctx.reshape(x, shape));
  ctx.set_output(0, y, ctx.input_dtype(0));
  return Status();
}

Status convert_unsqueeze(OnnxImportContext& ctx) {
  IPU_ASSIGN_OR_RETURN(std::vector<int64_t> axes, axes_of(ctx));
  IPU_ASSIGN_OR_RETURN(int x, ctx.input(0));
  const std::vector<int64_t> in = ctx.shape(x);
  const int64_t rank = static_cast<int64_t>(in.size() + axes.size());
  std::vector<bool> inserted(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    IPU_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(a, rank, "axis"));
    if (inserted[static_cast<size_t>(axis)])
      return invalid_argument("axis " + std::to_string(a) + " is repeated");
    inserted[static_cast<size_t>(axis)] = true;
  }
  std::vector<int64_t> shape;
  size_t next = 0;
  for (int64_t k = 0; k < rank; ++k)
    shape.push_back(inserted[static_cast<size_t>(k)] ? 1 : in[next++]);
  IPU_ASSIGN_OR_RETURN(int y, ctx.reshape(x, shape));
  ctx.set_output(0, y, ctx.input_dtype(0));
  return Status();
}

Status convert_gather(OnnxImportContext& ctx) {
  IPU_ASSIGN_OR_RETURN(int data, ctx.input(0));
  IPU_ASSIGN_OR_RETURN(int indices, ctx.input(1));
  const int64_t rank = static_cast<int64_t>(ctx.shape(data).size());
  IPU_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx.int_attr("axis", 0), rank, "axis"));
  IPU_RETURN_IF_ERROR(check_not_empty(ctx.shape(data), "data"));
  IPU_RETURN_IF_ERROR(check_not_empty(ctx.shape(indices), "indices"));
  ir::AxisAttrs attrs;
  attrs.axis = axis;
  IPU_ASSIGN_OR_RETURN(int y, ctx.add_op(ir::OpKind::kGather, {data, indices}, attrs));
  ctx.set_output(0, y, ctx.input_dtype(0));
  return Status();
}

// ScatterND (reduction none) of constant indices: which update element, if any, lands on each
// output element is known at compile time, so the op is a Gather of the updates by a constant
// index map, and a Where choosing between it and the data. Of index tuples naming one slice
// twice the later wins, as ONNX Runtime applies them in order (ONNX leaves it undefined).
Status convert_scatter_nd(OnnxImportContext& ctx) {
  if (const onnx::AttributeProto* r = ctx.attribute("reduction"); r && r->s() != "none")
    return unsupported("ScatterND with reduction '" + r->s() + "' is not supported (only 'none')");
  IPU_ASSIGN_OR_RETURN(int data, ctx.input(0));
  IPU_ASSIGN_OR_RETURN(std::vector<int64_t> indices, ctx.int_constant_input(1));
  const std::vector<int64_t> index_shape = ctx.constant_input(1)->shape;
  IPU_ASSIGN_OR_RETURN(int updates, ctx.input(2));
  const std::vector<int64_t> data_shape = ctx.shape(data), update_shape = ctx.shape(updates);
  const auto rank = static_cast<int64_t>(data_shape.size());
  const int64_t k = index_shape.empty() ? 0 : index_shape.back();
  if (index_shape.empty() || k < 1 || k > rank)
    return invalid_argument("indices " + shape_text(index_shape) +
                            " must end in a dimension from 1 to the rank of data " + shape_text(data_shape));
  std::vector<int64_t> expected(index_shape.begin(), index_shape.end() - 1);
  expected.insert(expected.end(), data_shape.begin() + k, data_shape.end());
  if (update_shape != expected)
    return invalid_argument("updates " + shape_text(update_shape) + " must be " + shape_text(expected) +
                            " for indices " + shape_text(index_shape) + " into data " +
                            shape_text(data_shape));
  const int64_t elements = product(data_shape, 0, data_shape.size());
  if (elements > format::kExactFloatIntegers)
    return unsupported("ScatterND into data of " + std::to_string(elements) +
                       " elements (more than 2^24, which float32 indices cannot count)");
  const int64_t slice = product(data_shape, static_cast<size_t>(k), data_shape.size());
  const std::vector<int64_t> strides = strides_of(data_shape);
  std::vector<float> source(static_cast<size_t>(elements), 0.0f), taken(static_cast<size_t>(elements), 0.0f);
  for (size_t t = 0; t * static_cast<size_t>(k) < indices.size(); ++t) {
    int64_t offset = 0;
    for (int64_t j = 0; j < k; ++j) {
      int64_t i = indices[t * static_cast<size_t>(k) + static_cast<size_t>(j)];
      const int64_t n = data_shape[static_cast<size_t>(j)];
      if (i < -n || i >= n)
        return invalid_argument("index " + std::to_string(i) + " of tuple " + std::to_string(t) +
                                " is outside [-" + std::to_string(n) + ", " + std::to_string(n) +
                                ") on axis " + std::to_string(j));
      offset += (i < 0 ? i + n : i) * strides[static_cast<size_t>(j)];
    }
    for (int64_t e = 0; e < slice; ++e) {
      source[static_cast<size_t>(offset + e)] = static_cast<float>(static_cast<int64_t>(t) * slice + e);
      taken[static_cast<size_t>(offset + e)] = 1.0f;
    }
  }
  if (product(update_shape, 0, update_shape.size()) == 0) {
    ctx.set_output(0, data, ctx.input_dtype(0));
    return Status();
  }
  IPU_ASSIGN_OR_RETURN(int flat,
                       ctx.reshape(updates, {product(update_shape, 0, update_shape.size())}, "/updates"));
  const int from = ctx.add_constant_tensor("/source", data_shape, std::move(source), true);
  const int mask = ctx.add_constant_tensor("/taken", data_shape, std::move(taken), true);
  ir::AxisAttrs gather;
  gather.axis = 0;
  IPU_ASSIGN_OR_RETURN(int scattered, ctx.add_op(ir::OpKind::kGather, {flat, from}, gather, "/gather"));
  IPU_ASSIGN_OR_RETURN(int y, ctx.add_op(ir::OpKind::kWhere, {mask, scattered, data}));
  ctx.set_output(0, y, ctx.input_dtype(0));
  return Status();
}

// The static shape of input 0: that of its constant, else of its IR value.
StatusOr<std::vector<int64_t>> static_shape(OnnxImportContext& ctx) {
  if (const data::NpyArray* c = ctx.constant_input(0)) return c->shape;
  IPU_ASSIGN_OR_RETURN(int x, ctx.input(0));
  return ctx.shape(x);
}

// Shape: the dims [start, end) (version 15 attributes, clamped) as an int64 constant.
Status convert_shape(OnnxImportContext& ctx) {
  IPU_ASSIGN_OR_RETURN(std::vector<int64_t> shape, static_shape(ctx));
  const int64_t rank = static_cast<int64_t>(shape.size());
  int64_t start = ctx.int_attr("start", 0), end = ctx.int_attr("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  std::vector<int64_t> dims(shape.begin() + start, shape.begin() + std::max(start, end));
  ctx.set_constant_output(0, make_i64_array(dims, {static_cast<int64_t>(dims.size())}));
  return Status();
}

Status convert_size(OnnxImportContext& ctx) {
  IPU_ASSIGN_OR_RETURN(std::vector<int64_t> shape, static_shape(ctx));
  ctx.set_constant_output(0, make_i64_array({product(shape, 0, shape.size())}, {}));
  return Status();
}

// ConstantOfShape: the `value` tensor (one element; default float 0) repeated over a constant
// shape.
Status convert_constant_of_shape(OnnxImportContext& ctx) {
  IPU_ASSIGN_OR_RETURN(std::vector<int64_t> shape, ctx.int_constant_input(0));
  IPU_RETURN_IF_ERROR(check_not_empty(shape, "the shape"));
  data::NpyArray value;
  if (const onnx::AttributeProto* a = ctx.attribute("value")) {
    IPU_ASSIGN_OR_RETURN(value, data::decode_tensor_proto(a->t(), "attribute 'value'"));
  } else {
    const float zero = 0.0f;
    value = data::make_npy_f32({1}, &zero);
  }
  if (value.element_count() != 1) return invalid_argument("value must hold one element");
  if (value.dtype != "f4" && value.dtype != "f2" && !is_integer_dtype(value.dtype))
    return unsupported("value of dtype '" + value.dtype + "'");
  const int64_t n = product(shape, 0, shape.size());
  if (n > (int64_t{1} << 28))
    return unsupported("a constant of " + std::to_string(n) + " elements is too large");
  data::NpyArray out;
  out.dtype = value.dtype;
  out.shape = shape;
  out.data.reserve(static_cast<size_t>(n) * value.data.size());
  for (int64_t i = 0; i < n; ++i)
    out.data += value.data;
  ctx.set_constant_output(0, std::move(out));
  return Status();
}

// Range with constant start, limit and delta (its length is its output's shape).
Status convert_range(OnnxImportContext& ctx) {
  const data::NpyArray* arrays[3];
  for (int i = 0; i < 3; ++i) {
    arrays[i] = ctx.constant_input(i);
    if (!arrays[i]) return ctx.constant_required(i); // the output's shape depends on the values
  }
  double v[3];
  for (int i = 0; i < 3; ++i) {
    IPU_ASSIGN_OR_RETURN(std::vector<float> f, data::to_floats(*arrays[i], "input " + std::to_string(i)));
    if (f.size() != 1) return invalid_argument("inputs must be scalars");
    v[i] = f[0];
  }
  if (v[2] == 0) return invalid_argument("delta is 0");
  const int64_t n = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((v[1] - v[0]) / v[2])));
  IPU_RETURN_IF_ERROR(check_not_empty({n}, "the range"));
  if (n > (int64_t{1} << 24))
    return unsupported("a range of " + std::to_string(n) + " elements is too large");
  const std::string dtype = arrays[0]->dtype;
  if (dtype == "i8") {
    std::vector<int64_t> out(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      out[static_cast<size_t>(i)] = static_cast<int64_t>(v[0]) + i * static_cast<int64_t>(v[2]);
    ctx.set_constant_output(0, make_i64_array(out, {n}));
    return Status();
  }
  if (dtype != "f4" && dtype != "f2" && !is_integer_dtype(dtype))
    return unsupported("Range of dtype '" + dtype + "' (float and integer types are supported)");
  // Narrower integers through float32, which holds them exactly (|v| <= 2^24, checked).
  std::vector<float> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const double value = v[0] + static_cast<double>(i) * v[2];
    if (dtype[0] != 'f' && std::fabs(value) > static_cast<double>(format::kExactFloatIntegers))
      return unsupported("Range of dtype '" + dtype + "' reaching " + std::to_string(value) +
                         ", beyond 2^24");
    out[static_cast<size_t>(i)] = static_cast<float>(value);
  }
  ctx.set_constant_output(0, data::make_npy_from_floats(dtype, {n}, out));
  return Status();
}

} // namespace

std::vector<OnnxOpDef> shape_onnx_ops() {
  return {
      {"Concat", {4, 11, 13}, {"axis"}, convert_concat},
      {"ConstantOfShape", {9, 20, 21, 23, 24, 25}, {"value"}, convert_constant_of_shape},
      {"Expand", {8, 13}, {}, convert_expand},
      {"Gather", {1, 11, 13}, {"axis"}, convert_gather},
      {"Pad", {2, 11, 13, 18, 19, 21, 23, 24, 25}, {"mode", "pads", "value"}, convert_pad},
      {"Range", {11}, {}, convert_range},
      {"ScatterND", {11, 13, 16, 18}, {"reduction"}, convert_scatter_nd},
      {"Shape", {1, 13, 15, 19, 21, 23, 24, 25}, {"start", "end"}, convert_shape},
      {"Size", {1, 13, 19, 21, 23, 24, 25}, {}, convert_size},
      {"Slice", {1, 10, 11, 13}, {"starts", "ends", "axes"}, convert_slice},
      {"Split", {2, 11, 13, 18}, {"axis", "split", "num_outputs"}, convert_split},
      {"Squeeze", {1, 11, 13, 21, 23, 24, 25}, {"axes"}, convert_squeeze},
      {"Tile", {6, 13}, {}, convert_tile},
      {"Transpose", {1, 13, 21, 23, 24, 25}, {"perm"}, convert_transpose},
      {"Unsqueeze", {1, 11, 13, 21, 23, 24, 25}, {"axes"}, convert_unsqueeze},
  };
}

} // namespace ipu::frontend
