// Each worker's scratch keeps a oneDNN engine, a stream and one plan per block geometry it has met:
// the primitive oneDNN chose, the conversions between our NCHW tensors and the layouts it prefers
// (conv_layouts.h), and buffers for those. Primitives are single-threaded: TBB owns every thread,
// and Debian's oneDNN runs on OpenMP, whose team size is set to 1 on each worker.
#include "runtime/kernels/conv_forward.h"

#include <omp.h>

#include <algorithm>
#include <array>
#include <map>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>

#include "runtime/kernels/conv_layouts.h"

namespace ipu::kernels {
namespace {

using dnnl::memory;

// oneDNN wants padding that fits the output exactly: (rows + before + after - extent) / stride
// + 1 == outputs. Ours only places the first window, and the last may stop short of the input's
// end or hang past it. So outputs [begin, end) along an axis see the input from the first row
// their windows reach to the last (clamped to the input), with the padding before and after
// what the first and last window need beyond that.
struct AxisView {
  int64_t first;  // input row where the view starts
  int64_t rows;   // of the input, from `first` (at least 0)
  int64_t before; // padding before them
  int64_t after;  // padding after them
};
AxisView axis_view(int64_t rows, int64_t begin, int64_t end, int64_t kernel, int64_t stride, int64_t pad,
                   int64_t dilation) {
  const int64_t start = begin * stride - pad; // the first window's first row
  const int64_t reach =
      (end - 1) * stride + (kernel - 1) * dilation + 1 - pad; // one past the last window's last row
  const int64_t first = std::clamp<int64_t>(start, 0, rows);
  const int64_t last = std::clamp<int64_t>(reach, first, rows);
  return {first, last - first, first - start, reach - last};
}

// The input as oneDNN sees it for the block's output rows and every output column.
struct InputView {
  AxisView rows, cols;
};
InputView input_view(const Window& w, const ConvBlock& b) {
  return {axis_view(w.H, b.row_begin, b.row_end, w.KH, w.SH, w.PT, w.DH),
          axis_view(w.W, 0, w.OW, w.KW, w.SW, w.PL, w.DW)};
}

// Everything a plan depends on: the block's samples and output rows, the input view, the
// window, the group's channels, the block's channels, the tensors' channel counts and planes
// (they set the strides), the weights' stride and the bias. Where the view starts is not: the
// pointers carry it.
using PlanKey = std::array<int64_t, 25>;

PlanKey plan_key(const Window& w, const InputView& in, const ConvBlock& b) {
  return {b.samples,
          b.row_end - b.row_begin,
          in.rows.rows,
          in.rows.before,
          in.rows.after,
          in.cols.rows,
          in.cols.before,
          in.cols.after,
          w.C,
          w.H,
          w.W,
          w.OH,
          w.OW,
          w.KH,
          w.KW,
          w.SH,
          w.SW,
          w.DH,
          w.DW,
          b.group_channels,
          b.channels,
          b.M,
          b.weight_stride,
          b.groups,
          b.bias != nullptr};
}

// A 4-D float tensor whose channels, rows and columns lie `plane`, `row` and 1 apart.
memory::desc strided(int64_t samples, int64_t channels, int64_t rows, int64_t cols, int64_t sample,
                     int64_t plane, int64_t row) {
  return memory::desc({samples, channels, rows, cols}, memory::data_type::f32,
                      memory::dims{sample, plane, row, 1});
}

// With AVX-512, oneDNN prefers its brgemm convolution, which blocks the input channels by the
// block's size (output channels and rows): an element's sum would then depend on how vertices
// split the work (measured: 512 input channels on a 7×7 plane). The direct JIT kernels after it
// sum every element in one order (input channel blocks, then taps) whatever the block. (A
// primitive_desc copied or moved forgets its place among the implementations, so this takes it
// where it was built.)
void skip_brgemm(dnnl::convolution_forward::primitive_desc& desc) {
  while (std::string(desc.impl_info_str()).rfind("brg", 0) == 0 && desc.next_impl()) {
  }
}

// The weights' dimensions: [channels, Cg, KH, KW] in one group, [groups, channels / groups, Cg,
// KH, KW] over several (oneDNN's grouped form), and the strides of ours.
memory::dims weight_dims(const Window& w, const ConvBlock& b) {
  if (b.groups == 1) return {b.channels, b.group_channels, w.KH, w.KW};
  return {b.groups, b.channels / b.groups, b.group_channels, w.KH, w.KW};
}
memory::dims weight_strides(const Window& w, const ConvBlock& b) {
  if (b.groups == 1) return {b.weight_stride, w.KH * w.KW, w.KW, 1};
  return {b.channels / b.groups * b.weight_stride, b.weight_stride, w.KH * w.KW, w.KW, 1};
}

dnnl::convolution_forward::primitive_desc describe(const Window& w, const InputView& in, const ConvBlock& b,
                                                   const dnnl::engine& engine) {
  using tag = memory::format_tag;
  const memory::desc src({b.samples, b.groups * b.group_channels, in.rows.rows, in.cols.rows},
                         memory::data_type::f32, tag::any);
  const memory::desc weights(weight_dims(w, b), memory::data_type::f32, tag::any);
  const memory::desc dst({b.samples, b.channels, b.row_end - b.row_begin, w.OW}, memory::data_type::f32,
                         tag::any);
  const memory::dims strides{w.SH, w.SW}, dilates{w.DH - 1, w.DW - 1}, before{in.rows.before, in.cols.before},
      after{in.rows.after, in.cols.after};
  const auto kind = dnnl::prop_kind::forward_inference;
  const auto algorithm = dnnl::algorithm::convolution_direct;
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user); // one buffer per plan, not an allocation per call
  if (b.bias != nullptr) {
    const memory::desc bias({b.channels}, memory::data_type::f32, tag::x);
    dnnl::convolution_forward::primitive_desc desc(
        {kind, algorithm, src, weights, bias, dst, strides, dilates, before, after}, attr, engine);
    skip_brgemm(desc);
    return desc;
  }
  dnnl::convolution_forward::primitive_desc desc(
      {kind, algorithm, src, weights, dst, strides, dilates, before, after}, attr, engine);
  skip_brgemm(desc);
  return desc;
}

class Plan {
public:
  Plan(const Window& w, const InputView& in, const ConvBlock& b, const dnnl::engine& engine)
      : m_desc(describe(w, in, b, engine)), m_conv(m_desc),
        m_src(strided(b.samples, b.groups * b.group_channels, in.rows.rows, in.cols.rows, w.C * w.in_plane(),
                      w.in_plane(), w.W),
              m_desc.src_desc(), engine, Conversion::Operand::kRead,
              {w.C * w.in_plane(), w.in_plane(), in.cols.rows == w.W ? in.rows.rows * w.W : 0}),
        m_weights(memory::desc(weight_dims(w, b), memory::data_type::f32, weight_strides(w, b)),
                  m_desc.weights_desc(), engine, Conversion::Operand::kRead),
        m_dst(strided(b.samples, b.channels, b.row_end - b.row_begin, w.OW, b.M * w.out_plane(),
                      w.out_plane(), w.OW),
              m_desc.dst_desc(), engine, Conversion::Operand::kWritten,
              {b.M * w.out_plane(), w.out_plane(), (b.row_end - b.row_begin) * w.OW}),
        m_bias(memory::desc({b.channels}, memory::data_type::f32, memory::format_tag::x), engine,
               DNNL_MEMORY_NONE),
        m_scratchpad(m_desc.scratchpad_desc(), engine) {}

