// The explicit registry of ONNX ops the importer understands: per op type, the schema versions
// (ONNX `since_version`s) whose semantics are implemented, the attributes read, and a converter
// that adds IR ops for one node. docs/onnx.md lists them; adding an op: docs/adding_an_op.md.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/passes/constant_folding.h"
#include "compiler/passes/stage_split.h"
#include "runtime/base/status.h"
#include "runtime/data/npy.h"

namespace onnx {
class NodeProto;
class AttributeProto;
} // namespace onnx

namespace ipu::frontend {

// What a converter sees of the import in progress.
class OnnxImportContext {
public:
  // `evaluate`, if given, computes the values converters need as constants but that ops compute
  // from constants (passes/constant_folding.h); without it such an input is not a constant.
  OnnxImportContext(ir::Graph& graph, bool training, uint64_t bytes_per_tile = 0,
                    passes::ConstantEvaluator evaluate = nullptr)
      : m_graph(graph), m_training(training), m_bytes_per_tile(bytes_per_tile),
        m_evaluate(std::move(evaluate)), m_computed_constants(graph) {}

  ir::Graph& graph() { return m_graph; }
  bool training() const { return m_training; }
  uint64_t bytes_per_tile() const { return m_bytes_per_tile; } // 0: unknown

  // Set by the importer before each node.
  void begin_node(const onnx::NodeProto& node, int stage, int version);
  const onnx::NodeProto& node() const { return *m_node; }
  int stage() const { return m_stage; }
  int version() const { return m_version; } // the op schema's since_version

  // Number of inputs given (trailing empty names do not count).
  int num_inputs() const;
  bool has_input(int index) const;
  // The IR value of input `index` on this node's stage. Float initializers become weights on
  // first use; constants (Constant outputs, integer initializers) become constant tensors.
  StatusOr<int> input(int index);
  // Input `index` if it is a compile-time constant, else null: an initializer, a Constant's
  // output, or a value ops compute from those alone, which is evaluated now (once).
  const data::NpyArray* constant_input(int index);
  // Input `index` if it is a float initializer not yet made a weight by another node, else null
  // (for values folded at compile time). Only inputs that folded_float_inputs declares for this
  // node's op type are served: the cache key keeps exactly those values.
  const data::NpyArray* float_initializer_input(int index) const;
  // The same constant as int64 values (from any integer dtype), or an error naming the input.
  StatusOr<std::vector<int64_t>> int_constant_input(int index);
  // Unsupported: input `index` must be a compile-time constant and is not. For a graph input, or
  // a value computed from one, the message reads "graph input 'NAME' must be a compile-time
  // constant ...", naming the `--constant-input` flag that binds it (scripts/conformance.sh
  // relies on this wording).
  Status constant_required(int index) const;

  // The host dtype ("f4", "f2", "i8", "i4", "b1", ...) of input `index`: declared for graph inputs,
  // that of the array for constants, recorded by the producing converter otherwise.
  std::string input_dtype(int index) const;

  // Binds output `index` of the node to an IR value (holding values of host dtype `dtype`;
  // float_dtype() if empty) / to a compile-time constant. An "f2" value is stored FLOAT16
  // (ir::Value::declared_half).
  void set_output(int index, int value, const std::string& dtype = "");
  // The float dtype of the node's outputs when its first input is its float operand, as in every
  // float-only op ONNX defines (type constraint T): "f2" for a float16 input, else "f4".
  std::string float_dtype() const;
  void set_constant_output(int index, data::NpyArray value);
  // Binds output `index` to a constant of no elements (a zero in `shape`): it holds no values
  // whatever the inputs are, and ops skip it or refuse it, as empty tensors do not reach the device.
  void set_empty_output(int index, std::vector<int64_t> shape, const std::string& dtype);
  // Adds an IR op on this node's stage, named after the node (plus `suffix`).
  StatusOr<int> add_op(ir::OpKind kind, std::vector<int> inputs, ir::OpAttrs attrs = {},
                       const std::string& suffix = "");
  // A float32 constant tensor computed at import (folded parameters, gather indices), named after
  // the node (plus `suffix`), on this node's stage. `holds_integers`: it stays FLOAT32 under
  // --precision fp16 (ir::Value::keeps_float32), as indices must.
  int add_constant_tensor(const std::string& suffix, std::vector<int64_t> shape, std::vector<float> values,
                          bool holds_integers = false);
  // `value` reshaped (a Reshape op unless the shape is already `shape`).
  StatusOr<int> reshape(int value, std::vector<int64_t> shape, const std::string& suffix = "");
  // A copy: a reference into the graph's value table would dangle once an input materializes or
  // an op is added (both append values).
  std::vector<int64_t> shape(int value) const { return m_graph.value(value).type.shape; }

