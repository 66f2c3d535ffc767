// The table of every op's definition (compiler/ir/ops.def), for ir::install_op_table. It lives
// here, above lowering, because each definition holds the op's lowering.
#pragma once

#include "compiler/ir/op_registry.h"

namespace ipu::ir {

// Registry entries: each op's definition, in its family's file under compiler/ops (ops.def).
#define OP(name, text, definition, attrs) const OpDef& definition();
#include "compiler/ir/ops.def"
#undef OP

// One entry per OpKind, built on first use.
const OpTable& op_definitions();

}  // namespace ipu::ir
