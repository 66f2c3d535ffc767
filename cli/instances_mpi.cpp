// Joining a job of instances, with Open MPI (runtime/mpi).
#include "cli/instances.h"
#include "runtime/mpi/mpi_collectives.h"

namespace ipu::cli {

bool inside_mpi_job() {
  return mpi::launched_by_mpirun();
}

StatusOr<std::unique_ptr<collectives::Collectives>> join_instances(std::chrono::seconds collective_timeout) {
  if (!mpi::launched_by_mpirun()) return std::unique_ptr<collectives::Collectives>();
  return mpi::join_mpi_job(collective_timeout);
}

} // namespace ipu::cli
