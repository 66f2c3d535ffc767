#include "runtime/base/file_names.h"

#include <set>

#include "runtime/base/sha256.h"

namespace ipu {
namespace {

constexpr size_t kMaxStem = 160;

struct Stem {
  std::string text;
  bool exact = true; // spells the name: only '/' and ':' became '.'
};

Stem stem_of(const std::string& name) {
  Stem stem;
  for (char c : name) {
    const bool letter_or_digit = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    const bool safe = letter_or_digit || c == '_' || c == '-' || c == '.';
    if (safe) {
      stem.text += c;
    } else if (c == '/' || c == ':') {
      stem.text += '.';
    } else {
      stem.text += '_';
      stem.exact = false;
    }
  }
  if (stem.text.empty() || stem.text.size() > kMaxStem) {
    stem.text = stem.text.empty() ? "_" : stem.text.substr(0, kMaxStem);
    stem.exact = false;
  }
  if (stem.text[0] == '.') {
    stem.text[0] = '_';
    stem.exact = false;
  }
  return stem;
}

std::string lower(std::string text) {
  for (char& c : text) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return text;
}

} // namespace

// Files are compared ignoring ASCII case: a checkpoint may be copied to a case-insensitive file
// system. Stems are ASCII, so ASCII case is all there is.
bool file_names_distinct(const std::map<std::string, std::string>& files) {
  std::set<std::string> seen;
  for (const auto& [name, file] : files) {
    if (!seen.insert(lower(file)).second) return false;
  }
  return true;
}

std::map<std::string, std::string> distinct_file_names(const std::vector<std::string>& names,
                                                       std::string_view extension) {
  std::map<std::string, Stem> stems;
  std::map<std::string, int> stem_uses; // by lowercased stem
  for (const std::string& name : names) {
    const Stem& stem = stems[name] = stem_of(name);
    ++stem_uses[lower(stem.text)];
  }
  std::map<std::string, std::string> files;
  for (size_t digits : {8, 16, 64}) {
    files.clear();
    for (const auto& [name, stem] : stems) {
      const bool plain = stem.exact && stem_uses[lower(stem.text)] == 1;
      files[name] = plain ? stem.text + std::string(extension)
                          : stem.text + "~" + sha256_hex(name).substr(0, digits) + std::string(extension);
    }
    if (file_names_distinct(files)) break;
  }
  return files;
}

} // namespace ipu
