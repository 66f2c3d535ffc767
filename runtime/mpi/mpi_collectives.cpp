#include "runtime/mpi/mpi_collectives.h"

#include <mpi.h>

#include <climits>
#include <cstdlib>
#include <string>

namespace ipu::mpi {
namespace {

Status mpi_status(int code, const char* what) {
  if (code == MPI_SUCCESS) return Status();
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(code, text, &length);
  return internal_error(std::string(what) + " failed: " + std::string(text, static_cast<size_t>(length)));
}

// MPI counts are ints: a transfer of more bytes is refused rather than cut short.
StatusOr<int> byte_count(size_t bytes) {
  if (bytes > static_cast<size_t>(INT_MAX))
    return unsupported("a collective of " + std::to_string(bytes) + " bytes exceeds MPI's int count");
  return static_cast<int>(bytes);
}

class MpiCollectives final : public collectives::Collectives {
public:
  MpiCollectives(int rank, int size) : m_rank(rank), m_size(size) {}
  MpiCollectives(const MpiCollectives&) = delete;
  MpiCollectives& operator=(const MpiCollectives&) = delete;
  ~MpiCollectives() override { MPI_Finalize(); }

  int rank() const override { return m_rank; }
  int size() const override { return m_size; }

  Status broadcast(std::span<std::byte> bytes, int root) override {
    IPU_ASSIGN_OR_RETURN(int count, byte_count(bytes.size()));
    return mpi_status(MPI_Bcast(bytes.data(), count, MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast");
  }

  Status all_gather(std::span<const std::byte> sent, std::span<std::byte> received) override {
    if (received.size() != sent.size() * static_cast<size_t>(m_size))
      return internal_error("all_gather: received is not size() times sent");
    IPU_ASSIGN_OR_RETURN(int count, byte_count(sent.size()));
    IPU_RETURN_IF_ERROR(byte_count(received.size()).status());
    return mpi_status(
        MPI_Allgather(sent.data(), count, MPI_BYTE, received.data(), count, MPI_BYTE, MPI_COMM_WORLD),
        "MPI_Allgather");
  }

  Status barrier() override { return mpi_status(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }

  [[noreturn]] void abort(int exit_code) override {
    MPI_Abort(MPI_COMM_WORLD, exit_code);
    std::_Exit(exit_code); // MPI_Abort does not return; should it, this instance still ends
  }

private:
  int m_rank;
  int m_size;
};

} // namespace

bool launched_by_mpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr;
}

StatusOr<std::unique_ptr<collectives::Collectives>> join_mpi_job() {
  IPU_RETURN_IF_ERROR(mpi_status(MPI_Init(nullptr, nullptr), "MPI_Init"));
  IPU_RETURN_IF_ERROR(
      mpi_status(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler"));
  int rank = 0, size = 1;
  IPU_RETURN_IF_ERROR(mpi_status(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank"));
  IPU_RETURN_IF_ERROR(mpi_status(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size"));
  return std::unique_ptr<collectives::Collectives>(new MpiCollectives(rank, size));
}

} // namespace ipu::mpi
