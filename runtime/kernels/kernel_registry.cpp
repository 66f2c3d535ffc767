#include <array>
#include <cstdlib>

#include "runtime/kernels/kernel.h"

namespace ipu::kernels {

// kernels.def names each codelet of codelets.def once.
constexpr size_t kCodelets = 0
#define CODELET(name, id, text) +1
#include "runtime/format/codelets.def"
#undef CODELET
    ;
constexpr size_t kKernels = 0
#define KERNEL(codelet, definition) +1
#include "runtime/kernels/kernels.def"
#undef KERNEL
    ;
static_assert(kKernels == kCodelets,
              "runtime/kernels/kernels.def must give every codelet of codelets.def a kernel");

const KernelDef* find_kernel(uint32_t codelet_id) {
  // One entry per codelet, indexed by id; filled once.
  static const auto table = [] {
    std::array<const KernelDef*, 128> t{};
#define KERNEL(codelet, definition) t[static_cast<uint32_t>(Codelet::codelet)] = &definition();
#include "runtime/kernels/kernels.def"
#undef KERNEL
    for (uint32_t id = 0; id < t.size(); ++id) {
      // A kernels.def line naming another codelet's kernel.
      if (t[id] != nullptr && static_cast<uint32_t>(t[id]->codelet) != id) std::abort();
    }
    // A codelet without a kernel (another one named twice in its place).
#define CODELET(name, id, text)                                                                              \
  if (t[id] == nullptr) std::abort();
#include "runtime/format/codelets.def"
#undef CODELET
    return t;
  }();
  return codelet_id < table.size() ? table[codelet_id] : nullptr;
}

bool try_merge(const KernelDef& def, PreparedVertex& into, const PreparedVertex& next) {
  if (def.primary.begin < 0 || into.codelet != next.codelet || into.operands != next.operands ||
      into.num_params != next.num_params || into.fparams != next.fparams) {
    return false;
  }
  auto same_except = [&](const WorkRange& range) {
    for (uint32_t i = 0; i < into.num_params; ++i) {
      if (static_cast<int>(i) != range.begin && static_cast<int>(i) != range.end &&
          into.params[i] != next.params[i]) {
        return false;
      }
    }
    return into.params[static_cast<size_t>(range.end)] == next.params[static_cast<size_t>(range.begin)];
  };
  const WorkRange tertiary = def.tertiary != nullptr ? def.tertiary(into) : WorkRange{};
  for (const WorkRange& range : {def.primary, def.secondary, tertiary}) {
    if (range.begin >= 0 && same_except(range)) {
      into.params[static_cast<size_t>(range.end)] = next.params[static_cast<size_t>(range.end)];
      into.cycles += next.cycles;
      return true;
    }
  }
  return false;
}

Status validate_vertex(const format::Vertex& vertex, const format::Executable& executable) {
  const KernelDef* def = find_kernel(vertex.codelet());
  if (def == nullptr) return invalid_argument("unknown codelet id " + std::to_string(vertex.codelet()));
  if (static_cast<size_t>(vertex.operands_size()) > kMaxOperands ||
      static_cast<size_t>(vertex.params_size()) > kMaxParams ||
      static_cast<size_t>(vertex.fparams_size()) > kMaxFloatParams) {
    return invalid_argument("too many operands or parameters");
  }
  std::vector<OperandInfo> operands;
  operands.reserve(static_cast<size_t>(vertex.operands_size()));
  for (uint32_t index : vertex.operands()) {
    const format::Tensor& t = executable.tensors(static_cast<int>(index));
    uint64_t elements = 1;
    for (int64_t d : t.shape())
      elements *= static_cast<uint64_t>(d);
    operands.push_back({t.dtype(), elements});
  }
  Status status = def->validate(vertex, operands);
  if (!status.ok())
    return status.with_context(std::string(codelet_name(def->codelet)) + " vertex on tile " +
                               std::to_string(vertex.tile()));
  return status;
}

} // namespace ipu::kernels
