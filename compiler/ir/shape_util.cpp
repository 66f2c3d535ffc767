#include "compiler/ir/shape_util.h"

#include <algorithm>

namespace ipu::ir {

namespace {
std::string text(const std::vector<int64_t>& shape) {
  return TensorType{DType::kFloat32, shape}.to_string();
}
} // namespace

StatusOr<std::vector<int64_t>> broadcast_shapes(const std::vector<int64_t>& a,
                                                const std::vector<int64_t>& b) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      return invalid_argument("shapes " + text(a) + " and " + text(b) + " do not broadcast");
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i];
  }
  return strides;
}

std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& in, const std::vector<int64_t>& out) {
  const std::vector<int64_t> own = row_major_strides(in);
  std::vector<int64_t> strides(out.size(), 0);
  const size_t lead = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i)
    strides[lead + i] = in[i] == out[lead + i] && in[i] != 1 ? own[i] : 0;
  return strides;
}

} // namespace ipu::ir
