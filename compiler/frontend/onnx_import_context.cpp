// OnnxImportContext: the name tables of one ONNX import and the helpers converters use.
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "compiler/frontend/onnx_ops.h"
#include "compiler/frontend/onnx_tensor_helpers.h"

namespace ipu::frontend {
namespace {

const std::string kNoName;

// Reads element `i` of an integer array as int64.
int64_t int_element(const data::NpyArray& a, size_t i) {
  auto read = [&](auto zero) {
    decltype(zero) v;
    std::memcpy(&v, a.data.data() + i * sizeof v, sizeof v);
    return static_cast<int64_t>(v);
  };
  if (a.dtype == "i8") return read(int64_t{});
  if (a.dtype == "i4") return read(int32_t{});
  if (a.dtype == "i2") return read(int16_t{});
  if (a.dtype == "i1") return read(int8_t{});
  if (a.dtype == "u1" || a.dtype == "b1") return read(uint8_t{});
  if (a.dtype == "u2") return read(uint16_t{});
  return read(uint32_t{});
}

} // namespace

void OnnxImportContext::begin_node(const onnx::NodeProto& node, int stage, int version) {
  m_node = &node;
  m_stage = stage;
  m_version = version;
}

int OnnxImportContext::num_inputs() const {
  int n = m_node->input_size();
  while (n > 0 && m_node->input(n - 1).empty())
    --n;
  return n;
}

bool OnnxImportContext::has_input(int index) const {
  return index < m_node->input_size() && !m_node->input(index).empty();
}

const std::string& OnnxImportContext::input_name(int index) const {
  return index < m_node->input_size() ? m_node->input(index) : kNoName;
}

StatusOr<int> OnnxImportContext::materialize(const std::string& name, int stage) {
  if (auto found = m_values.find(name); found != m_values.end()) return found->second;
  auto make = [&](const data::NpyArray& array, ir::Role role) -> StatusOr<int> {
    IPU_ASSIGN_OR_RETURN(std::vector<float> values, data::to_floats(array, "'" + name + "'"));
    const int id = m_graph.add_value(name, {ir::DType::kFloat32, array.shape}, role);
    m_graph.value(id).initial = std::move(values);
    m_graph.value(id).declared_half = array.dtype == "f2";
    m_graph.value(id).keeps_float32 = is_integer_dtype(array.dtype);
    m_graph.value(id).stage = stage;
    m_values[name] = id;
    return id;
  };
  // A float initializer becomes a weight of the stage that first reads it.
  if (auto init = m_initializers.find(name); init != m_initializers.end()) {
    IPU_ASSIGN_OR_RETURN(int weight, make(init->second, ir::Role::kWeight));
    m_initializers.erase(init);
    return weight;
  }
  if (auto constant = m_constants.find(name); constant != m_constants.end())
    return make(constant->second, ir::Role::kConstant);
  return invalid_argument("'" + name +
                          "' is not a graph input, an initializer or the output of an earlier node");
}

StatusOr<int> OnnxImportContext::input(int index) {
  const std::string& name = input_name(index);
  if (name.empty()) return invalid_argument("input " + std::to_string(index) + " is missing");
  IPU_ASSIGN_OR_RETURN(int value, materialize(name, m_stage));
  return m_stage_copies.value_on_stage(m_graph, value, m_stage);
}

StatusOr<int> OnnxImportContext::output_value(const std::string& name) {
  if (auto found = m_values.find(name); found != m_values.end()) return found->second;
  if (!m_constants.count(name)) return invalid_argument("is not computed by any node");
  return materialize(name, 0);
}

std::string OnnxImportContext::host_dtype_of(const std::string& name) const {
  if (auto constant = m_constants.find(name); constant != m_constants.end()) return constant->second.dtype;
  auto recorded = m_dtypes.find(name);
  return recorded == m_dtypes.end() ? "f4" : recorded->second;
}

std::string OnnxImportContext::input_dtype(int index) const {
  return host_dtype_of(input_name(index));
}

const data::NpyArray* OnnxImportContext::constant_input(int index) {
  const std::string& name = input_name(index);
  if (auto found = m_constants.find(name); found != m_constants.end()) return &found->second;
  auto value = m_values.find(name);
  if (!m_evaluate || value == m_values.end() || !m_computed_constants.contains(value->second) ||
      m_fold_errors.count(name))
    return nullptr;
  StatusOr<std::vector<std::vector<float>>> evaluated =
      passes::evaluate_constant_values(m_graph, {value->second}, m_evaluate);
  if (!evaluated.ok()) {
    m_fold_errors[name] = evaluated.status().message();
    return nullptr;
  }
  // The IR value stays the one ops read; the array serves converters that need the constant.
  data::NpyArray array =
      data::make_npy_from_floats(host_dtype_of(name), shape(value->second), evaluated->front());
  return &(m_constants[name] = std::move(array));
}

const data::NpyArray* OnnxImportContext::float_initializer_input(int index) const {
  const std::vector<int>* folded = folded_float_inputs(m_node->op_type());
  if (!folded || std::find(folded->begin(), folded->end(), index) == folded->end()) return nullptr;
  auto found = m_initializers.find(input_name(index));
  return found == m_initializers.end() ? nullptr : &found->second;
}

StatusOr<std::vector<int64_t>> OnnxImportContext::int_constant_input(int index) {
  const data::NpyArray* array = constant_input(index);
  const std::string& name = input_name(index);
  if (!array) return constant_required(index);
  if (array->dtype.empty() || (array->dtype[0] != 'i' && array->dtype[0] != 'u')) {
    return invalid_argument("input '" + name + "' must hold integers, it holds dtype '" + array->dtype + "'");
  }
  std::vector<int64_t> out(array->element_count());
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = int_element(*array, i);
  return out;
}

std::optional<std::string> OnnxImportContext::graph_input_read_by(int value) const {
  std::vector<int> stack = {value};
  std::set<int> seen;
  while (!stack.empty()) {
    const ir::Value& v = m_graph.value(stack.back());
    stack.pop_back();
    if (!seen.insert(v.id).second) continue;
    if (v.role == ir::Role::kInput) return v.name;
    if (v.producer >= 0) {
      const std::vector<int>& inputs = m_graph.op(v.producer).inputs;
      stack.insert(stack.end(), inputs.rbegin(), inputs.rend());
    }
  }
  return std::nullopt;
}

Status OnnxImportContext::constant_required(int index) const {
  const std::string& name = input_name(index);
  auto value = m_values.find(name);
  if (value != m_values.end() && m_graph.value(value->second).role == ir::Role::kInput) {
    return unsupported("graph input '" + name +
                       "' must be a compile-time constant: bind it with --constant-input " + name + "=FILE");
  }
  if (value != m_values.end()) {
    if (const std::optional<std::string> input = graph_input_read_by(value->second)) {
      return unsupported(
          "input '" + name + "' must be a constant known at compile time; it is computed from graph input '" +
          *input + "', and graph input '" + *input +
          "' must be a compile-time constant: bind it with --constant-input " + *input + "=FILE");
    }
  }
  if (auto failed = m_fold_errors.find(name); failed != m_fold_errors.end()) {
    return unsupported("input '" + name + "' must be a constant known at compile time; it is computed from " +
                       "constants, but evaluating it failed: " + failed->second);
  }
  return unsupported("input '" + name +
                     "' must be a constant known at compile time (an initializer, a Constant, or "
                     "computed from those alone)");
}

void OnnxImportContext::set_output(int index, int value, const std::string& dtype) {
  if (index >= m_node->output_size() || m_node->output(index).empty()) return;
  const std::string host_dtype = dtype.empty() ? float_dtype() : dtype;
  m_values[m_node->output(index)] = value;
  m_dtypes[m_node->output(index)] = host_dtype;
  // A converter's float16 output is a value of its own (Cast copies), so this marks no float32
  // value; the ops that write it compute in float32 and the device rounds what they write.
  if (host_dtype == "f2") m_graph.value(value).declared_half = true;
  if (is_integer_dtype(host_dtype)) m_graph.value(value).keeps_float32 = true;
}

std::string OnnxImportContext::float_dtype() const {
  return num_inputs() > 0 && input_dtype(0) == "f2" ? "f2" : "f4";
}

void OnnxImportContext::set_constant_output(int index, data::NpyArray value) {
  if (index < m_node->output_size() && !m_node->output(index).empty())
    m_constants[m_node->output(index)] = std::move(value);
}

void OnnxImportContext::set_empty_output(int index, std::vector<int64_t> shape, const std::string& dtype) {
  data::NpyArray empty;
  empty.dtype = dtype;
  empty.shape = std::move(shape);
  set_constant_output(index, std::move(empty));
}

StatusOr<int> OnnxImportContext::add_op(ir::OpKind kind, std::vector<int> inputs, ir::OpAttrs attrs,
                                        const std::string& suffix) {
  const std::string name = (m_node->name().empty() ? m_node->op_type() : m_node->name()) + suffix;
  IPU_ASSIGN_OR_RETURN(
      int op, m_graph.add_op(kind, name, std::move(inputs), std::move(attrs), ir::Phase::kForward, m_stage));
  return m_graph.op(op).outputs[0];
}

int OnnxImportContext::add_constant_tensor(const std::string& suffix, std::vector<int64_t> shape,
                                           std::vector<float> values, bool holds_integers) {
  const std::string name = (m_node->name().empty() ? m_node->op_type() : m_node->name()) + suffix;
  const int id = m_graph.add_value(name, {ir::DType::kFloat32, std::move(shape)}, ir::Role::kConstant);
  m_graph.value(id).initial = std::move(values);
  m_graph.value(id).stage = m_stage;
  m_graph.value(id).keeps_float32 = holds_integers;
  return id;
}

StatusOr<int> OnnxImportContext::reshape(int value, std::vector<int64_t> shape, const std::string& suffix) {
  if (this->shape(value) == shape) return value;
  ir::ReshapeAttrs attrs;
  attrs.shape = std::move(shape);
  return add_op(ir::OpKind::kReshape, {value}, attrs, suffix);
}

std::string element_type_name(int elem_type) {
  std::string name = onnx::TensorProto::DataType_Name(elem_type);
  return name.empty() ? std::to_string(elem_type) : name;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    out += (i ? "," : "") + std::to_string(shape[i]);
  return out + "]";
}

const onnx::AttributeProto* OnnxImportContext::attribute(std::string_view name) const {
  for (const auto& a : m_node->attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

int64_t OnnxImportContext::int_attr(std::string_view name, int64_t fallback) const {
  const auto* a = attribute(name);
  return a && a->type() == onnx::AttributeProto::INT ? a->i() : fallback;
}

float OnnxImportContext::float_attr(std::string_view name, float fallback) const {
  const auto* a = attribute(name);
  return a && a->type() == onnx::AttributeProto::FLOAT ? a->f() : fallback;
}

std::vector<int64_t> OnnxImportContext::ints_attr(std::string_view name) const {
  const auto* a = attribute(name);
  if (!a || a->type() != onnx::AttributeProto::INTS) return {};
  return {a->ints().begin(), a->ints().end()};
}

std::optional<int> OnnxImportContext::value_of(const std::string& name) const {
  auto found = m_values.find(name);
  if (found == m_values.end()) return std::nullopt;
  return found->second;
}

bool OnnxImportContext::is_weight(const std::string& name) const {
  auto found = m_values.find(name);
  if (found == m_values.end()) return false;
  const ir::Role role = m_graph.value(found->second).role;
  return role == ir::Role::kWeight || role == ir::Role::kRunningStatistics;
}

bool OnnxImportContext::is_compile_time_constant(const std::string& name) {
  if (m_constants.count(name)) return true;
  auto value = m_values.find(name);
  return value != m_values.end() && m_computed_constants.contains(value->second);
}

bool OnnxImportContext::is_known(const std::string& name) const {
  return m_values.count(name) || m_initializers.count(name) || m_constants.count(name);
}

} // namespace ipu::frontend
