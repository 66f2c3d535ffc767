#include "cli/compile_failure.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "cli/json_output.h"
#include "cli/tool_names.h"

namespace ipu::cli {
namespace {

struct OverflowBytes {
  uint64_t tensors = 0, exchange = 0, vertex_state = 0, code = 0;
  uint64_t total() const { return tensors + exchange + vertex_state + code; }
};

std::string shortest(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

// Each way out that applies, as a flag to add or change and what it frees: a lower AMP proportion
// first when exchange buffers are a large share of what overflows, then the options that shrink
// every category.
nlohmann::json suggestions(const OverflowBytes& over, const lowering::MemoryReport& m,
                           const compiler::CompileOptions& o) {
  nlohmann::json out = nlohmann::json::array();
  auto suggest = [&](const std::string& flag, const std::string& why) {
    out.push_back({{"flag", flag}, {"why", why}});
  };
  const double exchange_share =
      over.total() ? static_cast<double>(over.exchange) / static_cast<double>(over.total()) : 0.0;
  if (exchange_share >= 0.25) {
    suggest("--available-memory-proportion " + shortest(o.available_memory_proportion / 2),
            "exchange buffers are " + std::to_string(static_cast<int>(exchange_share * 100)) +
                " % of the overflowing tiles' bytes; convolutions and MatMuls then plan smaller working "
                "sets (poplibs' availableMemoryProportion)");
  }
  if (o.precision == lowering::Precision::kFp32)
    suggest("--precision fp16", "halves the bytes of tensors and exchange buffers");
  if (o.mode == compiler::Mode::kTrain && !o.recompute)
    suggest("--recompute", "keeps checkpoints, not every activation, for the backward pass");
  suggest("--pipeline-stages " + std::to_string(2 * std::max<uint32_t>(1, m.ipus)),
          "spreads the model over twice the IPUs");
  return out;
}

nlohmann::json overflow_json(const lowering::MemoryReport& m, OverflowBytes& over) {
  nlohmann::json tiles = nlohmann::json::array();
  std::vector<size_t> overflowing;
  for (size_t i = 0; i < m.peak_per_tile.size(); ++i) {
    if (m.peak_per_tile[i] > m.bytes_per_tile) overflowing.push_back(i);
  }
  std::stable_sort(overflowing.begin(), overflowing.end(),
                   [&](size_t a, size_t b) { return m.peak_per_tile[a] > m.peak_per_tile[b]; });
  for (size_t i : overflowing) {
    const lowering::TileSplit& split = m.split_per_tile[i];
    over.tensors += split.tensor_bytes;
    over.exchange += split.exchange_bytes;
    over.vertex_state += split.vertex_state_bytes;
    over.code += split.code_bytes;
    tiles.push_back({{"ipu", i / m.tiles_per_ipu},
                     {"tile", i % m.tiles_per_ipu},
                     {"bytes", m.peak_per_tile[i]},
                     {"tensor_bytes", split.tensor_bytes},
                     {"exchange_bytes", split.exchange_bytes},
                     {"vertex_state_bytes", split.vertex_state_bytes},
                     {"code_bytes", split.code_bytes}});
  }
  nlohmann::json fullest = nlohmann::json::array();
  for (const lowering::TileUsage& t : m.fullest_per_ipu) {
    nlohmann::json largest = nlohmann::json::array();
    for (const auto& [name, bytes] : t.largest_tensors)
      largest.push_back({{"name", name}, {"bytes", bytes}});
    fullest.push_back({{"ipu", t.tile / m.tiles_per_ipu},
                       {"tile", t.tile % m.tiles_per_ipu},
                       {"bytes", t.peak_bytes},
                       {"compute_set", t.compute_set},
                       {"largest_tensors", largest}});
  }
  return {{"ipus", m.ipus},
          {"tiles_per_ipu", m.tiles_per_ipu},
          {"bytes_per_tile", m.bytes_per_tile},
          {"overflowing_tiles", m.overflowing_tiles},
          {"tiles", tiles},
          {"fullest", fullest}};
}

} // namespace

nlohmann::json compile_failure_json(const std::string& model, const Status& status, int exit_code,
                                    const lowering::MemoryReport* overflow,
                                    const compiler::CompileOptions* options) {
  nlohmann::json out = json_document(kIpuccTool, "compile");
  out["model"] = model;
  out["fits"] = status.code() == StatusCode::kResourceExhausted ? nlohmann::json(false) : nlohmann::json();
  out["error"] = {
      {"exit_code", exit_code}, {"code", status_code_name(status.code())}, {"message", status.message()}};
  if (overflow) {
    OverflowBytes over;
    out["memory"] = overflow_json(*overflow, over);
    if (options) out["suggestions"] = suggestions(over, *overflow, *options);
  }
  return out;
}

} // namespace ipu::cli
