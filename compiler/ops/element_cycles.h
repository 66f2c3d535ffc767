// Cycles per fp32 element of the elementwise codelets, from the per-function costs of
// target::FunctionCycles (popops' cycle estimator tables). One place, so every op that applies a
// function (the generic Unary and Binary codelets, activations, softmax, losses) charges the same.
#pragma once

#include <cstdint>

#include "compiler/target/target.h"
#include "runtime/format/codelet.h"
#include "runtime/format/tensor_kinds.h"

namespace ipu::ops {

// y = f(x; alpha): `alpha` matters for PowScalar only, whose constant exponents popops rewrites
// (0.5 → SQRT, −0.5 → RSQRT, ±1 → copy/INVERSE, 2 → SQUARE) before falling back to POWER.
double unary_cycles_per_element(const target::CycleModel& model, format::UnaryKind kind, double alpha);

double binary_cycles_per_element(const target::CycleModel& model, format::BinaryKind kind);

// The UnaryGrad codelet, dY·f'(x) for a kind with format::has_unary_grad_kernel: the functions
// f' applies plus one vector op for each compare, select, multiply or add around them.
double unary_grad_cycles_per_element(const target::CycleModel& model, format::UnaryKind kind);

// The Activation codelet's forward (`gradient` false) or its gradient from the output
// (sigmoid y(1−y)·dy, tanh (1−y²)·dy, relu a select: vector operations only).
double activation_cycles_per_element(const target::CycleModel& model, format::ActivationKind kind,
                                     bool gradient);

// A softmax over a row, per element: max, subtract, exp, sum, scale (popnn's softmax is these
// popops passes).
double softmax_cycles_per_element(const target::CycleModel& model);

// Batch norm's elementwise passes over [N, C, S] (half: its values are FLOAT16; C the channels).
enum class BatchNormPass {
  kNormalise,          // Y = (X − mean) · istd · scale + B
  kTrainGradientInput, // dX from dY, X and the batch statistics' gradients
};
// Cycles per element as poplibs runs the pass: a sequence of popops ops, the channel ops at
// half_channel_*_cycles_per_element when half and C is a multiple of 4, else each at the vector
// rate. kNormalise: normWhiten's subtract and in-place multiply, normalise's multiply and in-place
// add. kTrainGradientInput: normGradients' scale multiply, the whitening again (subtract, in-place
// multiply), normStatisticsGradients' multiply, in-place add, scaledAddTo (a plain vector op) and
// in-place multiply.
double batch_norm_cycles_per_element(const target::CycleModel& model, BatchNormPass pass, bool half,
                                     int64_t channels);

} // namespace ipu::ops