  // Attributes, with ONNX defaults.
  const onnx::AttributeProto* attribute(std::string_view name) const;
  int64_t int_attr(std::string_view name, int64_t fallback) const;
  float float_attr(std::string_view name, float fallback) const;
  std::vector<int64_t> ints_attr(std::string_view name) const;

  // Import-wide tables.
  void add_initializer(const std::string& name, data::NpyArray value) {
    m_initializers[name] = std::move(value);
  }
  void add_constant(const std::string& name, data::NpyArray value) { m_constants[name] = std::move(value); }
  void bind(const std::string& name, int value, const std::string& dtype) {
    m_values[name] = value;
    m_dtypes[name] = dtype;
  }
  std::optional<int> value_of(const std::string& name) const;
  bool is_known(const std::string& name) const;
  // True if `name` is known at compile time: a constant, or computed from constants alone.
  bool is_compile_time_constant(const std::string& name);
  // True if the initializer `name` became a weight (or batch normalization's running statistics,
  // which the executable updates and --export-onnx writes back alike).
  bool is_weight(const std::string& name) const;
  // The IR value of a graph output (a constant one gets a constant tensor).
  StatusOr<int> output_value(const std::string& name);
  // The host dtype of a named value: that of its constant, else "f4".
  std::string host_dtype_of(const std::string& name) const;

private:
  const std::string& input_name(int index) const;
  // The first graph input (by name) that `value` is computed from, if any: what a user must bind
  // with --constant-input for it to be a constant.
  std::optional<std::string> graph_input_read_by(int value) const;
  // The IR value of `name`, making a weight or constant tensor of it on first use (on `stage`).
  StatusOr<int> materialize(const std::string& name, int stage);

  ir::Graph& m_graph;
  bool m_training;
  uint64_t m_bytes_per_tile;
  const onnx::NodeProto* m_node = nullptr;
  int m_stage = 0;
  int m_version = 0;
  std::map<std::string, int> m_values;                  // ONNX name → IR value
  std::map<std::string, data::NpyArray> m_initializers; // float initializers not yet used
  std::map<std::string, data::NpyArray> m_constants;    // compile-time constants
  std::map<std::string, std::string> m_dtypes;          // host dtype of each value (default "f4")
  passes::StageCopies m_stage_copies;
  passes::ConstantEvaluator m_evaluate;
  passes::ConstantValues m_computed_constants;
  std::map<std::string, std::string> m_fold_errors; // why a value computed from constants was not evaluated
};

using OnnxConvertFn = Status (*)(OnnxImportContext& context);

// "[2,3]", for messages.
std::string shape_text(const std::vector<int64_t>& shape);
// An ONNX element type's name ("FLOAT16"), or its number for types newer than libonnx's enum.
std::string element_type_name(int elem_type);

struct OnnxOpDef {
  std::string_view op_type;
  std::vector<int> versions;                // since_versions implemented, ascending
  std::vector<std::string_view> attributes; // every attribute the converter reads
  OnnxConvertFn convert;
};

// The entry for `op_type`, or null.
const OnnxOpDef* find_onnx_op(std::string_view op_type);
// The inputs of `op_type` whose float initializer values its converter may fold into compile-time
// constants (BatchNormalization's scale, B, mean and var; Dropout's ratio), or null. Weight values stay out
// of the cache key, so these must stay in it: model_fingerprint.cpp keeps their values as structure.
const std::vector<int>* folded_float_inputs(std::string_view op_type);
// Every entry: the families below, each defined in its own onnx_ops_*.cpp file (core: in
// onnx_ops.cpp).
const std::vector<OnnxOpDef>& onnx_ops();
std::vector<OnnxOpDef> core_onnx_ops();
// Generic tensor ops: elementwise and broadcasting (onnx_ops_elementwise.cpp), data movement and
// shapes (onnx_ops_shape.cpp), reductions, softmax, normalization and matrix products
// (onnx_ops_reduce.cpp).
std::vector<OnnxOpDef> elementwise_onnx_ops();
std::vector<OnnxOpDef> shape_onnx_ops();
std::vector<OnnxOpDef> reduce_onnx_ops();
std::vector<OnnxOpDef> conv_onnx_ops();
// BatchNormalization, inference and training mode (onnx_ops_batch_norm.cpp).
std::vector<OnnxOpDef> batch_norm_onnx_ops();
// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (onnx_ops_loss.cpp).
std::vector<OnnxOpDef> loss_onnx_ops();
// RNN, GRU and LSTM, unrolled over the sequence (onnx_ops_recurrent.cpp).
std::vector<OnnxOpDef> recurrent_onnx_ops();

} // namespace ipu::frontend
