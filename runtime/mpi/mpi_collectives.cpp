#include "runtime/mpi/mpi_collectives.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <set>
#include <string>
#include <thread>
#include <vector>

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

// Each collective is point-to-point messages, non-blocking and polled against a deadline, so an
// instance that stops answering (stopped, deadlocked) is named instead of waited for forever. The
// instances call the same collectives in the same order, and MPI delivers the messages between two
// ranks with one tag in order, so each message meets its counterpart.
class MpiCollectives final : public collectives::Collectives {
public:
  MpiCollectives(int rank, int size, std::chrono::milliseconds timeout)
      : m_rank(rank), m_size(size), m_timeout(timeout) {}
  MpiCollectives(const MpiCollectives&) = delete;
  MpiCollectives& operator=(const MpiCollectives&) = delete;
  ~MpiCollectives() override { MPI_Finalize(); }

  int rank() const override { return m_rank; }
  int size() const override { return m_size; }

  Status broadcast(std::span<std::byte> bytes, int root) override {
    IPU_ASSIGN_OR_RETURN(int count, byte_count(bytes.size()));
    Pending pending;
    if (m_rank == root) {
      for (int peer = 0; peer < m_size; ++peer) {
        if (peer == root) continue;
        IPU_RETURN_IF_ERROR(pending.add(
            peer,
            MPI_Isend(bytes.data(), count, MPI_BYTE, peer, kBroadcastTag, MPI_COMM_WORLD, pending.next()),
            "MPI_Isend"));
      }
    } else {
      IPU_RETURN_IF_ERROR(pending.add(
          root, MPI_Irecv(bytes.data(), count, MPI_BYTE, root, kBroadcastTag, MPI_COMM_WORLD, pending.next()),
          "MPI_Irecv"));
    }
    return wait(pending, "the broadcast of instance " + std::to_string(root) + "'s weights",
                std::chrono::steady_clock::now() + m_timeout);
  }

  Status all_gather(std::span<const std::byte> sent, std::span<std::byte> received) override {
    if (received.size() != sent.size() * static_cast<size_t>(m_size))
      return internal_error("all_gather: received is not size() times sent");
    IPU_RETURN_IF_ERROR(byte_count(received.size()).status());
    return exchange(sent, received, kAllGatherTag, "the all-gather",
                    std::chrono::steady_clock::now() + m_timeout);
  }

  Status barrier(collectives::Wait wait) override {
    const std::byte mine{1};
    std::vector<std::byte> everyone(static_cast<size_t>(m_size));
    const auto deadline = wait == collectives::Wait::kBounded ? std::chrono::steady_clock::now() + m_timeout
                                                              : std::chrono::steady_clock::time_point::max();
    return exchange(std::span(&mine, 1), everyone, kBarrierTag, "the barrier", deadline);
  }

  [[noreturn]] void abort(int exit_code) override {
    MPI_Abort(MPI_COMM_WORLD, exit_code);
    std::_Exit(exit_code); // MPI_Abort does not return; should it, this instance still ends
  }

private:
  static constexpr int kBroadcastTag = 1;
  static constexpr int kAllGatherTag = 2;
  static constexpr int kBarrierTag = 3;

  // The requests of one collective and the instance each one waits on.
  struct Pending {
    std::vector<MPI_Request> requests;
    std::vector<int> peers;

    MPI_Request* next() {
      requests.push_back(MPI_REQUEST_NULL);
      return &requests.back();
    }
    Status add(int peer, int code, const char* what) {
      peers.push_back(peer);
      return mpi_status(code, what);
    }
  };

  // Sends `sent` to every other instance and receives theirs into `received`, in rank order.
  Status exchange(std::span<const std::byte> sent, std::span<std::byte> received, int tag,
                  const std::string& what, std::chrono::steady_clock::time_point deadline) {
    IPU_ASSIGN_OR_RETURN(int count, byte_count(sent.size()));
    std::copy(sent.begin(), sent.end(), received.begin() + static_cast<std::ptrdiff_t>(sent.size()) * m_rank);
    Pending pending;
    for (int peer = 0; peer < m_size; ++peer) {
      if (peer == m_rank) continue;
      std::byte* into = received.data() + sent.size() * static_cast<size_t>(peer);
      IPU_RETURN_IF_ERROR(pending.add(
          peer, MPI_Irecv(into, count, MPI_BYTE, peer, tag, MPI_COMM_WORLD, pending.next()), "MPI_Irecv"));
      // MPI_Isend takes a non-const buffer for MPI-2 compatibility; it only reads it.
      auto* from = const_cast<std::byte*>(sent.data());
      IPU_RETURN_IF_ERROR(pending.add(
          peer, MPI_Isend(from, count, MPI_BYTE, peer, tag, MPI_COMM_WORLD, pending.next()), "MPI_Isend"));
    }
    return wait(pending, what, deadline);
  }

  // Polls the requests until all are done or the deadline passes. A wait of a few milliseconds (a
  // step's collective) yields the core at each poll; a longer one sleeps a millisecond between
  // polls, so that a peer sharing the core computes.
  Status wait(Pending& pending, const std::string& what, std::chrono::steady_clock::time_point deadline) {
    const auto start = std::chrono::steady_clock::now();
    const int count = static_cast<int>(pending.requests.size());
    for (;;) {
      int done = 0;
      IPU_RETURN_IF_ERROR(
          mpi_status(MPI_Testall(count, pending.requests.data(), &done, MPI_STATUSES_IGNORE), "MPI_Testall"));
      if (done != 0) return Status();
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline) break;
      if (now - start < std::chrono::milliseconds(10)) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
    std::set<int> silent;
    for (size_t i = 0; i < pending.requests.size(); ++i) {
      int done = 0;
      MPI_Test(&pending.requests[i], &done, MPI_STATUS_IGNORE);
      if (done == 0) silent.insert(pending.peers[i]);
    }
    // Every peer answered after all: this instance was the one held up (stopped, then resumed).
    if (silent.empty()) return Status();
    std::string names;
    for (int peer : silent)
      names += (names.empty() ? "" : ", ") + std::to_string(peer);
    const std::string seconds =
        std::to_string(std::chrono::duration_cast<std::chrono::seconds>(m_timeout).count());
    return deadline_exceeded(std::string(silent.size() == 1 ? "instance " : "instances ") + names +
                             " did not answer within " + seconds + " s (--collective-timeout) in " + what +
                             ": stopped, hung or far behind");
  }

  int m_rank;
  int m_size;
  std::chrono::milliseconds m_timeout;
};

} // namespace

bool launched_by_mpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr;
}

StatusOr<std::unique_ptr<collectives::Collectives>>
join_mpi_job(std::chrono::milliseconds collective_timeout) {
  IPU_RETURN_IF_ERROR(mpi_status(MPI_Init(nullptr, nullptr), "MPI_Init"));
  IPU_RETURN_IF_ERROR(
      mpi_status(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler"));
  int rank = 0, size = 1;
  IPU_RETURN_IF_ERROR(mpi_status(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank"));
  IPU_RETURN_IF_ERROR(mpi_status(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size"));
  return std::unique_ptr<collectives::Collectives>(new MpiCollectives(rank, size, collective_timeout));
}

} // namespace ipu::mpi
