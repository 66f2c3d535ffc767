#include "cli/diagnostics.h"

#include <cstdio>

#include "cli/exit_codes.h"
#include "runtime/base/printable.h"

namespace ipu::cli {
namespace {

void print(const char* tool, const char* kind, const std::string& message) {
  // Messages quote names from models, which may hold a NUL (printed as a C string, it would end
  // the message there) or other control characters: every one but the newlines between lines is
  // written as \xNN.
  std::string text = printable_message(message);
  for (size_t pos = 0; (pos = text.find('\n', pos)) != std::string::npos; pos += 3)
    text.replace(pos, 1, "\n  ");
  std::fprintf(stderr, "%s: %s: %s\n", tool, kind, text.c_str());
}

} // namespace

void print_error(const char* tool, const std::string& message) {
  print(tool, "error", message);
}
void print_warning(const char* tool, const std::string& message) {
  print(tool, "warning", message);
}
void print_note(const char* tool, const std::string& message) {
  print(tool, "note", message);
}

int fail_usage(const char* tool, CLI::App& app, const CLI::ParseError& error) {
  if (error.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(error);
  print_error(tool, std::string(error.what()) + "\nrun '" + tool + " --help' for usage");
  return kExitUsage;
}

int fail(const char* tool, const Status& status) {
  return fail(tool, status, exit_code_for(status));
}

int fail(const char* tool, const Status& status, int exit_code) {
  print_error(tool, status.message());
  return exit_code;
}

} // namespace ipu::cli
