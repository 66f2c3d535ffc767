#include "cli/html_escape.h"

#include "runtime/base/printable.h"

namespace ipu::cli {

std::string html_escape(std::string_view text) {
  std::string out;
  for (char c : printable_message(text)) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    case '\'':
      out += "&#39;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

} // namespace ipu::cli
