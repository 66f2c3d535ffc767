#include "compiler/ops/op_table.h"

#include <cstdlib>

namespace ipu::ops {
namespace {

struct Tables {
  ir::OpTable rules{};
  lowering::OpLowerings lowerings{};
};

const Tables& tables() {
  static const Tables built = [] {
    Tables t;
#define OP(name, text, definition, attrs)                                                                    \
  t.rules[static_cast<size_t>(ir::OpKind::name)] = &definition().rules;                                      \
  t.lowerings[static_cast<size_t>(ir::OpKind::name)] = definition().lower;
#include "compiler/ir/ops.def"
#undef OP
    for (size_t k = 0; k < ir::kOpKindCount; ++k) {
      if (static_cast<size_t>(t.rules[k]->kind) != k)
        std::abort(); // an ops.def line naming another op's definition
    }
    return t;
  }();
  return built;
}

} // namespace

const ir::OpTable& op_definitions() {
  return tables().rules;
}
const lowering::OpLowerings& op_lowerings() {
  return tables().lowerings;
}

} // namespace ipu::ops
