#include "runtime/kernels/conv_layouts.h"

#include "runtime/kernels/vector_math.h"

namespace ipu::kernels {
namespace {

using dnnl::memory;

bool has_layout(const memory::desc& desc, memory::format_tag tag) {
  return desc == memory::desc(desc.dims(), memory::data_type::f32, tag);
}

} // namespace

Conversion::Conversion(const memory::desc& our_desc, const memory::desc& their_desc,
                       const dnnl::engine& engine, Operand operand, Planes planes)
    : ours(our_desc, engine, DNNL_MEMORY_NONE), m_planes(planes), m_samples(our_desc.dims()[0]),
      m_channels(our_desc.dims()[1]) {
  if (our_desc == their_desc) {
    theirs = ours;
    return;
  }
  theirs = memory(their_desc, engine);
  const memory::dims dims = their_desc.dims();
  const bool four_axes = dims.size() == 4 && planes.positions == dims[2] * dims[3];
  if (four_axes && dims[1] % 16 == 0 && has_layout(their_desc, memory::format_tag::aBcd16b)) {
    m_way = Way::kChannelBlocks;
    return;
  }
  m_way = Way::kReorder;
  m_reorder = operand == Operand::kWritten ? dnnl::reorder(theirs, ours) : dnnl::reorder(ours, theirs);
}

void Conversion::convert_in(dnnl::stream& stream) {
  if (m_way == Way::kReorder) m_reorder->execute(stream, ours, theirs);
  if (m_way != Way::kChannelBlocks) return;
  const auto* planes = static_cast<const float*>(ours.get_data_handle());
  auto* blocked = static_cast<float*>(theirs.get_data_handle());
  // aBcd16b: sample n's channels [16b, 16b + 16) side by side at each position.
  const int64_t blocks = m_channels / 16;
  for (int64_t n = 0; n < m_samples; ++n)
    for (int64_t b = 0; b < blocks; ++b)
      block16(planes + n * m_planes.sample + b * 16 * m_planes.plane, m_planes.plane, m_planes.positions,
              blocked + (n * blocks + b) * m_planes.positions * 16);
}

void Conversion::convert_out(dnnl::stream& stream, bool relu) {
  if (m_way == Way::kReorder) m_reorder->execute(stream, theirs, ours);
  stream.wait(); // the primitive has written theirs
  auto* planes = static_cast<float*>(ours.get_data_handle());
  if (m_way == Way::kChannelBlocks) {
    const auto* blocked = static_cast<const float*>(theirs.get_data_handle());
    const int64_t blocks = m_channels / 16;
    for (int64_t n = 0; n < m_samples; ++n)
      for (int64_t b = 0; b < blocks; ++b)
        unblock16(blocked + (n * blocks + b) * m_planes.positions * 16, m_planes.positions,
                  planes + n * m_planes.sample + b * 16 * m_planes.plane, m_planes.plane, relu);
    return;
  }
  if (!relu) return;
  for (int64_t n = 0; n < m_samples; ++n) {
    for (int64_t c = 0; c < m_channels; ++c) {
      float* plane = planes + n * m_planes.sample + c * m_planes.plane;
      vector_relu(plane, plane, m_planes.positions);
    }
  }
}

} // namespace ipu::kernels