  // `b`'s pointers are at the view's first input row and the block's first output row.
  void run(const ConvBlock& b, uint64_t compute_set, dnnl::stream& stream) {
    // Weights do not change within a compute set, so a worker converts them once per set.
    if (m_weights_for != b.weights || m_weights_compute_set != compute_set) {
      m_weights.set(b.weights);
      m_weights.convert_in(stream);
      m_weights_for = b.weights;
      m_weights_compute_set = compute_set;
    }
    // Nor do its inputs: tasks that differ only in output channels (a batch-1 convolution's,
    // split over tiles by channel) convert their input once per worker.
    if (m_src_for != b.x || m_src_compute_set != compute_set) {
      m_src.set(b.x);
      m_src.convert_in(stream);
      m_src_for = b.x;
      m_src_compute_set = compute_set;
    }
    m_dst.set(b.y);
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, m_src.theirs},
                                         {DNNL_ARG_WEIGHTS, m_weights.theirs},
                                         {DNNL_ARG_DST, m_dst.theirs},
                                         {DNNL_ARG_SCRATCHPAD, m_scratchpad}};
    if (b.bias != nullptr) {
      m_bias.set_data_handle(const_cast<float*>(b.bias));
      args.emplace(DNNL_ARG_BIAS, m_bias);
    }
    m_conv.execute(stream, args);
    m_dst.convert_out(stream, b.relu);
  }

