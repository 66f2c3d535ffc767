// Conversions between a convolution's operands as we hold them (NCHW activations, OIHW weights)
// and the layouts oneDNN's primitive asks for. Into and out of AVX-512's channel blocks of 16 they
// go through block16 and unblock16 (vector_math.h); oneDNN's own reorders between these layouts,
// an element at a time, ran at 1–3 Gfloat/s and took a fifth of ResNet-18's convolution time.
// Every conversion is a copy: the primitive's results are the same bits whichever converts.
#pragma once

#include <cstdint>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>

namespace ipu::kernels {

// Our activations as planes: samples `sample` and channels `plane` apart, each channel's
// `positions` (rows × columns) contiguous; positions 0 where they are not (an input view that
// stops short of the last columns).
struct Planes {
  int64_t sample = 0, plane = 0, positions = 0;
};

// One operand's conversion, or none when the primitive takes our layout.
class Conversion {
public:
  enum class Operand { kRead, kWritten }; // by the primitive

  Conversion(const dnnl::memory::desc& our_desc, const dnnl::memory::desc& their_desc,
             const dnnl::engine& engine, Operand operand, Planes planes = {});

  void set(const void* data) { ours.set_data_handle(const_cast<void*>(data)); }
  // Ours → theirs for an operand the primitive reads; theirs → ours for its output, with `relu`
  // as vector_relu makes it (vector_math.h).
  void convert_in(dnnl::stream& stream);
  void convert_out(dnnl::stream& stream, bool relu);

  dnnl::memory ours;   // our tensor's view; its handle is set per call
  dnnl::memory theirs; // the primitive's operand: ours itself, or a buffer

private:
  // How a conversion is made: by oneDNN's reorder, or through blocks of 16 channels. Weights
  // keep oneDNN's reorder: through block16 and a pass putting kernel positions outermost, ResNet-18
  // at batch 1, which converts every weight once a sample, ran 4–8 % slower.
  enum class Way { kNone, kReorder, kChannelBlocks };

  Way m_way = Way::kNone;
  std::optional<dnnl::reorder> m_reorder;
  Planes m_planes;
  int64_t m_samples = 0, m_channels = 0; // of our activations (the first two axes)
};

} // namespace ipu::kernels
