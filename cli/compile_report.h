// `ipucc compile --report FILE.html`: one self-contained page (inline CSS, no script, nothing
// fetched) showing, per IPU, a tile memory map (one cell per tile, coloured by its peak bytes
// against the tile's capacity) with the category split of its fullest tiles, the largest tensors,
// the pipeline schedule and the cycle estimate's breakdown. Every number comes from the compile
// (compiler::CompileReport); every name from the model is escaped.
#pragma once

#include <string>

#include "compiler/driver/compile.h"

namespace ipu::cli {

// `failure`: the compile's error message when it did not fit ("" when it did), shown at the top.
std::string compile_report_html(const compiler::CompileReport& report, const std::string& failure);

} // namespace ipu::cli
