// ipurun of a runtime-only build (-DIPUCC_BUILD_COMPILER=OFF): models cannot be compiled here.
#include "cli/run_model.h"

namespace ipu::cli {

StatusOr<ResolvedExecutable> executable_for_model(const std::string& model, const CompileFlags&,
                                                  const CacheUseFlags&, uint64_t, const std::string&,
                                                  const std::function<void(const std::string&)>&) {
  return unsupported(model +
                     ": this ipurun was built without the compiler (-DIPUCC_BUILD_COMPILER=OFF) and cannot "
                     "compile models; compile it with `ipucc compile` and run the executable file or its "
                     "cache key");
}

} // namespace ipu::cli
