// The problems of one model file, collected so that the user sees them all at once. A valid model
// asking for something ipucc does not implement (an ONNX op, an Adam optimizer in a spec, a
// float16 input) is Unsupported; when both kinds are present the result is Unsupported (exit 4),
// otherwise InvalidArgument (exit 3). Each line names the file and where in it.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "runtime/base/status.h"

namespace ipu::frontend {

class Problems {
public:
  explicit Problems(std::string path) : m_path(std::move(path)) {}

  // `what` is wrong at `where` (empty: the file as a whole).
  void add(const std::string& where, const std::string& what) { add_line(where, what); }
  void add_unsupported(const std::string& where, const std::string& what) {
    add_line(where, what);
    m_unsupported = true;
  }
  // A failed status at `where`, Unsupported or not as the status says.
  void add(const std::string& where, const Status& status) {
    if (status.code() == StatusCode::kUnsupported) {
      add_unsupported(where, status.message());
    } else {
      add(where, status.message());
    }
  }

  bool empty() const { return m_lines.empty(); }
  Status status() const {
    std::string message;
    for (const auto& line : m_lines)
      message += (message.empty() ? "" : "\n") + line;
    return m_unsupported ? unsupported(message) : invalid_argument(message);
  }

private:
  void add_line(const std::string& where, const std::string& what) {
    m_lines.push_back(m_path + ": " + (where.empty() ? "" : where + ": ") + what);
  }

  std::string m_path;
  std::vector<std::string> m_lines;
  bool m_unsupported = false;
};

} // namespace ipu::frontend
