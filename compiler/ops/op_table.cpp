#include "compiler/ops/op_table.h"

#include <cstdlib>

namespace ipu::ir {

const OpTable& op_definitions() {
  static const OpTable table = [] {
    OpTable t{};
#define OP(name, text, definition, attrs) t[static_cast<size_t>(OpKind::name)] = &definition();
#include "compiler/ir/ops.def"
#undef OP
    for (size_t k = 0; k < kOpKindCount; ++k) {
      if (static_cast<size_t>(t[k]->kind) != k) std::abort();  // an ops.def line naming another op's definition
    }
    return t;
  }();
  return table;
}

}  // namespace ipu::ir
