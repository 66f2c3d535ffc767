#include "compiler/ir/op_registry.h"

#include <atomic>
#include <cstdlib>

#include "runtime/format/tensor_kinds.h"

namespace ipu::ir {

namespace {
std::atomic<const OpTable*> g_op_table{nullptr};
} // namespace

void install_op_table(const OpTable& table) {
  g_op_table.store(&table);
}

const OpDef& op_def(OpKind kind) {
  const OpTable* table = g_op_table.load();
  if (table == nullptr) std::abort(); // a graph built before install_op_table (compiler/ops/op_table.h)
  return *(*table)[static_cast<size_t>(kind)];
}

int GradContext::gradient_of(int value) const {
  return static_cast<size_t>(value) < m_gradients.size() ? m_gradients[static_cast<size_t>(value)] : -1;
}

void GradContext::replace_gradient(int value, int gradient) {
  m_gradients.at(static_cast<size_t>(value)) = gradient;
}

bool GradContext::needs_gradient(int value) const {
  return static_cast<size_t>(value) < m_needs.size() && m_needs[static_cast<size_t>(value)];
}

Status GradContext::add_gradient(int value, int gradient) {
  if (static_cast<size_t>(value) >= m_gradients.size())
    m_gradients.resize(static_cast<size_t>(value) + 1, -1);
  int& slot = m_gradients[static_cast<size_t>(value)];
  if (slot == -1) {
    slot = gradient;
    return Status();
  }
  // A value read by several ops (fan-out): its gradient is the sum of the contributions. Every
  // consumer's rule runs before the producer's (ops are visited newest first), so the sum is
  // complete when the producer reads it.
  if (m_graph.value(slot).type.shape != m_graph.value(gradient).type.shape) {
    return invalid_argument("gradients of '" + m_graph.value(value).name + "' have different shapes " +
                            m_graph.value(slot).type.to_string() + " and " +
                            m_graph.value(gradient).type.to_string());
  }
  const int producer = m_graph.value(gradient).producer;
  BinaryAttrs add;
  add.kind = format::BinaryKind::kAdd;
  IPU_ASSIGN_OR_RETURN(int id, m_graph.add_op(OpKind::kBinary, m_graph.value(value).name + "/grad_sum",
                                              {slot, gradient}, add, Phase::kBackward,
                                              producer >= 0 ? m_graph.op(producer).stage : 0));
  slot = m_graph.op(id).outputs[0];
  return Status();
}

} // namespace ipu::ir