private:
  dnnl::convolution_forward::primitive_desc m_desc;
  dnnl::convolution_forward m_conv;
  Conversion m_src, m_weights, m_dst;
  memory m_bias, m_scratchpad;
  const float* m_weights_for = nullptr;
  uint64_t m_weights_compute_set = 0;
  const float* m_src_for = nullptr;
  uint64_t m_src_compute_set = 0;
};

} // namespace

// A worker thread's oneDNN state.
class ConvWorkspace {
public:
  ConvWorkspace() : m_engine(dnnl::engine::kind::cpu, 0), m_stream(m_engine) {
    omp_set_num_threads(1); // per thread: OpenMP's team size is a per-thread setting
  }

  void run(const Window& w, const InputView& in, const ConvBlock& b, uint64_t compute_set) {
    const PlanKey key = plan_key(w, in, b);
    auto it = m_plans.find(key);
    if (it == m_plans.end()) it = m_plans.emplace(key, Plan(w, in, b, m_engine)).first;
    it->second.run(b, compute_set, m_stream);
  }

private:
  dnnl::engine m_engine;
  dnnl::stream m_stream;
  std::map<PlanKey, Plan> m_plans;
};

void ConvWorkspaceDeleter::operator()(ConvWorkspace* workspace) const {
  delete workspace;
}

ConvWorkspace& WorkerScratch::conv() {
  if (m_conv == nullptr) m_conv.reset(new ConvWorkspace());
  return *m_conv;
}

namespace {

// Outputs whose every window lies in the padding: the bias alone (oneDNN cannot describe an
// input of no rows), through Relu's rule with `relu`.
void fill_bias(const Window& w, const ConvBlock& b) {
  for (int64_t n = 0; n < b.samples; ++n) {
    for (int64_t m = 0; m < b.channels; ++m) {
      float* plane = b.y + n * b.M * w.out_plane() + m * w.out_plane();
      const float bias = b.bias != nullptr ? b.bias[m] : 0.0f;
      std::fill(plane + b.row_begin * w.OW, plane + b.row_end * w.OW, !b.relu || bias > 0.0f ? bias : 0.0f);
    }
  }
}

} // namespace

void conv_forward(KernelContext& context, const Window& w, const ConvBlock& b) {
  // Output rows whose windows lie wholly in the padding are the bias alone. oneDNN would pick
  // another implementation for a view padded by a whole window or more, summing the rows it
  // shares with a block that has no such rows in another order.
  const int64_t extent = (w.KH - 1) * w.DH + 1;
  const int64_t first = w.PT >= extent ? (w.PT - extent) / w.SH + 1 : 0; // the first window reaching row 0
  const int64_t end = (w.H - 1 + w.PT) / w.SH + 1;                       // past the last reaching row H - 1
  const int64_t lo = std::clamp(first, b.row_begin, b.row_end), hi = std::clamp(end, lo, b.row_end);
  ConvBlock inside = b;
  inside.row_begin = lo;
  inside.row_end = hi;
  for (auto [begin, stop] : {std::pair{b.row_begin, lo}, std::pair{hi, b.row_end}}) {
    ConvBlock padding = b;
    padding.row_begin = begin;
    padding.row_end = stop;
    fill_bias(w, padding);
  }
  if (hi <= lo) return;
  const InputView in = input_view(w, inside);
  if (in.cols.rows == 0) {
    fill_bias(w, inside);
    return;
  }
  inside.x += in.rows.first * w.W;
  inside.y += lo * w.OW;
  context.scratch.conv().run(w, in, inside, context.compute_set);
}

} // namespace ipu::kernels
