// MNIST IDX files (http://yann.lecun.com/exdb/mnist/), plain or gzip-compressed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/data/dataset.h"

namespace ipu::data {

// An unsigned-byte IDX array (type code 0x08), the only element type MNIST uses.
struct IdxArray {
  std::vector<int64_t> dims; // from the header, outermost first
  std::vector<uint8_t> data; // prod(dims) bytes, C order
};

// Reads an IDX file of unsigned bytes with 1 to 4 dimensions. Files whose content starts with the
// gzip magic are decompressed whatever their name. Errors: NotFound (no file), InvalidArgument
// (bad magic, unsupported element type, zero dimension), DataLoss (truncated, trailing bytes,
// corrupt gzip stream), IoError.
StatusOr<IdxArray> read_idx_ubyte(const std::string& path);

// Loads the MNIST split ("train" or "test") from dir: {train,t10k}-images-idx3-ubyte and
// {train,t10k}-labels-idx1-ubyte, each either plain or with a .gz suffix (the plain file wins when
// both exist). Pixels become float32 p / 255; sample_shape is {rows, cols, 1}; num_classes is 10
// and every label must be in 0..9.
StatusOr<Dataset> load_mnist_idx(const std::string& dir, const std::string& split);

} // namespace ipu::data
