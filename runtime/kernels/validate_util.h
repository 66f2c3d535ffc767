// Shared checks for kernel validate functions.
#pragma once

#include <array>
#include <initializer_list>
#include <string>
#include <vector>

#include "runtime/kernels/kernel.h"

namespace ipu::kernels {

// Operand count and dtypes must match `dtypes`, where FLOAT32 stands for either float dtype.
Status expect_operands(const format::Vertex& vertex, const std::vector<OperandInfo>& operands,
                       std::initializer_list<format::DType> dtypes);
Status expect_param_count(const format::Vertex& vertex, int params, int fparams);
// The params a vertex of layout `P` (one with a tail, format::params) should have, by the
// layout's length rule over its head; head values the vertex lacks count as 0. The caller has
// bounded the ranks the rule reads.
template <typename P>
requires(P::kHasTail) int tailed_param_count(const format::Vertex& vertex) {
  std::array<int64_t, P::kFixed> head{};
  for (int i = 0; i < P::kFixed && i < vertex.params_size(); ++i)
    head[static_cast<size_t>(i)] = vertex.params(i);
  return static_cast<int>(P::count(head.data()));
}
// `params` integer parameters and no float ones, or one more: a trailing flag that must be 0 or 1
// (an optional feature that older executables lack, such as a fused Relu).
Status expect_params_with_optional_flag(const format::Vertex& vertex, int params, const char* flag);
// 0 <= begin <= end <= limit.
Status expect_range(int64_t begin, int64_t end, int64_t limit, const char* what);
// All values positive and their product (checked for overflow) equals `elements`.
Status expect_elements(std::initializer_list<int64_t> dims, uint64_t elements, const char* operand);

} // namespace ipu::kernels
