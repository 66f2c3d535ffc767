// The compiler's IR: a graph of ops over values with static shapes. One graph holds the forward
// pass and, for training, the loss, the gradients and the optimizer updates; each op carries
// the phase it belongs to so that programs can be cut from it.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/base/status.h"

namespace ipu::ir {

enum class DType { kFloat32, kInt32 };

enum class OpKind {
#define OP(name, text, definition) name,
#include "compiler/ir/ops.def"
#undef OP
};
const char* op_kind_name(OpKind kind);

enum class Role { kInput, kLabel, kWeight, kOptimizerState, kActivation, kGradient, kLoss, kMetric, kAccumulator, kConstant };

// Which part of a step an op belongs to: predict runs kForward, evaluate adds kLoss, train runs
// all four.
enum class Phase { kForward, kLoss, kBackward, kUpdate };

struct TensorType {
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;
  int64_t elements() const;
  std::string to_string() const;  // "f32[32,784]"
};

struct Value {
  int id = -1;
  std::string name;
  TensorType type;
  Role role = Role::kActivation;
  int producer = -1;            // op id, -1 for graph inputs, weights and state
  std::vector<float> initial;   // weights, optimizer state and constants
  int stage = 0;
};

// The window of a convolution or pooling op over the two spatial axes of an NCHW value (1-D
// models use H = 1). Pads are top, left, bottom, right.
struct WindowAttrs {
  std::array<int64_t, 2> kernel{1, 1};
  std::array<int64_t, 2> strides{1, 1};
  std::array<int64_t, 2> dilations{1, 1};
  std::array<int64_t, 4> pads{0, 0, 0, 0};
  int64_t group = 1;               // Conv: channel groups
  bool ceil_mode = false;          // pooling: output size rounds up
  bool count_include_pad = false;  // AveragePool: padded positions count in the divisor
};

// Attributes of all op kinds; each op reads only the fields its registry entry documents.
struct OpAttrs {
  bool trans_a = false;
  bool trans_b = false;
  bool from_logits = true;
  int activation = 0;          // format::ActivationKind for ActivationGrad
  float learning_rate = 0.0f;
  float momentum = 0.0f;
  float gradient_scale = 1.0f;  // SgdUpdate: the gradient is multiplied by this first
  bool clear_gradient = false;  // SgdUpdate: the gradient is an accumulator, zeroed after use
  std::vector<int64_t> shape;  // Reshape target; StridedCopy output shape; Conv and pooling gradients: their output shape
  // Generic tensor ops (compiler/ops/{elementwise,movement,reduce}_ops.cpp).
  int64_t kind = 0;            // format::UnaryKind / BinaryKind / ReduceKind / SoftmaxKind
  float alpha = 0.0f;          // Unary parameters; StridedCopy fill value
  float beta = 0.0f;
  int64_t axis = 0;            // Concat, Gather
  int64_t offset = 0;          // StridedCopy: input element of output index 0
  std::vector<int64_t> axes;   // Reduce: reduced axes, ascending
  bool keep_dims = false;      // Reduce
  std::vector<int64_t> strides;  // StridedCopy: input stride per output axis
  std::vector<int64_t> lower, upper;  // StridedCopy: the box of output indices read (else fill)
  WindowAttrs window;          // Conv, pooling and their gradients
  float epsilon = 0.0f;        // BatchNorm and its gradients, LayerNorm
  std::optional<int64_t> ignore_index;  // NllLoss and its gradient: the target value that contributes nothing
  bool fused_relu = false;     // Conv, MatMul: applies Relu to the output (passes/fuse_epilogues.h)
};

struct Op {
  int id = -1;
  OpKind kind{};
  std::string name;  // the layer / node it came from, for messages
  std::vector<int> inputs;
  std::vector<int> outputs;
  OpAttrs attrs;
  Phase phase = Phase::kForward;
  int stage = 0;
};

class Graph {
 public:
  int add_value(std::string name, TensorType type, Role role);
  // Adds an op, running its shape rule to create typed outputs named "<name>:<i>". Returns the
  // op id, or the shape rule's error naming the op.
  StatusOr<int> add_op(OpKind kind, std::string name, std::vector<int> inputs, OpAttrs attrs, Phase phase,
                       int stage = 0);

  Value& value(int id) { return m_values.at(static_cast<size_t>(id)); }
  const Value& value(int id) const { return m_values.at(static_cast<size_t>(id)); }
  Op& op(int id) { return m_ops.at(static_cast<size_t>(id)); }
  const Op& op(int id) const { return m_ops.at(static_cast<size_t>(id)); }
  const std::vector<Value>& values() const { return m_values; }
  const std::vector<Op>& ops() const { return m_ops; }
  std::vector<Value>& mutable_values() { return m_values; }

  // Value ids by role.
  std::vector<int> values_with_role(Role role) const;
  // Ids of ops that read value `id`.
  std::vector<int> consumers(int id) const;
  // Removes ops whose outputs another op now produces (a fusion): the remaining ops are
  // renumbered in order and their outputs' producers updated.
  void remove_ops(const std::vector<int>& ids);

  std::string to_string() const;  // one line per op, for `ipucc compile --dump-ir` and tests

 private:
  std::vector<Value> m_values;
  std::vector<Op> m_ops;
};

}  // namespace ipu::ir
