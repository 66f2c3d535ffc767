// Builds small ONNX models in tests with the protobuf classes of Debian's libonnx.
#pragma once

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace ipu::testing {

class OnnxBuilder {
public:
  explicit OnnxBuilder(int opset = 13) {
    m_model.set_ir_version(7);
    auto* op_set = m_model.add_opset_import();
    op_set->set_domain("");
    op_set->set_version(opset);
    m_model.mutable_graph()->set_name("test_graph");
  }

  // A float input whose first axis is the dynamic batch ("N") unless `fixed_batch` > 0.
  OnnxBuilder& input(const std::string& name, const std::vector<int64_t>& sample_shape,
                     int64_t fixed_batch = 0) {
    auto* type = add_value_info(m_model.mutable_graph()->add_input(), name);
    auto* dim = type->mutable_shape()->add_dim();
    if (fixed_batch > 0) {
      dim->set_dim_value(fixed_batch);
    } else {
      dim->set_dim_param("N");
    }
    for (int64_t d : sample_shape)
      type->mutable_shape()->add_dim()->set_dim_value(d);
    return *this;
  }

  OnnxBuilder& output(const std::string& name) {
    add_value_info(m_model.mutable_graph()->add_output(), name);
    return *this;
  }

  OnnxBuilder& floats(const std::string& name, const std::vector<int64_t>& dims,
                      const std::vector<float>& values) {
    auto* t = m_model.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims)
      t->add_dims(d);
    for (float v : values)
      t->add_float_data(v);
    return *this;
  }

  OnnxBuilder& ints(const std::string& name, const std::vector<int64_t>& values) {
    auto* t = m_model.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(values.size()));
    t->set_raw_data(
        std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(int64_t)));
    return *this;
  }

  onnx::NodeProto& node(const std::string& op_type, const std::string& name,
                        const std::vector<std::string>& inputs, const std::vector<std::string>& outputs) {
    auto* n = m_model.mutable_graph()->add_node();
    n->set_op_type(op_type);
    n->set_name(name);
    for (auto& i : inputs)
      n->add_input(i);
    for (auto& o : outputs)
      n->add_output(o);
    return *n;
  }

  static void int_attr(onnx::NodeProto& node, const std::string& name, int64_t value) {
    auto* a = node.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(value);
  }

  static void float_attr(onnx::NodeProto& node, const std::string& name, float value) {
    auto* a = node.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(value);
  }

  static void ints_attr(onnx::NodeProto& node, const std::string& name, const std::vector<int64_t>& values) {
    auto* a = node.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t v : values)
      a->add_ints(v);
  }

  static void string_attr(onnx::NodeProto& node, const std::string& name, const std::string& value) {
    auto* a = node.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(value);
  }

  onnx::ModelProto& model() { return m_model; }
  std::string bytes() const { return m_model.SerializeAsString(); }

private:
  static onnx::TypeProto_Tensor* add_value_info(onnx::ValueInfoProto* info, const std::string& name) {
    info->set_name(name);
    auto* type = info->mutable_type()->mutable_tensor_type();
    type->set_elem_type(onnx::TensorProto::FLOAT);
    return type;
  }

  onnx::ModelProto m_model;
};

// `n` deterministic values in [-scale, scale).
inline std::vector<float> wave(size_t n, float scale, float phase) {
  std::vector<float> out(n);
  for (size_t i = 0; i < n; ++i)
    out[i] = scale * std::sin(1.3f * static_cast<float>(i) + phase);
  return out;
}

} // namespace ipu::testing
