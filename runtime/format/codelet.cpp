#include "runtime/format/codelet.h"

namespace ipu::format {

std::string_view codelet_name(Codelet codelet) {
  switch (codelet) {
#define CODELET(name, id, text)                                                                              \
  case Codelet::name:                                                                                        \
    return text;
#include "runtime/format/codelets.def"
#undef CODELET
  }
  return "unknown";
}

std::optional<Codelet> codelet_from_id(uint32_t id) {
  switch (id) {
#define CODELET(name, id, text)                                                                              \
  case id:                                                                                                   \
    return Codelet::name;
#include "runtime/format/codelets.def"
#undef CODELET
  }
  return std::nullopt;
}

} // namespace ipu::format
