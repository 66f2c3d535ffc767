// The table of every op's definition (compiler/ir/ops.def): its shape and gradient rules for
// ir::install_op_table, its lowering for lowering::lower_graph. It lives here, above lowering,
// because each definition holds the op's lowering.
#pragma once

#include "compiler/ir/op_registry.h"
#include "compiler/lowering/lower_graph.h"

namespace ipu::ops {

// What an op's family file defines for it.
struct OpDefinition {
  ir::OpDef rules;
  lowering::LowerFn lower;
};

// Registry entries: each op's definition, in its family's file under compiler/ops (ops.def).
#define OP(name, text, definition, attrs) const OpDefinition& definition();
#include "compiler/ir/ops.def"
#undef OP

// One entry per OpKind, built on first use.
const ir::OpTable& op_definitions();
const lowering::OpLowerings& op_lowerings();

} // namespace ipu::ops
