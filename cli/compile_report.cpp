#include "cli/compile_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "cli/html_escape.h"
#include "cli/number_text.h"
#include "cli/op_costs.h"
#include "cli/schedule_report.h"
#include "runtime/format/executable_summary.h"
#include "runtime/format/host_contract.h"

namespace ipu::cli {
namespace {

// Colour steps of the tile map: a tile's peak over its capacity, in tenths; past capacity is its
// own colour, and a tile that holds nothing another.
constexpr int kSteps = 10;
constexpr uint32_t kMapColumns = 64;
// Rows of each per-op table.
constexpr size_t kListedOps = 40;

constexpr const char* kStyle = R"(body{font-family:sans-serif;font-size:13px;margin:16px;color:#222}
h1{font-size:18px;margin:0 0 4px}h2{font-size:15px;margin:14px 0 6px}h3{font-size:13px;margin:10px 0 4px}
.page{display:grid;grid-template-columns:minmax(0,1fr);gap:24px;align-items:start}
@media (min-width:1240px){.page{grid-template-columns:minmax(0,660px) minmax(0,1fr)}}
#memory,#time{min-width:0}.scroll{overflow-x:auto}#schedule svg,svg.liveness{width:100%;height:auto}
.fails{color:#a00;font-weight:bold}pre.failure{background:#fee;border:1px solid #d99;padding:6px;white-space:pre-wrap}
.tilemap{display:grid;gap:1px;margin:4px 0}.tile{display:block;width:9px;height:9px}
.b0{background:#e3edf7}.b1{background:#d6e4f2}.b2{background:#bcd3ea}.b3{background:#a1c1e1}
.b4{background:#87afd8}.b5{background:#6d9dcf}.b6{background:#538bc6}.b7{background:#3a78b8}
.b8{background:#2d629a}.b9{background:#204c7c}.over{background:#d62728}.empty{background:#fff;box-shadow:inset 0 0 0 1px #ccc}
.legend span{display:inline-block;padding:1px 6px;margin-right:2px;font-size:11px}
table{border-collapse:collapse;margin:4px 0}td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}
td.name,th.name{text-align:left;min-width:110px;max-width:360px;overflow-wrap:anywhere}
table.fullest{font-size:12px}
.bar{display:flex;width:160px;height:10px;background:#f4f4f4;border:1px solid #ccc}
.bar span{display:block;height:10px}.c-tensors{background:#4e79a7}.c-exchange{background:#f28e2b}
.c-vertex{background:#59a14f}.c-code{background:#b07aa1}
.ops{display:none}.ops:target,#ops-by-cycles{display:block}.ops:target~#ops-by-cycles{display:none}
th a{color:inherit;text-decoration:none}
@media print{.page{display:block}.scroll{overflow:visible}table,table.fullest{font-size:10px}.bar{width:60px}
td.name,th.name{min-width:40px;max-width:160px}}
)";

std::string cycles_text(double cycles) {
  return with_commas(static_cast<uint64_t>(std::llround(std::max(0.0, cycles))));
}

std::string percent(uint64_t part, uint64_t whole) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f%%",
                whole == 0 ? 0.0 : 100.0 * static_cast<double>(part) / whole);
  return buffer;
}

// The bytes a tile's colour steps divide: the fullest tile's (at most a capacity), or a capacity.
uint64_t scale_bytes(const lowering::MemoryReport& m, TileScale scale) {
  if (scale == TileScale::kCapacity) return std::max<uint64_t>(1, m.bytes_per_tile);
  const uint64_t fullest = *std::max_element(m.peak_per_tile.begin(), m.peak_per_tile.end());
  return std::max<uint64_t>(1, std::min(fullest, m.bytes_per_tile));
}

std::string colour_class(uint64_t bytes, uint64_t scale, uint64_t capacity) {
  if (bytes == 0) return "empty";
  if (bytes > capacity) return "over";
  const auto step = static_cast<int>(static_cast<double>(bytes) * kSteps / static_cast<double>(scale));
  return "b" + std::to_string(std::min(step, kSteps - 1));
}

std::string split_text(const lowering::TileSplit& s) {
  return "tensors " + with_commas(s.tensor_bytes) + ", exchange buffers " + with_commas(s.exchange_bytes) +
         ", vertex state " + with_commas(s.vertex_state_bytes) + ", code " + with_commas(s.code_bytes);
}

// The four categories as shares of the tile's peak (its share of the capacity is a column of its
// own: drawn against the capacity, a tile at 5 % would be a sliver).
std::string split_bar(const lowering::TileSplit& s) {
  const uint64_t total = s.tensor_bytes + s.exchange_bytes + s.vertex_state_bytes + s.code_bytes;
  const double scale = 100.0 / static_cast<double>(std::max<uint64_t>(total, 1));
  std::string out = "<div class=\"bar\">";
  const std::pair<const char*, uint64_t> parts[] = {{"c-tensors", s.tensor_bytes},
                                                    {"c-exchange", s.exchange_bytes},
                                                    {"c-vertex", s.vertex_state_bytes},
                                                    {"c-code", s.code_bytes}};
  for (const auto& [cls, bytes] : parts) {
    char width[32];
    std::snprintf(width, sizeof width, "%.2f%%", static_cast<double>(bytes) * scale);
    out += "<span class=\"" + std::string(cls) + "\" style=\"width:" + width + "\"></span>";
  }
  return out + "</div>";
}

std::string legend(const lowering::MemoryReport& m, TileScale scale) {
  const uint64_t of = scale_bytes(m, scale);
  const std::string measure = scale == TileScale::kCapacity
                                  ? "its capacity, " + with_commas(m.bytes_per_tile) + " bytes"
                                  : "the fullest tile's " + with_commas(of) + " bytes (" +
                                        percent(of, m.bytes_per_tile) + " of a tile's " +
                                        with_commas(m.bytes_per_tile) +
                                        "; --report-scale capacity for a fixed scale)";
  std::string out =
      "<p class=\"legend\">Peak bytes of a tile over " + measure + ": <span class=\"empty\">empty</span>";
  for (int i = 0; i < kSteps; ++i) {
    out += "<span class=\"b" + std::to_string(i) + "\"" + (i >= kSteps / 2 ? " style=\"color:#fff\"" : "") +
           ">" + std::to_string(i * 100 / kSteps) + "%</span>";
  }
  return out + "<span class=\"over\" style=\"color:#fff\">over 100%</span></p>\n";
}

std::string fullest_table(const lowering::MemoryReport& m, uint32_t ipu) {
  std::string out = "<table class=\"fullest\">\n<tr><th>tile</th><th>peak bytes</th><th>of capacity</th>"
                    "<th class=\"name\">compute set then</th><th>tensors</th><th>exchange buffers</th>"
                    "<th>vertex state</th><th>code</th><th class=\"name\">split</th>"
                    "<th class=\"name\">largest tensors there</th></tr>\n";
  for (const lowering::TileUsage& u : m.fullest_per_ipu) {
    if (u.tile / m.tiles_per_ipu != ipu) continue;
    const lowering::TileSplit& s = m.split_per_tile[u.tile];
    std::string tensors;
    for (const auto& [name, bytes] : u.largest_tensors)
      tensors += (tensors.empty() ? "" : "<br>") + html_escape(name) + " " + with_commas(bytes);
    if (u.other_tensors > 0) tensors += "<br>and " + std::to_string(u.other_tensors) + " more";
    out += "<tr class=\"fullest-tile\" data-tile=\"" + std::to_string(u.tile) + "\" data-bytes=\"" +
           std::to_string(u.peak_bytes) + "\"><td>" + std::to_string(u.tile) + "</td><td>" +
           with_commas(u.peak_bytes) + "</td><td>" + percent(u.peak_bytes, m.bytes_per_tile) +
           "</td><td class=\"name\">" +
           (u.compute_set.empty() ? "(resident data only)" : html_escape(u.compute_set)) + "</td><td>" +
           with_commas(u.tensor_bytes) + "</td><td>" + with_commas(u.exchange_bytes) + "</td><td>" +
           with_commas(u.vertex_state_bytes) + " (" + with_commas(u.vertices) + " vertices)</td><td>" +
           with_commas(u.code_bytes) + " (" + with_commas(u.codelets) + " codelets)</td><td class=\"name\">" +
           split_bar(s) + "</td><td class=\"name\">" + tensors + "</td></tr>\n";
  }
  return out + "</table>\n";
}

// Memory over the program on one IPU: the fullest tile at each step and the mean of its tiles,
// against the steps of the longest program, the peak marked (PopVision's liveness view).
std::string liveness_chart(const lowering::MemoryReport& m, uint32_t ipu) {
  if (m.liveness.empty()) return "";
  constexpr double kWidth = 600, kHeight = 140, kLeft = 70, kTop = 14, kBottom = 30;
  uint64_t top = 1;
  size_t peak_at = 0;
  for (size_t i = 0; i < m.liveness.size(); ++i) {
    const uint64_t bytes = m.liveness[i].fullest_tile_per_ipu[ipu];
    if (bytes > top) {
      top = bytes;
      peak_at = i;
    }
  }
  const uint64_t peak = top;
  const double y_max = static_cast<double>(top) * 1.1;
  const double steps = static_cast<double>(std::max<size_t>(1, m.liveness.size() - 1));
  auto x = [&](size_t i) { return kLeft + kWidth * static_cast<double>(i) / steps; };
  auto y = [&](double bytes) { return kTop + kHeight * (1.0 - bytes / y_max); };
  auto number = [](double v) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f", v);
    return std::string(text);
  };
  std::string fullest, mean;
  for (size_t i = 0; i < m.liveness.size(); ++i) {
    const lowering::LiveStep& step = m.liveness[i];
    fullest += number(x(i)) + "," + number(y(static_cast<double>(step.fullest_tile_per_ipu[ipu]))) + " ";
    mean += number(x(i)) + "," +
            number(y(static_cast<double>(step.total_per_ipu[ipu]) / std::max(1u, m.tiles_per_ipu))) + " ";
  }
  const double width = kLeft + kWidth + 10, height = kTop + kHeight + kBottom;
  std::string svg = "<svg class=\"liveness\" data-ipu=\"" + std::to_string(ipu) + "\" data-peak=\"" +
                    std::to_string(peak) + "\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " +
                    number(width) + " " + number(height) + "\" width=\"" + number(width) +
                    "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  svg += "<line x1=\"" + number(kLeft) + "\" x2=\"" + number(kLeft) + "\" y1=\"" + number(kTop) + "\" y2=\"" +
         number(kTop + kHeight) + "\" stroke=\"#999\"/><line x1=\"" + number(kLeft) + "\" x2=\"" +
         number(kLeft + kWidth) + "\" y1=\"" + number(kTop + kHeight) + "\" y2=\"" + number(kTop + kHeight) +
         "\" stroke=\"#999\"/>\n";
  svg += "<text x=\"" + number(kLeft - 4) + "\" y=\"" + number(y(static_cast<double>(peak)) + 4) +
         "\" text-anchor=\"end\">" + with_commas(peak) + "</text><text x=\"" + number(kLeft - 4) + "\" y=\"" +
         number(kTop + kHeight) + "\" text-anchor=\"end\">0</text>\n";
  svg += "<polyline fill=\"none\" stroke=\"#9ecae1\" stroke-width=\"1.5\" points=\"" + mean + "\"/>\n";
  svg += "<polyline fill=\"none\" stroke=\"#204c7c\" stroke-width=\"1.5\" points=\"" + fullest + "\"/>\n";
  svg += "<circle cx=\"" + number(x(peak_at)) + "\" cy=\"" + number(y(static_cast<double>(peak))) +
         "\" r=\"4\" fill=\"#d62728\"><title>peak: " + with_commas(peak) + " bytes in " +
         html_escape(m.liveness_names[peak_at]) + "</title></circle>\n";
  svg += "<text x=\"" + number(kLeft) + "\" y=\"" + number(height - 8) +
         "\">program steps, in the longest program's order; dark: the fullest tile, light: the mean "
         "tile</text>\n";
  return "<h3>Memory over the program</h3>\n<p>Peak " + with_commas(peak) + " bytes (" +
         percent(peak, m.bytes_per_tile) + " of a tile) in " + html_escape(m.liveness_names[peak_at]) +
         "</p>\n" + svg + "</svg>\n";
}

std::string ipu_section(const lowering::MemoryReport& m, uint32_t ipu, TileScale scale) {
  uint64_t sum = 0, peak = 0;
  uint32_t used = 0, over = 0, fullest = ipu * m.tiles_per_ipu;
  for (uint32_t t = ipu * m.tiles_per_ipu; t < (ipu + 1) * m.tiles_per_ipu; ++t) {
    const uint64_t bytes = m.peak_per_tile[t];
    sum += bytes;
    used += bytes > 0 ? 1 : 0;
    over += bytes > m.bytes_per_tile ? 1 : 0;
    if (bytes > peak) {
      peak = bytes;
      fullest = t;
    }
  }
  std::string out =
      "<section class=\"ipu\" id=\"ipu-" + std::to_string(ipu) + "\">\n<h2>IPU " + std::to_string(ipu) +
      "</h2>\n<p>" + with_commas(used) + " of " + with_commas(m.tiles_per_ipu) + " tiles used, " +
      with_commas(sum) + " bytes at their peaks; fullest tile " + std::to_string(fullest) + " holds " +
      with_commas(peak) + " of " + with_commas(m.bytes_per_tile) + " bytes (" +
      percent(peak, m.bytes_per_tile) + ")" +
      (over > 0 ? "; <span class=\"fails\">" + with_commas(over) + " tile(s) out of memory</span>"
                : std::string()) +
      "</p>\n";
  out += "<div class=\"tilemap\" style=\"grid-template-columns:repeat(" +
         std::to_string(std::min(kMapColumns, std::max(1u, m.tiles_per_ipu))) + ",9px)\">\n";
  for (uint32_t t = ipu * m.tiles_per_ipu; t < (ipu + 1) * m.tiles_per_ipu; ++t) {
    const uint64_t bytes = m.peak_per_tile[t];
    out += "<i class=\"tile " + colour_class(bytes, scale_bytes(m, scale), m.bytes_per_tile) +
           "\" data-tile=\"" + std::to_string(t) + "\" data-bytes=\"" + std::to_string(bytes) +
           "\" title=\"tile " + std::to_string(t) + ": " + with_commas(bytes) + " of " +
           with_commas(m.bytes_per_tile) + " bytes (" + percent(bytes, m.bytes_per_tile) + "); " +
           split_text(m.split_per_tile[t]) + "\"></i>";
    if ((t + 1) % kMapColumns == 0) out += "\n";
  }
  out += "</div>\n" + liveness_chart(m, ipu) +
         "<h3>Fullest tiles at their fullest moment</h3>\n<div class=\"scroll\">" + fullest_table(m, ipu) +
         "</div>\n</section>\n";
  return out;
}

std::string tensors_section(const lowering::MemoryReport& m) {
  std::string out =
      "<section id=\"tensors\">\n<h2>Largest tensors</h2>\n<div class=\"scroll\"><table>\n<tr><th "
      "class=\"name\">tensor</th>"
      "<th class=\"name\">role</th><th>bytes</th><th>tiles</th><th>most on one tile</th></tr>\n";
  for (const lowering::TensorFootprint& t : m.largest_tensors) {
    out += "<tr><td class=\"name\">" + html_escape(t.name) + "</td><td class=\"name\">" +
           html_escape(t.role) + "</td><td>" + with_commas(t.bytes) + "</td><td>" + with_commas(t.tiles) +
           "</td><td>" + with_commas(t.largest_part) + "</td></tr>\n";
  }
  return out + "</table></div>\n</section>\n";
}

std::string schedule_section(const format::Executable& executable) {
  const format::ExecutableSummary exe = format::summarize(executable);
  const nlohmann::json numbers = schedule_json(exe);
  std::string out = "<section id=\"schedule\">\n<h2>Pipeline schedule</h2>\n" + schedule_svg(exe) +
                    "<table>\n<tr><th>IPU</th><th>busy cycles/step</th><th>crossing cycles/step</th>"
                    "<th>idle cycles/step</th><th>stash bytes</th></tr>\n";
  for (const auto& ipu : numbers["ipus"]) {
    out += "<tr><td>" + std::to_string(ipu["ipu"].get<int>()) + "</td><td>" +
           cycles_text(ipu["busy_cycles"].get<double>()) + "</td><td>" +
           cycles_text(ipu["crossing_cycles"].get<double>()) + "</td><td>" +
           cycles_text(ipu["idle_cycles"].get<double>()) + "</td><td>" +
           with_commas(ipu["stash_bytes"].get<uint64_t>()) + "</td></tr>\n";
  }
  char bubble[32];
  std::snprintf(bubble, sizeof bubble, "%.1f%%", 100.0 * numbers["bubble_fraction"].get<double>());
  return out + "</table>\n<p>bubble " + bubble +
         "; busy: the IPU's passes, crossing: the copies its stage sends and receives (their sum per "
         "micro-batch is the stage's cycles in the compile's note on stage imbalance)</p>\n</section>\n";
}

std::string cycles_section(const format::Executable& exe) {
  std::string out =
      "<section id=\"cycles\">\n<h2>Estimated cycles per step</h2>\n<div class=\"scroll\"><table>\n<tr>"
      "<th class=\"name\">program</th><th>total</th><th>compute</th><th>vertex launch</th>"
      "<th>exchange</th><th>sync</th><th>transfer</th></tr>\n";
  for (const auto& p : exe.programs()) {
    if (!format::runs_steps(p.name())) continue;
    const auto& b = p.breakdown_per_step();
    out += "<tr><td class=\"name\">" + html_escape(p.name()) + "</td><td>" +
           with_commas(p.cycles_per_step()) + "</td><td>" + cycles_text(b.compute()) + "</td><td>" +
           cycles_text(b.vertex_launch()) + "</td><td>" + cycles_text(b.exchange()) + "</td><td>" +
           cycles_text(b.sync()) + "</td><td>" + cycles_text(b.transfer()) + "</td></tr>\n";
  }
  char clock[32];
  std::snprintf(clock, sizeof clock, "%.2f GHz", exe.target().clock_hz() / 1e9);
  return out + "</table></div>\n<p>at " + clock + " (docs/cycle_model.md)</p>\n</section>\n";
}

// The page's title: the file compiled (an ONNX graph is often named only by its exporter,
// "torch_jit"), and the model's own name where it differs from the file's.
std::string title(const format::Executable& exe, const std::string& model_path) {
  if (model_path.empty()) return exe.model_name();
  std::string file = std::filesystem::path(model_path).filename().string();
  const std::string stem = std::filesystem::path(model_path).stem().string();
  if (exe.model_name().empty() || exe.model_name() == stem) return file;
  return file + " (graph '" + exe.model_name() + "')";
}

// The ops by what they cost per step, as three tables, each sorted by one column and shown when
// its header is clicked (CSS :target; the page runs no script). The cycle-sorted one is last, so
// that it shows until another is chosen.
std::string ops_table(const std::vector<OpCost>& ops, const char* id, const char* sorted_by) {
  auto header = [&](const char* target, const char* text) {
    const bool sorted = std::string(target) == id;
    return std::string("<th><a href=\"#") + target + "\">" + text + (sorted ? " &#9660;" : "") + "</a></th>";
  };
  std::string out = std::string("<div class=\"ops scroll\" id=\"") + id +
                    "\"><table>\n<tr><th class=\"name\">op</th>" + header("ops-by-cycles", "cycles/step") +
                    header("ops-by-exchange", "exchange bytes/step") + header("ops-by-tiles", "tiles") +
                    "<th>vertices</th><th>compute sets</th></tr>\n";
  const size_t shown = std::min(ops.size(), kListedOps);
  for (size_t i = 0; i < shown; ++i) {
    const OpCost& op = ops[i];
    out += "<tr class=\"op\"><td class=\"name\">" + html_escape(op.op) + "</td><td>" +
           cycles_text(op.cycles) + "</td><td>" + cycles_text(op.exchange_bytes) + "</td><td>" +
           with_commas(op.tiles) + "</td><td>" + with_commas(op.vertices) + "</td><td>" +
           with_commas(op.compute_sets) + "</td></tr>\n";
  }
  out += "</table>\n";
  if (ops.size() > shown) {
    out += "<p>the " + std::to_string(shown) + " with the most " + sorted_by + " of " +
           with_commas(ops.size()) + " ops</p>\n";
  }
  return out + "</div>\n";
}

std::string ops_section(const format::Executable& exe) {
  StatusOr<std::vector<OpCost>> costs = op_costs(exe);
  if (!costs.ok() || costs->empty()) return "";
  std::vector<OpCost> by_exchange = *costs, by_tiles = *costs;
  std::stable_sort(by_exchange.begin(), by_exchange.end(),
                   [](const OpCost& a, const OpCost& b) { return a.exchange_bytes > b.exchange_bytes; });
  std::stable_sort(by_tiles.begin(), by_tiles.end(),
                   [](const OpCost& a, const OpCost& b) { return a.tiles > b.tiles; });
  return "<section id=\"ops-section\">\n<h2>Ops</h2>\n<p>Each op's share of the estimated cycles and "
         "exchange of "
         "the compute sets it runs in, per step of the " +
         std::string(exe.mode() == "train" ? "train" : "predict") +
         " program (docs/report.md); click a column to sort by it.</p>\n" +
         ops_table(by_exchange, "ops-by-exchange", "exchange bytes") +
         ops_table(by_tiles, "ops-by-tiles", "tiles") + ops_table(*costs, "ops-by-cycles", "cycles") +
         "</section>\n";
}

} // namespace

std::string compile_report_html(const compiler::CompileReport& report, const ReportPage& page) {
  const format::Executable& exe = report.executable;
  const lowering::MemoryReport& m = report.memory;
  const std::string model = html_escape(title(exe, page.model_path));
  std::string out =
      "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + model +
      ": ipucc compile report</title>\n<style>" + kStyle + "</style></head>\n<body>\n<h1>" + model +
      "</h1>\n<p>" + html_escape(exe.mode()) + ", " + html_escape(exe.target().arch()) + ", " +
      std::to_string(m.ipus) + " IPU(s) of " + with_commas(m.tiles_per_ipu) + " tiles of " +
      with_commas(m.bytes_per_tile) + " bytes, batch " + std::to_string(exe.batch_size()) + "; " +
      (m.overflowing_tiles > 0 ? "<span class=\"fails\">does not fit: " + with_commas(m.overflowing_tiles) +
                                     " tile(s) out of memory</span>"
                               : std::string("fits")) +
      "</p>\n";
  if (!page.failure.empty()) out += "<pre class=\"failure\">" + html_escape(page.failure) + "</pre>\n";
  out += "<div class=\"page\">\n<div id=\"memory\">\n<h2>Tile memory</h2>\n" + legend(m, page.scale) +
         "<p>Split of a tile's peak: <span class=\"c-tensors\">&nbsp;&nbsp;</span> tensors <span "
         "class=\"c-exchange\">&nbsp;&nbsp;"
         "</span> exchange buffers <span class=\"c-vertex\">&nbsp;&nbsp;</span> vertex state "
         "<span class=\"c-code\">&nbsp;&nbsp;</span> code</p>\n";
  for (uint32_t ipu = 0; ipu < m.ipus; ++ipu)
    out += ipu_section(m, ipu, page.scale);
  out += tensors_section(m) + "</div>\n<div id=\"time\">\n" + schedule_section(exe) + cycles_section(exe) +
         ops_section(exe) + "</div>\n</div>\n</body></html>\n";
  return out;
}

} // namespace ipu::cli
