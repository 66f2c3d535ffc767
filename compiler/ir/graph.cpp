#include "compiler/ir/graph.h"

#include <algorithm>
#include <sstream>

#include "compiler/ir/op_registry.h"

namespace ipu::ir {

const char* op_kind_name(OpKind kind) {
  switch (kind) {
#define OP(name, text, definition, attrs)                                                                    \
  case OpKind::name:                                                                                         \
    return text;
#include "compiler/ir/ops.def"
#undef OP
  }
  return "?";
}

size_t attrs_family(OpKind kind) {
  switch (kind) {
#define OP(name, text, definition, attrs)                                                                    \
  case OpKind::name:                                                                                         \
    return kAttrsIndex<attrs>;
#include "compiler/ir/ops.def"
#undef OP
  }
  std::abort();
}

const WindowAttrs& window_of(const Op& op) {
  if (const auto* a = std::get_if<ConvAttrs>(&op.attributes)) return a->window;
  if (const auto* a = std::get_if<WindowGradAttrs>(&op.attributes)) return a->window;
  return op.attrs<WindowAttrs>();
}

bool has_fused_relu(const Op& op) {
  if (const auto* a = std::get_if<MatMulAttrs>(&op.attributes)) return a->fused_relu;
  if (const auto* a = std::get_if<ConvAttrs>(&op.attributes)) return a->fused_relu;
  return false;
}

int64_t TensorType::elements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string TensorType::to_string() const {
  std::string s = dtype == DType::kFloat32 ? "f32[" : "i32[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

int Graph::add_value(std::string name, TensorType type, Role role) {
  Value v;
  v.id = static_cast<int>(m_values.size());
  v.name = std::move(name);
  v.type = std::move(type);
  v.role = role;
  m_values.push_back(std::move(v));
  return m_values.back().id;
}

StatusOr<int> Graph::add_op(OpKind kind, std::string name, std::vector<int> inputs, OpAttrs attrs,
                            Phase phase, int stage) {
  Op op;
  op.id = static_cast<int>(m_ops.size());
  op.kind = kind;
  op.name = std::move(name);
  op.inputs = std::move(inputs);
  if (attrs.index() != attrs_family(kind)) std::abort(); // a rule built an op with another op's attributes
  op.attributes = std::move(attrs);
  op.phase = phase;
  op.stage = stage;
  const OpDef& def = op_def(kind);
  if (def.num_inputs != kVariadic && static_cast<int>(op.inputs.size()) != def.num_inputs) {
    return internal_error(op.name + " (" + op_kind_name(kind) + "): expects " +
                          std::to_string(def.num_inputs) + " inputs, got " +
                          std::to_string(op.inputs.size()));
  }
  std::vector<TensorType> outputs;
  Status status = def.infer(*this, op, outputs);
  if (!status.ok()) return status.with_context("'" + op.name + "' (" + op_kind_name(kind) + ")");
  const Role output_role = phase == Phase::kForward ? Role::kActivation
                           : phase == Phase::kLoss  ? Role::kLoss
                                                    : Role::kGradient; // what the training step derives
  for (size_t i = 0; i < outputs.size(); ++i) {
    int id =
        add_value(op.name + (outputs.size() > 1 ? ":" + std::to_string(i) : ""), outputs[i], output_role);
    m_values[static_cast<size_t>(id)].producer = op.id;
    m_values[static_cast<size_t>(id)].stage = stage;
    op.outputs.push_back(id);
  }
  m_ops.push_back(std::move(op));
  return m_ops.back().id;
}

int Graph::clone_op(int id, const std::string& suffix, std::vector<int> inputs, Phase phase) {
  Op copy = m_ops.at(static_cast<size_t>(id));
  copy.id = static_cast<int>(m_ops.size());
  copy.name += suffix;
  copy.inputs = std::move(inputs);
  copy.phase = phase;
  copy.after.clear();
  for (int& out : copy.outputs) {
    Value v = m_values.at(static_cast<size_t>(out));
    v.id = static_cast<int>(m_values.size());
    v.name += suffix;
    v.producer = copy.id;
    v.initial.clear();
    m_values.push_back(std::move(v));
    out = m_values.back().id;
  }
  m_ops.push_back(std::move(copy));
  return m_ops.back().id;
}

std::vector<int> Graph::values_with_role(Role role) const {
  std::vector<int> ids;
  for (const Value& v : m_values) {
    if (v.role == role) ids.push_back(v.id);
  }
  return ids;
}

std::vector<int> Graph::consumers(int id) const {
  std::vector<int> ops;
  for (const Op& op : m_ops) {
    for (int input : op.inputs) {
      if (input == id) {
        ops.push_back(op.id);
        break;
      }
    }
  }
  return ops;
}

void Graph::remove_ops(const std::vector<int>& ids) {
  if (ids.empty()) return;
  std::vector<bool> removed(m_ops.size(), false);
  for (int id : ids)
    removed.at(static_cast<size_t>(id)) = true;
  std::vector<Op> kept;
  for (Op& op : m_ops) {
    if (removed[static_cast<size_t>(op.id)]) continue;
    op.id = static_cast<int>(kept.size());
    for (int out : op.outputs)
      m_values[static_cast<size_t>(out)].producer = op.id;
    kept.push_back(std::move(op));
  }
  m_ops = std::move(kept);
}

std::vector<int> Graph::remove_values(const std::vector<int>& ids) {
  std::vector<int> new_id(m_values.size(), 0);
  for (int id : ids)
    new_id.at(static_cast<size_t>(id)) = -1;
  std::vector<Value> kept;
  for (Value& v : m_values) {
    const auto old_id = static_cast<size_t>(v.id);
    if (new_id[old_id] < 0) continue;
    v.id = new_id[old_id] = static_cast<int>(kept.size());
    kept.push_back(std::move(v));
  }
  m_values = std::move(kept);
  auto renumber = [&](std::vector<int>& refs) {
    for (int& ref : refs) {
      ref = new_id.at(static_cast<size_t>(ref));
      if (ref < 0) std::abort(); // an op still reads or writes a removed value
    }
  };
  for (Op& op : m_ops) {
    renumber(op.inputs);
    renumber(op.outputs);
    renumber(op.after);
  }
  return new_id;
}

void Graph::move_ops_to_front(const std::vector<int>& ids) {
  std::vector<int> order = ids;
  order.reserve(m_ops.size());
  for (const Op& op : m_ops) {
    if (std::find(ids.begin(), ids.end(), op.id) == ids.end()) order.push_back(op.id);
  }
  reorder_ops(order);
}

void Graph::reorder_ops(const std::vector<int>& order) {
  std::vector<Op> ordered;
  ordered.reserve(m_ops.size());
  for (int id : order)
    ordered.push_back(std::move(m_ops.at(static_cast<size_t>(id))));
  for (size_t i = 0; i < ordered.size(); ++i) {
    ordered[i].id = static_cast<int>(i);
    for (int out : ordered[i].outputs)
      m_values[static_cast<size_t>(out)].producer = ordered[i].id;
  }
  m_ops = std::move(ordered);
}

std::string Graph::to_string() const {
  std::ostringstream out;
  static const char* kPhase[] = {"forward", "loss", "backward", "clip", "loss_scale", "update", "skip"};
  for (const Op& op : m_ops) {
    out << kPhase[static_cast<int>(op.phase)] << " stage " << op.stage << ": ";
    for (size_t i = 0; i < op.outputs.size(); ++i) {
      const Value& v = value(op.outputs[i]);
      out << (i ? ", " : "") << v.name << ":" << v.type.to_string();
    }
    out << " = " << op_kind_name(op.kind) << (has_fused_relu(op) ? "+Relu" : "") << "(";
    for (size_t i = 0; i < op.inputs.size(); ++i)
      out << (i ? ", " : "") << value(op.inputs[i]).name;
    out << ")";
    for (size_t i = 0; i < op.after.size(); ++i)
      out << (i ? ", " : " after ") << value(op.after[i]).name;
    out << "\n";
  }
  return out.str();
}

} // namespace ipu::ir
