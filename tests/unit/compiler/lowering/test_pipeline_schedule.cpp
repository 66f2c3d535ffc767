#include <doctest/doctest.h>

#include <set>

#include "compiler/lowering/pipeline_schedule.h"

namespace ipu::lowering {
namespace {

// Every pass runs once, after the passes it depends on, and no stage does two things at once.
void check_valid(const PipelinePlan& plan, int S, int K) {
  std::vector<std::vector<int>> fwd(S, std::vector<int>(K, -1)), bwd = fwd;
  for (int t = 0; t < static_cast<int>(plan.slots.size()); ++t) {
    std::set<int> busy;
    for (const auto& w : plan.slots[static_cast<size_t>(t)]) {
      CHECK(busy.insert(w.stage).second);
      auto& at = (w.forward ? fwd : bwd)[static_cast<size_t>(w.stage)][static_cast<size_t>(w.micro_batch)];
      CHECK(at == -1);
      at = t;
    }
  }
  for (int s = 0; s < S; ++s) {
    for (int m = 0; m < K; ++m) {
      REQUIRE(fwd[s][m] >= 0);
      REQUIRE(bwd[s][m] >= 0);
      if (s > 0) CHECK(fwd[s - 1][m] < fwd[s][m]);
      CHECK(fwd[s][m] < bwd[s][m]);
      if (s + 1 < S) CHECK(bwd[s + 1][m] < bwd[s][m]);
    }
  }
}

TEST_CASE("pipeline schedule: every schedule is a valid order of all passes") {
  for (Schedule schedule : {Schedule::kGrouped, Schedule::kInterleaved, Schedule::kSequential}) {
    for (int S : {1, 2, 4}) {
      for (int K : {1, 4, 8}) {
        CAPTURE(schedule_name(schedule));
        CAPTURE(S);
        CAPTURE(K);
        check_valid(plan_pipeline(S, K, schedule), S, K);
      }
    }
  }
}

TEST_CASE("pipeline schedule: grouped is shortest, interleaved stashes least, sequential has no overlap") {
  const int S = 4, K = 8;
  const PipelinePlan grouped = plan_pipeline(S, K, Schedule::kGrouped);
  const PipelinePlan interleaved = plan_pipeline(S, K, Schedule::kInterleaved);
  const PipelinePlan sequential = plan_pipeline(S, K, Schedule::kSequential);
  CHECK(grouped.slots.size() == static_cast<size_t>(2 * (K + S - 1)));
  CHECK(sequential.slots.size() == static_cast<size_t>(2 * S * K));
  CHECK(grouped.slots.size() < sequential.slots.size());
  CHECK(interleaved.slots.size() < sequential.slots.size());
  CHECK(grouped.stash_depth[0] == K);         // every micro-batch is in flight on stage 0
  CHECK(interleaved.stash_depth[0] == S);     // at most S in flight
  CHECK(interleaved.stash_depth[S - 1] == 1); // the last stage turns each around at once
  for (int s = 0; s < S; ++s)
    CHECK(sequential.stash_depth[s] == 1);
}

TEST_CASE("pipeline schedule: names parse") {
  CHECK(*parse_schedule("grouped") == Schedule::kGrouped);
  CHECK(*parse_schedule("interleaved") == Schedule::kInterleaved);
  CHECK(*parse_schedule("sequential") == Schedule::kSequential);
  CHECK_FALSE(parse_schedule("fast").ok());
}

} // namespace
} // namespace ipu::lowering
