// graph_spec.cpp's parts that graph_spec_training.cpp shares, and nothing else.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "compiler/frontend/graph_spec.h"
#include "compiler/frontend/problems.h"

namespace ipu::frontend {

// A short, bounded rendering of a value for messages: never a recursive dump of a hostile tree.
std::string describe(const nlohmann::json& j);

// The spec's "loss", "metrics" and "optimizer" (docs/graph_spec.md, "Training"), into `spec`;
// what is wrong with them into `problems`.
void parse_training(const nlohmann::json& j, ModelSpec& spec, Problems& problems);

} // namespace ipu::frontend
