// NumPy .npy files (format versions 1.0, 2.0 and 3.0), little-endian C-order arrays of plain
// numeric types: the exchange format with numpy / torch scripts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/data/dataset.h"

namespace ipu::data {

struct NpyArray {
  // Canonical type code without byte order: "b1", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8",
  // "f2", "f4" or "f8".
  std::string dtype;
  std::vector<int64_t> shape; // empty for a 0-d array (one element)
  std::string data;           // element_count() * itemsize raw little-endian bytes, C order

  size_t element_count() const;
};

// Bytes per element of a canonical dtype, 0 if the dtype is not one of the above.
size_t npy_itemsize(const std::string& dtype);

// Reads a .npy file. Errors name the file: InvalidArgument (not an npy file, malformed header),
// Unsupported (fortran_order, big-endian, structured or other dtypes, unknown format version),
// DataLoss (truncated header or data, trailing bytes), NotFound / IoError from the file system.
StatusOr<NpyArray> read_npy(const std::string& path);

// Parses .npy content already in memory; `name` is used in messages.
StatusOr<NpyArray> parse_npy(const std::string& name, std::string content);

// Serialises to .npy bytes: version 1.0, or 2.0 if the header needs more than 64 KiB.
StatusOr<std::string> serialize_npy(const NpyArray& array);

// Writes atomically (write_file_atomic): readers see the old file or the complete new one.
Status write_npy(const std::string& path, const NpyArray& array);

// A float32 array holding prod(shape) values copied from data.
NpyArray make_npy_f32(std::vector<int64_t> shape, const float* data);
// A float16 array of prod(shape) values from data, each rounded to the nearest binary16 value
// (ties to even; exact for the values of a FLOAT16 tensor, which are binary16 already).
NpyArray make_npy_f16(std::vector<int64_t> shape, const float* data);
// An array of `dtype` ("f4", "f2", "b1" or an integer type) holding float32 `values` converted
// as the device's values convert to a model's types: integers rounded to the nearest (they are
// integers already), bools true when not 0, float16 as make_npy_f16.
NpyArray make_npy_from_floats(const std::string& dtype, std::vector<int64_t> shape,
                              const std::vector<float>& values);
// The same from float32 values held as bytes (prod(shape) of them, in host order): a float32
// array adopts the bytes instead of copying them, which saves a run's large outputs a copy
// into memory touched for the first time.
NpyArray make_npy_from_float_bytes(const std::string& dtype, std::vector<int64_t> shape,
                                   std::string float32_bytes);

// Features [N, ...] (f4, f8, f2, b1 or any integer type, converted to float32 as is, no scaling,
// as Keras's fit takes them; uint8 features above 1 get a Dataset::note saying so; every value
// must be finite) and, unless labels_path is empty, labels: class indices [N] or
// [N, 1] (any integer type; values in 0..2^31-2; num_classes is 1 + the largest), or float labels
// [N, ...] (f2, f4 or f8, finite; Dataset::float_labels, label_shape shape[1:], {1} for 1-D).
// sample_shape is shape[1:] ({1} for 1-D features).
StatusOr<Dataset> load_npy_dataset(const std::string& features_path, const std::string& labels_path);

// The values of any npy dtype as float32 (integers and bools as is, no scaling). Floats must be
// finite; `name` names the array in messages.
StatusOr<std::vector<float>> to_floats(const NpyArray& array, const std::string& name);
// The same conversion keeping NaNs and infinities (float64 beyond float32's range becomes one):
// a model's inputs at inference, which ONNX lets hold them (IsNaN, Cast).
std::vector<float> floats_as_is(const NpyArray& array);

// A data set without labels from an in-memory features array [N, ...], converted as above;
// `name` is its source and names it in messages.
StatusOr<Dataset> dataset_from_array(const NpyArray& features, const std::string& name);

} // namespace ipu::data
