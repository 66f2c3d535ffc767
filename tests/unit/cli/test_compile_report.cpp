#include <doctest/doctest.h>

#include <string>

#include "cli/compile_report.h"
#include "cli/html_escape.h"

namespace ipu::cli {
namespace {

size_t count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size()))
    ++n;
  return n;
}

TEST_CASE("cli::html_escape makes markup, quotes and control bytes inert") {
  CHECK(html_escape("dense1/kernel") == "dense1/kernel");
  CHECK(html_escape("<script>alert('x')</script>") == "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;");
  CHECK(html_escape("a & b \"c\"") == "a &amp; b &quot;c&quot;");
  CHECK(html_escape(std::string("a\0b", 3)) == "a\\x00b");
  CHECK(html_escape("\x1b[31mred") == "\\x1b[31mred");
  CHECK(html_escape("\xff<") == "\\xff&lt;"); // not UTF-8: shown as a byte, the page stays valid
  CHECK(html_escape("caf\xc3\xa9") == "caf\xc3\xa9");
  CHECK(html_escape("line 1\nline 2") == "line 1\nline 2");
}

// A report whose every name is hostile markup: two IPUs of three tiles, one of them over.
compiler::CompileReport hostile_report() {
  compiler::CompileReport report;
  report.executable.set_model_name("<script>alert(1)</script>");
  report.executable.set_mode("train");
  report.executable.mutable_target()->set_arch("mk2");
  lowering::MemoryReport& m = report.memory;
  m.ipus = 2;
  m.tiles_per_ipu = 3;
  m.bytes_per_tile = 1000;
  m.peak_per_tile = {0, 500, 250, 1200, 10, 999};
  for (uint64_t bytes : m.peak_per_tile)
    m.split_per_tile.push_back({bytes, 0, 0, 0});
  lowering::TileUsage over;
  over.tile = 3;
  over.peak_bytes = 1200;
  over.tensor_bytes = 1100;
  over.exchange_bytes = 60;
  over.vertex_state_bytes = 32;
  over.code_bytes = 8;
  over.compute_set = "cs\"><b>";
  over.largest_tensors = {{"<img src=x onerror=alert(2)>", 1100}};
  m.split_per_tile[3] = {1100, 60, 32, 8};
  m.fullest_per_ipu = {over};
  m.overflowing_tiles = 1;
  m.largest_tensors = {{"w'<x>", "weight", 1100, 1, 1100}};
  return report;
}

TEST_CASE("cli::compile_report_html draws every tile and escapes every name") {
  const std::string html = compile_report_html(
      hostile_report(), {"", "test.json: 1 tile(s) out of memory <here>", TileScale::kCapacity});
  CHECK(html.rfind("<!doctype html>", 0) == 0);
  CHECK(count(html, "<i class=\"tile ") == 6); // ipus × tiles_per_ipu
  CHECK(count(html, "<i class=\"tile over\"") == 1);
  CHECK(count(html, "<i class=\"tile empty\"") == 1);
  CHECK(html.find("data-tile=\"3\" data-bytes=\"1200\"") != std::string::npos);
  CHECK(html.find("class=\"fullest-tile\" data-tile=\"3\" data-bytes=\"1200\"") != std::string::npos);
  CHECK(html.find("1,200") != std::string::npos);
  // Nothing a model named becomes markup.
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("<img") == std::string::npos);
  CHECK(html.find("<b>") == std::string::npos);
  CHECK(html.find("<here>") == std::string::npos);
  CHECK(html.find("&lt;script&gt;alert(1)&lt;/script&gt;") != std::string::npos);
  CHECK(html.find("&lt;img src=x onerror=alert(2)&gt; 1,100") != std::string::npos);
  CHECK(html.find("w&#39;&lt;x&gt;") != std::string::npos);
  CHECK(html.find("does not fit: 1 tile(s) out of memory") != std::string::npos);
  // Self-contained: nothing is fetched (the schedule's SVG namespace is a name, not an address).
  std::string references = html;
  const std::string svg_namespace = "xmlns=\"http://www.w3.org/2000/svg\"";
  for (size_t at = references.find(svg_namespace); at != std::string::npos;
       at = references.find(svg_namespace))
    references.erase(at, svg_namespace.size());
  for (const std::string reference : {"http:", "https:", "src=\"", "href=", "@import", "url(", "@font-face"})
    CHECK_MESSAGE(references.find(reference) == std::string::npos, reference);
}

TEST_CASE("cli::compile_report_html of a plan that fits shows no failure") {
  compiler::CompileReport report = hostile_report();
  report.memory.overflowing_tiles = 0;
  const std::string html = compile_report_html(report, {});
  CHECK(html.find("; fits</p>") != std::string::npos);
  CHECK(html.find("class=\"failure\"") == std::string::npos);
}

TEST_CASE("cli::compile_report_html colours tiles against the fullest tile unless told the capacity") {
  compiler::CompileReport report = hostile_report();
  lowering::MemoryReport& m = report.memory;
  m.overflowing_tiles = 0;
  m.peak_per_tile = {0, 40, 20, 50, 10, 5}; // at most 5 % of a tile's 1,000 bytes
  for (size_t t = 0; t < m.peak_per_tile.size(); ++t)
    m.split_per_tile[t] = {m.peak_per_tile[t], 0, 0, 0};
  const std::string by_data = compile_report_html(report, {});
  CHECK(by_data.find("data-tile=\"3\" data-bytes=\"50\"") != std::string::npos);
  CHECK(by_data.find("<i class=\"tile b9\" data-tile=\"3\"") != std::string::npos); // the fullest
  CHECK(by_data.find("<i class=\"tile b8\" data-tile=\"1\"") != std::string::npos); // 40 of 50
  CHECK(by_data.find("<i class=\"tile b1\" data-tile=\"5\"") != std::string::npos); // 5 of 50
  CHECK(by_data.find("over the fullest tile's 50 bytes (5.0% of a tile's 1,000") != std::string::npos);
  const std::string by_capacity = compile_report_html(report, {"", "", TileScale::kCapacity});
  CHECK(count(by_capacity, "<i class=\"tile b0\"") == 5); // every used tile under 10 % of 1,000
  CHECK(by_capacity.find("over its capacity, 1,000 bytes") != std::string::npos);
}

TEST_CASE("cli::compile_report_html titles the page by the file compiled") {
  compiler::CompileReport report = hostile_report();
  report.executable.set_model_name("torch_jit");
  CHECK(compile_report_html(report, {"models/resnet18.onnx", "", TileScale::kFullestTile})
            .find("<h1>resnet18.onnx (graph &#39;torch_jit&#39;)</h1>") != std::string::npos);
  report.executable.set_model_name("resnet18");
  CHECK(compile_report_html(report, {"models/resnet18.onnx", "", TileScale::kFullestTile})
            .find("<h1>resnet18.onnx</h1>") != std::string::npos);
  CHECK(compile_report_html(report, {}).find("<h1>resnet18</h1>") != std::string::npos);
}

} // namespace
} // namespace ipu::cli
