// Helpers shared by the converter families of the generic tensor ops
// (onnx_ops_elementwise.cpp, onnx_ops_shape.cpp, onnx_ops_reduce.cpp).
#pragma once

#include <string>
#include <vector>

#include "compiler/frontend/onnx_ops.h"
#include "runtime/format/tensor_kinds.h"

namespace ipu::frontend {

// `axis` in [-rank, rank) made non-negative, or InvalidArgument naming `what`.
StatusOr<int64_t> normalize_axis(int64_t axis, int64_t rank, const std::string& what);
// Integer and bool host dtypes (held as exact floats on the device).
bool is_integer_dtype(const std::string& dtype);
// Product of dims[begin, end).
int64_t product(const std::vector<int64_t>& dims, size_t begin, size_t end);

StatusOr<int> add_unary(OnnxImportContext& ctx, int x, format::UnaryKind kind, float alpha = 0,
                        float beta = 0, const std::string& suffix = "");
StatusOr<int> add_binary(OnnxImportContext& ctx, int a, int b, format::BinaryKind kind,
                         const std::string& suffix = "");
// out[idx] = x[offset + Σ idx_k·strides_k] (a view of x; see ir StridedCopy).
StatusOr<int> add_strided_copy(OnnxImportContext& ctx, int x, std::vector<int64_t> shape,
                               std::vector<int64_t> strides, int64_t offset, const std::string& suffix = "");
// Error unless every dimension is positive: empty tensors are not supported on the device.
Status check_not_empty(const std::vector<int64_t>& shape, const std::string& what);
// An int64 array of `shape` holding `values`.
data::NpyArray make_i64_array(const std::vector<int64_t>& values, std::vector<int64_t> shape);

} // namespace ipu::frontend
