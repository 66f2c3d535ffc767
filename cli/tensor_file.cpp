#include "cli/tensor_file.h"

#include "runtime/data/tensor_proto.h"

namespace ipu::cli {

StatusOr<data::NpyArray> read_tensor_file(const std::string& path) {
  const bool pb = path.size() >= 3 && path.compare(path.size() - 3, 3, ".pb") == 0;
  return pb ? data::read_tensor_proto_file(path) : data::read_npy(path);
}

} // namespace ipu::cli
