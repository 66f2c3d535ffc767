// Pipeline stages: a value read by an op of another stage travels there through a StageCopy op,
// so each op reads only values of its own IPU. Frontends call value_on_stage for every input as
// they add ops in topological order, which keeps the op list topologically sorted; autodiff
// then carries gradients back through the copies' gradient rule.
#pragma once

#include <map>
#include <utility>

#include "compiler/ir/graph.h"

namespace ipu::passes {

class StageCopies {
public:
  // `value` as seen from `stage`: the value itself, or its copy onto that stage (added on first
  // use, so a value read by several ops of one stage is copied once).
  StatusOr<int> value_on_stage(ir::Graph& graph, int value, int stage);

private:
  std::map<std::pair<int, int>, int> m_copies; // (value, stage) -> copy
};

} // namespace ipu::passes
