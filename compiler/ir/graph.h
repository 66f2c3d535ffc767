// The compiler's IR: a graph of ops over values with static shapes. One graph holds the forward
// pass and, for training, the loss, the gradients and the optimizer updates; each op carries
// the phase it belongs to so that programs can be cut from it.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "compiler/ir/op_attrs.h"
#include "runtime/base/status.h"

namespace ipu::ir {

enum class DType { kFloat32, kInt32 };

enum class OpKind {
#define OP(name, text, definition, attrs) name,
#include "compiler/ir/ops.def"
#undef OP
};
const char* op_kind_name(OpKind kind);

enum class Role {
  kInput,
  kLabel,
  kWeight,
  kOptimizerState,
  kActivation,
  kGradient,
  kLoss,
  kMetric,
  kAccumulator,
  kConstant,
  // The optimizer's run-time hyper-parameters (runtime/format/host_contract.h): written by the
  // host before each update; `initial` holds the compiled values.
  kHyperParameters,
  // Batch normalization's running mean and variance (docs/onnx.md): state the train program
  // updates and evaluate and predict normalise with, streamed and checkpointed like weights.
  kRunningStatistics,
  // One flag per stage that each program sets before anything else: 1 in train (normalise with
  // the batch's statistics), 0 in evaluate and predict (with the running statistics).
  kStatisticsMode
};

// Which part of a step an op belongs to: predict runs kForward, evaluate adds kLoss, train runs
// all of them. kClip (the gradients' global norm, for clipping) runs on every stage before any
// stage's kUpdate, so that every update sees the norm over all stages' gradients. Under dynamic
// loss scaling kLossScale (the scale's update from every stage's finite check) follows kClip, and
// each stage runs either its kUpdate, when the gradients were finite, or its kSkip (the
// accumulators zeroed), the one the stage's kLossScale chose.
enum class Phase { kForward, kLoss, kBackward, kClip, kLossScale, kUpdate, kSkip };

struct TensorType {
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;
  int64_t elements() const;
  std::string to_string() const; // "f32[32,784]"
};

struct Value {
  int id = -1;
  std::string name;
  TensorType type;
  Role role = Role::kActivation;
  int producer = -1;          // op id, -1 for graph inputs, weights and state
  std::vector<float> initial; // weights, optimizer state and constants; empty: zeros
  int stage = 0;
  // The model declares it float16 (an ONNX FLOAT16 value): stored FLOAT16 on the device, so
  // every write rounds it to binary16, whatever --precision says; ops still compute in float32.
  bool declared_half = false;
  // Stays FLOAT32 in a program computing in fp16 (lowering::Precision), where it would be FLOAT16:
  // a weight's gradient (its update's fp32 input, from fp32 partial sums), the loss scale, and a
  // value holding integers (an ONNX integer or bool value, gather indices: binary16 holds
  // integers exactly only up to 2048).
  bool keeps_float32 = false;
};

struct Op {
  int id = -1;
  OpKind kind{};
  std::string name; // the layer / node it came from, for messages
  std::vector<int> inputs;
  std::vector<int> outputs;
  OpAttrs attributes; // of the family ops.def names for `kind` (Graph::add_op checks)
  Phase phase = Phase::kForward;
  int stage = 0;
  // Values the op runs after though it reads none of them: a recomputation waits for the gradient
  // that reaches its segment (passes/recompute.h). Only the BSP levelling reads them.
  std::vector<int> after;

  // The attributes as family T; aborts if the op carries another (a rule reading another op's).
  template <class T> const T& attrs() const {
    const T* a = std::get_if<T>(&attributes);
    if (a == nullptr) std::abort();
    return *a;
  }
  template <class T> T& attrs() {
    T* a = std::get_if<T>(&attributes);
    if (a == nullptr) std::abort();
    return *a;
  }
};

// The window of a Conv, pooling op or one of their gradients (aborts for other ops).
const WindowAttrs& window_of(const Op& op);

// Whether a Conv or MatMul applies Relu to its output (passes/fuse_epilogues.h); false for other ops.
bool has_fused_relu(const Op& op);

// The index in OpAttrs of the attribute family ops.def names for `kind`.
size_t attrs_family(OpKind kind);

class Graph {
public:
  int add_value(std::string name, TensorType type, Role role);
  // Adds an op, running its shape rule to create typed outputs named "<name>:<i>". Returns the
  // op id, or the shape rule's error naming the op. Aborts if `attrs` is not of the family
  // ops.def names for `kind`.
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
  // Adds a copy of op `id` (kind, attributes, stage) named "<its name><suffix>", reading `inputs`, in
  // `phase`, whose outputs copy its outputs' values (type, role, precision, stage) as
  // "<their names><suffix>": what recomputation runs again. No shape rule runs: a fused op has
  // none of its own, and the outputs are the original's. Returns the copy's id.
  int clone_op(int id, const std::string& suffix, std::vector<int> inputs, Phase phase);
  // Removes ops whose outputs another op now produces (a fusion): the remaining ops are
  // renumbered in order and their outputs' producers updated.
  void remove_ops(const std::vector<int>& ids);
  // Removes values `ids`, which no op may read or write (what constant folding leaves behind):
  // the remaining values are renumbered in order and the ops' references updated. Returns each
  // old id's new id, -1 for a removed value, for the ids a caller holds.
  std::vector<int> remove_values(const std::vector<int>& ids);
  // Moves ops `ids` (in that order) before every other op, renumbering all and updating their
  // outputs' producers: passes walk ops by index as a topological order, so an op added to feed
  // earlier ops (passes/mixed_precision.h) must move there.
  void move_ops_to_front(const std::vector<int>& ids);
  // Puts the ops in the order `order` lists their ids (a permutation of them all), renumbering
  // all and updating their outputs' producers.
  void reorder_ops(const std::vector<int>& order);

  std::string to_string() const; // one line per op, for `ipucc compile --dump-ir` and tests

private:
  std::vector<Value> m_values;
  std::vector<Op> m_ops;
};

} // namespace ipu::ir
