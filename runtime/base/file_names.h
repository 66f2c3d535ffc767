// File names for a set of names that come from models (ONNX nodes and initializers, JSON spec
// layers), which may hold anything: '/', "..", NUL, names equal but for case, thousands of bytes.
// Checkpoints name their tensors' files with it, and `ipurun predict --output-dir` its outputs'.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ipu {

// The file of each name, keyed by name. A file name is the name made readable and safe, its stem:
// '/' and ':' become '.', every byte other than an ASCII letter, digit, '_', '-' or '.' becomes
// '_', a leading '.' becomes '_' (no hidden files, never "." or ".."), and at most 160 bytes are
// kept; then `extension` ("dense1/kernel" -> "dense1.kernel.npy"). The stem gains "~" and 8 hex
// digits of the SHA-256 of the exact name ("a.b.kernel~1f2e3d4c.npy") when it does not spell the
// name (a byte replaced, the name cut or empty), or when another name of the set has the same
// stem ignoring ASCII case ("a/b" and "a.b"; "Dense" and "dense", which would be one file on a
// case-insensitive file system). A stem without that suffix holds no '~', so it never meets one
// with it; should two suffixed names still meet, every suffix grows to 16 hex digits, then to all
// 64. With a 4-byte extension, file names are at most 229 bytes, so a writer's temporary file
// (+11 bytes) stays within the usual 255-byte limit.
std::map<std::string, std::string> distinct_file_names(const std::vector<std::string>& names,
                                                       std::string_view extension);

// Whether no two of the files (values) are one file on a case-insensitive file system.
bool file_names_distinct(const std::map<std::string, std::string>& files);

} // namespace ipu
