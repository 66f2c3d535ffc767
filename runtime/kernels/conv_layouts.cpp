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
    : ours(our_desc, engine, DNNL_MEMORY_NONE) {
  if (our_desc == their_desc) {
    theirs = ours;
    return;
  }
  theirs = memory(their_desc, engine);
  m_planes = planes;
  const memory::dims dims = their_desc.dims();
  const bool four_axes = dims.size() == 4 && planes.positions == dims[2] * dims[3];
  if (four_axes && dims[1] % 16 == 0 && has_layout(their_desc, memory::format_tag::aBcd16b)) {
    m_way = Way::kChannelBlocks;
    m_samples = dims[0];
    m_blocks = dims[1] / 16;
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
  for (int64_t n = 0; n < m_samples; ++n)
    for (int64_t b = 0; b < m_blocks; ++b)
      block16(planes + n * m_planes.sample + b * 16 * m_planes.plane, m_planes.plane, m_planes.positions,
              blocked + (n * m_blocks + b) * m_planes.positions * 16);
}

void Conversion::convert_out(dnnl::stream& stream) {
  if (m_way == Way::kReorder) m_reorder->execute(stream, theirs, ours);
  if (m_way != Way::kChannelBlocks) return;
  stream.wait(); // the primitive has written theirs
  const auto* blocked = static_cast<const float*>(theirs.get_data_handle());
  auto* planes = static_cast<float*>(ours.get_data_handle());
  for (int64_t n = 0; n < m_samples; ++n)
    for (int64_t b = 0; b < m_blocks; ++b)
      unblock16(blocked + (n * m_blocks + b) * m_planes.positions * 16, m_planes.positions,
                planes + n * m_planes.sample + b * 16 * m_planes.plane, m_planes.plane);
}

} // namespace ipu::kernels
