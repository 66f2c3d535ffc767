// Mixed precision with fp32 master weights (`ipucc compile --precision mixed`, as Keras's
// mixed_float16 policy and Graphcore's AMP): the weights stay fp32 and the optimizer updates
// them; each step, a cast makes the fp16 copy of each weight that the forward and backward read.
// The lowering gives values their dtypes (lowering::Precision::kMixed: the copies are forward
// values, so FLOAT16, rounded as they are written).
#pragma once

#include "compiler/ir/graph.h"
#include "runtime/base/status.h"

namespace ipu::passes {

// For every weight a forward op reads: a Unary Identity "<weight>/fp16" (phase kForward, on the
// weight's stage) whose output the forward ops read instead. The casts come first in the op
// order, so they run before anything else of the forward and autodiff sees them last: the cast's
// gradient, the identity, hands the copy's gradient to the weight. Run before autodiff.
Status add_half_weight_copies(ir::Graph& graph);

// Training in fp16 or mixed precision, after autodiff: when the loss reads a softmax's output,
// that softmax and the loss's gradient of it stay fp32 (ir::Value::keeps_float32), as Keras's
// mixed precision guide makes the output layer's softmax float32: a probability's gradient,
// −S / (batch · p) under loss scale S, leaves binary16's range (65504) once p < S / (65504 ·
// batch), while the softmax's own gradient, to the logits, is (p − label) · S / batch, bounded.
void keep_output_softmax_float32(ir::Graph& graph, int loss);

} // namespace ipu::passes
