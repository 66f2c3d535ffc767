// The forward convolution of a block of samples and output channels within one group, through
// oneDNN's direct convolution: no column matrix is built and no operand is packed per sample,
// where the im2col + SGEMM form spent half of the CNN's time (ARCHITECTURE.md).
#pragma once

#include <cstdint>

#include "runtime/kernels/kernel_context.h"
#include "runtime/kernels/window.h"

namespace ipu::kernels {

// Part of a Conv vertex within one group, or `groups` consecutive whole groups: output rows
// [row_begin, row_end) of its samples and channels. Pointers are already offset to the block's
// samples and channels, not to its rows:
//   x:       the (first) group's first input channel of the first sample; samples lie w.C·H·W apart
//   weights: the first output channel's weights, [channels, Cg, KH, KW] whose output channels lie
//            weight_stride apart (Cg·KH·KW when contiguous; more when Cg is a share of the channels)
//   bias:    the first output channel's bias, or null
//   y:       the first output channel of the first sample; samples lie M·OH·OW apart
// group_channels is Cg, the input channels of one group the block sums; with several groups,
// channels is all of theirs (channels / groups each) and Cg is the whole group. w.N is ignored:
// `samples` says how many there are. Only the input rows the block's windows reach are read.
// With relu, the outputs are what vector_relu makes of them (vector_math.h), taken as they are
// copied out of oneDNN's layout rather than in a pass of their own.
struct ConvBlock {
  const float* x;
  const float* weights;
  const float* bias;
  float* y;
  int64_t samples, group_channels, channels, M;
  int64_t row_begin, row_end;
  int64_t weight_stride;
  int64_t groups = 1;
  bool relu = false;
};

// Computes the block on the calling thread, with that worker's oneDNN plans: one grouped
// convolution for several groups (a depthwise convolution's channels in one call, not one call
// each). Each output element's sum is taken in the same order whatever the block's extent, so
// results do not depend on how vertices split the work; for several groups that holds where each
// has one input and one output channel (run_conv keeps to that). One exception: oneDNN's 1×1 kernel
// blocks many input channels by the block's rows (measured: 96 and 144 channels in bands of rows
// differ in the last bit from the whole plane; 32 do not). The host's task split therefore
// depends on the vertices alone, never the thread count (engine/coalesce.h).
void conv_forward(KernelContext& context, const Window& w, const ConvBlock& block);

} // namespace ipu::kernels
