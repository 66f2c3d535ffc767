// Joining a job of instances in an ipurun built without Open MPI (-DIPUCC_WITH_MPI=OFF): one
// instance only.
#include <cstdlib>
#include <string>

#include "cli/instances.h"

namespace ipu::cli {

bool inside_mpi_job() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr;
}

StatusOr<std::unique_ptr<collectives::Collectives>> join_instances(std::chrono::seconds) {
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  if (size == nullptr || std::string(size) == "1") return std::unique_ptr<collectives::Collectives>();
  return unsupported("this ipurun was built without Open MPI (-DIPUCC_WITH_MPI=OFF) and runs as one "
                     "instance, not as one of " +
                     std::string(size));
}

} // namespace ipu::cli
