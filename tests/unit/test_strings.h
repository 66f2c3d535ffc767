// String checks the unit tests share.
#pragma once

#include <string>

namespace ipu::testing {

// Whether `part` occurs in `text`.
inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

} // namespace ipu::testing
