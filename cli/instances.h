// ipurun as several instances (docs/distributed.md): joining the job mpirun started, and
// `ipurun --instances I`, which starts that job on this host.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/collectives/collectives.h"

namespace ipu::cli {

// Whether mpirun started this process.
bool inside_mpi_job();

// The job's collectives when mpirun started this process, else null (one process); a collective
// that the other instances leave unanswered for `collective_timeout` fails (DeadlineExceeded). An
// ipurun built without Open MPI (-DIPUCC_WITH_MPI=OFF) refuses a job of several instances.
StatusOr<std::unique_ptr<collectives::Collectives>> join_instances(std::chrono::seconds collective_timeout);

// Runs `mpirun -np instances` on this host, each instance this ipurun with `arguments`, and
// waits for it. Returns the exit code of the job: an instance's own (the first that failed ended
// the others with it), else kExitInstanceFailed when one ended without one (killed, crashed).
int launch_instances(const char* tool, int instances, const std::vector<std::string>& arguments);

} // namespace ipu::cli
