// Multi-index walks shared by the generic tensor codelets: an output range [begin, end) of a
// row-major shape `dims`, and for each operand the offset Σ idx_k·stride_k (+ base) read at
// every output element. Strides of 0 broadcast an operand along that axis.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/format/tensor_kinds.h"

namespace ipu::kernels {

// Calls f(i, offsets) for every output element i in [begin, end); offsets[o] is operand o's
// element. Increments the multi-index with carries, so the cost per element is O(1) amortized.
template <size_t NOps, typename F>
void for_each_strided(int64_t rank, const int64_t* dims, const std::array<const int64_t*, NOps>& strides,
                      const std::array<int64_t, NOps>& base, int64_t begin, int64_t end, F&& f) {
  if (begin >= end) return;
  std::array<int64_t, format::kMaxTensorRank> idx{};
  std::array<int64_t, NOps> off = base;
  int64_t rest = begin;
  for (int64_t k = rank - 1; k >= 0; --k) {
    idx[static_cast<size_t>(k)] = rest % dims[k];
    rest /= dims[k];
    for (size_t o = 0; o < NOps; ++o)
      off[o] += idx[static_cast<size_t>(k)] * strides[o][k];
  }
  for (int64_t i = begin; i < end; ++i) {
    f(i, off);
    for (int64_t k = rank - 1; k >= 0; --k) {
      const size_t uk = static_cast<size_t>(k);
      for (size_t o = 0; o < NOps; ++o)
        off[o] += strides[o][k];
      if (++idx[uk] < dims[k]) break;
      for (size_t o = 0; o < NOps; ++o)
        off[o] -= dims[k] * strides[o][k];
      idx[uk] = 0;
    }
  }
}

// The same walk in runs along the innermost axis: calls f(i, offsets, count) for output elements
// [i, i + count), which lie on one row of the last axis, so operand o's elements are
// offsets[o] + j·strides[o][rank - 1] for j in [0, count). Lets kernels run tight inner loops.
template <size_t NOps, typename F>
void for_each_strided_run(int64_t rank, const int64_t* dims, const std::array<const int64_t*, NOps>& strides,
                          const std::array<int64_t, NOps>& base, int64_t begin, int64_t end, F&& f) {
  if (begin >= end) return;
  const int64_t last = rank - 1, row = dims[last];
  std::array<int64_t, format::kMaxTensorRank> idx{};
  std::array<int64_t, NOps> off = base;
  int64_t rest = begin;
  for (int64_t k = last; k >= 0; --k) {
    idx[static_cast<size_t>(k)] = rest % dims[k];
    rest /= dims[k];
    for (size_t o = 0; o < NOps; ++o)
      off[o] += idx[static_cast<size_t>(k)] * strides[o][k];
  }
  for (int64_t i = begin; i < end;) {
    const int64_t count = std::min(end - i, row - idx[static_cast<size_t>(last)]);
    f(i, off, count);
    i += count;
    // Back to the row's start, then carry into the outer axes.
    for (size_t o = 0; o < NOps; ++o)
      off[o] -= idx[static_cast<size_t>(last)] * strides[o][last];
    idx[static_cast<size_t>(last)] = 0;
    for (int64_t k = last - 1; k >= 0; --k) {
      const size_t uk = static_cast<size_t>(k);
      for (size_t o = 0; o < NOps; ++o)
        off[o] += strides[o][k];
      if (++idx[uk] < dims[k]) break;
      for (size_t o = 0; o < NOps; ++o)
        off[o] -= dims[k] * strides[o][k];
      idx[uk] = 0;
    }
  }
}

// Checks rank in [1, kMaxTensorRank] and that `dims` (all positive) multiply to `elements`.
Status check_dims(int64_t rank, const int64_t* dims, uint64_t elements, const char* what);
// Checks that base + Σ idx_k·stride_k lies in [0, elements) for every idx_k in [lo_k, hi_k)
// (lo/hi null: [0, dims_k)); an empty box reads nothing and passes.
Status check_strides(int64_t rank, const int64_t* dims, const int64_t* strides, int64_t base,
                     uint64_t elements, const char* what, const int64_t* lo = nullptr,
                     const int64_t* hi = nullptr);

} // namespace ipu::kernels
