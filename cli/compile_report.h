// `ipucc compile --report FILE.html`: one self-contained page (inline CSS, no script, nothing
// fetched) showing, per IPU, a tile memory map (one cell per tile, coloured by its peak bytes
// against the fullest tile's or a tile's capacity) with the category split of its fullest tiles, the largest
// tensors, the pipeline schedule and the cycle estimate's breakdown. Every number comes from the compile
// (compiler::CompileReport); every name from the model is escaped.
#pragma once

#include <string>

#include "compiler/driver/compile.h"

namespace ipu::cli {

// What a tile map's colours measure a tile's peak bytes against.
enum class TileScale {
  kFullestTile, // the plan's fullest tile (at most a tile's capacity): a plan using 5 % shows its spread
  kCapacity,    // a tile's capacity: pages of different plans compare at a glance
};

struct ReportPage {
  std::string model_path; // the file compiled: the page's title ("": the model's own name)
  std::string failure;    // the compile's error when it did not fit ("" when it did), shown at the top
  TileScale scale = TileScale::kFullestTile;
};

std::string compile_report_html(const compiler::CompileReport& report, const ReportPage& page);

} // namespace ipu::cli
