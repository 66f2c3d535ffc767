// docs/executable_format.md lists every codelet's params; runtime/format/codelet_params.def declares
// them. This reads the doc's tables and compares them with the declarations, so the two cannot
// drift: a param added, renamed or moved in one place and not the other fails here.
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/format/codelet_params.h"

namespace {

namespace params = ipu::format::params;

// What the contract says of one codelet.
struct Declared {
  std::string names; // "kM, kN, ..."
  std::string tail;  // the tail's first index name, or empty
  int64_t (*count)(const int64_t*) = nullptr;
  int fixed = 0;
  std::string fparams; // "kEpsilon", or empty
};

template <typename P> Declared declared() {
  Declared d{std::string(P::kNames), "", nullptr, P::kFixed, ""};
  if constexpr (P::kHasTail) {
    d.tail = std::string(P::kTailName);
    d.count = &P::count;
  }
  return d;
}

std::map<std::string, Declared> declared_codelets() {
  std::map<std::string, Declared> m;
#define PARAMS(codelet, ...) m[#codelet] = declared<params::codelet>();
#define PARAMS_TAIL(codelet, tail, length, ...) m[#codelet] = declared<params::codelet>();
#define FPARAMS(codelet, ...) m[#codelet].fparams = std::string(ipu::format::fparams::codelet::kNames);
#include "runtime/format/codelet_params.def"
#undef PARAMS
#undef PARAMS_TAIL
#undef FPARAMS
  return m;
}

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(' '), e = s.find_last_not_of(' ');
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, sep);)
    out.push_back(trim(item));
  return out;
}

// kRowBegin and row_begin, kOH and OH, name the same param.
std::string key(std::string name) {
  if (name.size() > 1 && name[0] == 'k' && std::isupper(static_cast<unsigned char>(name[1])))
    name = name.substr(1);
  std::string k;
  for (char c : name) {
    if (c != '_') k += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return k;
}

std::vector<std::string> keys(const std::string& list) {
  std::vector<std::string> out;
  if (trim(list).empty()) return out;
  for (const std::string& name : split(list, ','))
    out.push_back(key(name));
  return out;
}

// The cells of every table row of the doc (header separators left out).
std::vector<std::vector<std::string>> table_rows(const std::string& doc) {
  std::vector<std::vector<std::string>> rows;
  std::stringstream in(doc);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("| ", 0) != 0 || line.rfind("| ---", 0) == 0) continue;
    std::vector<std::string> cells = split(line.substr(1, line.size() - 2), '|');
    rows.push_back(cells);
  }
  return rows;
}

} // namespace

TEST_CASE("docs/executable_format.md lists each codelet's params as codelet_params.def declares them") {
  std::ifstream file(std::string(IPUCC_SOURCE_DIR) + "/docs/executable_format.md");
  REQUIRE(file);
  std::stringstream buffer;
  buffer << file.rdbuf();
  const auto rows = table_rows(buffer.str());

  std::map<std::string, std::vector<std::string>> groups;
  for (const auto& cells : rows) {
    if (cells.size() == 2 && (cells[0] == "window" || cells[0] == "loss")) groups[cells[0]] = keys(cells[1]);
  }
  CHECK(groups["window"] == keys(std::string(params::Window::kNames)));
  CHECK(groups["loss"] == keys(std::string(params::Loss::kNames)));

  const auto declared = declared_codelets();
  std::map<std::string, int> documented;
  for (const auto& cells : rows) {
    if (cells.size() != 6 || cells[0].empty() || !std::isdigit(static_cast<unsigned char>(cells[0][0])))
      continue;
    const std::string& name = cells[1];
    CAPTURE(name);
    ++documented[name];
    const auto id = ipu::format::codelet_from_id(static_cast<uint32_t>(std::stoul(cells[0])));
    REQUIRE(id.has_value());
    CHECK(ipu::format::codelet_name(*id) == name);
    const auto it = declared.find(name);
    REQUIRE(it != declared.end());
    const Declared& d = it->second;

    // The fixed params, with the groups expanded, then the tail's arrays name[len].
    std::vector<std::string> fixed;
    std::vector<std::pair<std::string, std::string>> tail;
    for (std::string entry : split(cells[3], ',')) {
      const std::string optional = " (optional)";
      if (entry.size() > optional.size() && entry.ends_with(optional))
        entry.resize(entry.size() - optional.size());
      const size_t bracket = entry.find('[');
      if (bracket != std::string::npos) {
        tail.push_back(
            {key(entry.substr(0, bracket)), key(entry.substr(bracket + 1, entry.size() - bracket - 2))});
      } else if (groups.count(entry) != 0) {
        fixed.insert(fixed.end(), groups[entry].begin(), groups[entry].end());
      } else {
        CHECK_MESSAGE(tail.empty(), "a fixed param after the tail: " << entry);
        fixed.push_back(key(entry));
      }
    }
    CHECK(fixed == keys(d.names));
    CHECK(keys(cells[4]) == keys(d.fparams));
    CHECK(tail.empty() == d.tail.empty());
    if (tail.empty() || d.tail.empty()) continue;
    CHECK(tail.front().first == key(d.tail));
    // The tail's length by the doc (each array as long as the head param it names) and by the
    // contract's rule, for head values that tell the params apart.
    std::vector<int64_t> head(static_cast<size_t>(d.fixed));
    int64_t documented_length = 0;
    for (size_t i = 0; i < head.size(); ++i)
      head[i] = static_cast<int64_t>(i) + 2;
    for (const auto& array_and_length : tail) {
      const auto& length = array_and_length.second;
      const auto at = std::find(fixed.begin(), fixed.end(), length);
      REQUIRE_MESSAGE(at != fixed.end(), "tail array " << array_and_length.first
                                                       << " is as long as an unknown param " << length);
      documented_length += head[static_cast<size_t>(at - fixed.begin())];
    }
    CHECK(d.count(head.data()) - d.fixed == documented_length);
  }
  for (const auto& name_and_layout : declared) {
    const auto& name = name_and_layout.first;
    CAPTURE(name);
    CHECK(documented[name] == 1);
  }
}

TEST_CASE("make_params puts each named param at its index, after a group and before a tail") {
  using P = params::BiasAdd;
  CHECK(ipu::format::make_params<P>({{P::kRowEnd, 4}, {P::kM, 8}, {P::kRowBegin, 2}, {P::kN, 3}}) ==
        std::vector<int64_t>{8, 3, 2, 4});
  using B = params::Binary;
  CHECK(ipu::format::make_params<B>({{B::kKind, 1}, {B::kRank, 1}, {B::kBegin, 0}, {B::kEnd, 5}},
                                    {5, 1, 0}) == std::vector<int64_t>{1, 1, 0, 5, 5, 1, 0});
  using L = params::NllLoss;
  const std::vector<int64_t> loss = {2, 3, 1, 0, 0, 0, 0};
  CHECK(ipu::format::make_params<L>(loss, {{L::kBegin, 0}, {L::kEnd, 2}}) ==
        std::vector<int64_t>{2, 3, 1, 0, 0, 0, 0, 0, 2});
}
