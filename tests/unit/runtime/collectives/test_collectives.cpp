#include <doctest/doctest.h>

#include <bit>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "runtime/collectives/collectives.h"

namespace ipu::collectives {
namespace {

// Instance `rank` of a job whose other instances' all-gather contributions are known in advance:
// lets one thread see what the last instance of a job computes.
class ScriptedInstance final : public Collectives {
public:
  ScriptedInstance(int rank, std::vector<std::vector<float>> others)
      : m_rank(rank), m_others(std::move(others)) {}
  int rank() const override { return m_rank; }
  int size() const override { return static_cast<int>(m_others.size()) + 1; }
  Status broadcast(std::span<std::byte>, int) override { return Status(); }
  Status all_gather(std::span<const std::byte> sent, std::span<std::byte> received) override {
    size_t offset = 0, other = 0;
    for (int i = 0; i < size(); ++i) {
      const std::byte* from =
          i == m_rank ? sent.data() : reinterpret_cast<const std::byte*>(m_others[other++].data());
      std::memcpy(received.data() + offset, from, sent.size());
      offset += sent.size();
    }
    return Status();
  }
  Status barrier(collectives::Wait) override { return Status(); }
  [[noreturn]] void abort(int) override {
    FAIL("abort");
    std::abort();
  }

private:
  int m_rank;
  std::vector<std::vector<float>> m_others;
};

// Values whose float sum depends on its order.
std::vector<float> replica_values(int replica) {
  std::vector<float> v;
  for (int i = 0; i < 64; ++i)
    v.push_back(static_cast<float>((replica + 1) * 1e7 / (i + 1) + (i % 3 ? 0.1 : -1e-3) * replica));
  return v;
}

} // namespace

TEST_CASE("collectives::all_reduce_mean_in_replica_order is one process's sum for any number of instances") {
  constexpr int kReplicas = 4;
  constexpr size_t kElements = 64;
  // One process (the engine's AllReduce): replica 0 accumulates the others in order, then scales.
  std::vector<float> expected = replica_values(0);
  for (int r = 1; r < kReplicas; ++r) {
    const std::vector<float> other = replica_values(r);
    for (size_t i = 0; i < kElements; ++i)
      expected[i] += other[i];
  }
  for (float& x : expected)
    x *= 1.0f / kReplicas;

  for (int instances : {1, 2, 4}) {
    const int per_instance = kReplicas / instances;
    for (int rank = 0; rank < instances; ++rank) {
      CAPTURE(instances);
      CAPTURE(rank);
      std::vector<std::vector<float>> others;
      for (int i = 0; i < instances; ++i) {
        if (i == rank) continue;
        std::vector<float> contribution;
        for (int r = i * per_instance; r < (i + 1) * per_instance; ++r) {
          const std::vector<float> v = replica_values(r);
          contribution.insert(contribution.end(), v.begin(), v.end());
        }
        others.push_back(contribution);
      }
      std::vector<std::vector<float>> mine;
      for (int r = rank * per_instance; r < (rank + 1) * per_instance; ++r)
        mine.push_back(replica_values(r));
      ReplicaTensor tensor;
      for (auto& v : mine)
        tensor.local.push_back(v.data());
      tensor.elements = kElements;
      ScriptedInstance job(rank, others);
      REQUIRE(all_reduce_mean_in_replica_order(job, std::span<const ReplicaTensor>(&tensor, 1)).ok());
      for (const auto& v : mine) {
        for (size_t i = 0; i < kElements; ++i)
          CHECK(std::bit_cast<uint32_t>(v[i]) == std::bit_cast<uint32_t>(expected[i])); // bitwise
      }
    }
  }
}

TEST_CASE("collectives::SingleInstance gathers its own bytes") {
  SingleInstance one;
  CHECK(one.rank() == 0);
  CHECK(one.size() == 1);
  std::vector<float> sent = {1, 2, 3}, received(3);
  REQUIRE(one.all_gather(std::as_bytes(std::span<const float>(sent)),
                         std::as_writable_bytes(std::span<float>(received)))
              .ok());
  CHECK(received == sent);
  std::vector<float> bytes = {4};
  CHECK(one.broadcast(std::as_writable_bytes(std::span<float>(bytes)), 0).ok());
  CHECK_FALSE(one.broadcast(std::as_writable_bytes(std::span<float>(bytes)), 1).ok());
}

} // namespace ipu::collectives
