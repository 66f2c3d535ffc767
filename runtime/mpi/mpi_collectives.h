// Collectives over Open MPI's MPI_COMM_WORLD: the instances mpirun started (docs/distributed.md).
// Its own target, linked by ipurun only, so the runtime libraries never need MPI.
#pragma once

#include <chrono>
#include <memory>

#include "runtime/base/status.h"
#include "runtime/collectives/collectives.h"

namespace ipu::mpi {

// Whether mpirun started this process (its environment names the job's size).
bool launched_by_mpirun();

// Initialises MPI and returns the job's collectives; MPI is finalised when they are destroyed.
// Errors of MPI calls come back as Status (MPI_ERRORS_RETURN), so an instance can say what failed
// before it ends the job; an instance that dies is noticed by mpirun, which ends the others. A
// collective (a barrier with Wait::kUnbounded excepted) that the other instances do not complete
// within `collective_timeout` returns DeadlineExceeded naming the instances that did not answer.
StatusOr<std::unique_ptr<collectives::Collectives>>
join_mpi_job(std::chrono::milliseconds collective_timeout);

} // namespace ipu::mpi
