#include <doctest/doctest.h>

#include <algorithm>
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
        const PipelinePlan plan = plan_pipeline(S, K, schedule);
        check_valid(plan, S, K);
        REQUIRE(plan.sends_with_next_slot.size() == plan.slots.size());
        if (schedule != Schedule::kGrouped) {
          CHECK(std::none_of(plan.sends_with_next_slot.begin(), plan.sends_with_next_slot.end(),
                             [](bool deferred) { return deferred; }));
        }
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
  CHECK(interleaved.stash_depth[0] == S);     // at most S in flight
  CHECK(interleaved.stash_depth[S - 1] == 1); // the last stage turns each around at once
  for (int s = 0; s < S; ++s) {
    CHECK(sequential.stash_depth[s] == 1);
    CHECK(interleaved.stash_depth[s] <= grouped.stash_depth[s]);
  }
}

// Graphcore's grouped schedule (TF's PipelineSchedule.Grouped, Graphcore's pipelining tutorial):
// every slot is all forward or all backward passes, forward and backward slots alternate once the
// pipeline is full, and micro-batch 0 of a 4-stage pipeline finishes its backward pass in the 11th
// slot; a stage stashes only what is in flight, 2 (S - s) - 1 micro-batches, whatever K.
TEST_CASE("pipeline schedule: grouped alternates forward and backward slots and stashes what is in flight") {
  const int S = 4;
  for (int K : {4, 8, 64}) {
    CAPTURE(K);
    const PipelinePlan plan = plan_pipeline(S, K, Schedule::kGrouped);
    for (const auto& slot : plan.slots) {
      REQUIRE_FALSE(slot.empty());
      for (const PipelineWork& w : slot)
        CHECK(w.forward == slot.front().forward);
    }
    // Ramp-up: S - 1 forward slots; then forward and backward alternate until the last forward
    // slot; ramp-down: S - 1 backward slots.
    for (size_t t = 0; t < plan.slots.size(); ++t) {
      const bool ramp_up = t < S - 1, ramp_down = t + S - 1 >= plan.slots.size();
      const bool forward = ramp_up || (!ramp_down && (t - (S - 1)) % 2 == 0);
      CHECK(plan.slots[t].front().forward == forward);
      // A forward slot followed by its step's backward slot sends its activations with that
      // slot's gradients, in one exchange; the ramp-up's forward slots send their own.
      CHECK(plan.sends_with_next_slot[t] == (forward && !ramp_up));
    }
    CHECK(plan.backward_slot[0][0] == 10);
    for (int s = 0; s < S; ++s) {
      CHECK(plan.stash_depth[static_cast<size_t>(s)] == std::min(K, 2 * (S - s) - 1));
      // Each stage runs its micro-batches in order: gradients accumulate in micro-batch order.
      for (int m = 1; m < K; ++m)
        CHECK(plan.backward_slot[s][m - 1] < plan.backward_slot[s][m]);
    }
    for (int s = 0; s + 1 < S; ++s) {
      CHECK(plan.forward_depth[static_cast<size_t>(s)] == 1);
      CHECK(plan.backward_depth[static_cast<size_t>(s)] == 1);
    }
  }
}

// A value skipping stages waits in more receive buffers: from stage 0 to stage 2 it is read two
// pipeline steps after it was sent, and two more have been sent meanwhile.
TEST_CASE("pipeline schedule: receive depth of a value that skips stages") {
  const PipelinePlan plan = plan_pipeline(4, 16, Schedule::kGrouped);
  CHECK(receive_depth(plan, 0, 1, true) == 1);
  CHECK(receive_depth(plan, 0, 2, true) == 2);
  CHECK(receive_depth(plan, 0, 3, true) == 3);
  CHECK(receive_depth(plan, 3, 0, false) == 3);
}

TEST_CASE("pipeline schedule: names parse") {
  CHECK(*parse_schedule("grouped") == Schedule::kGrouped);
  CHECK(*parse_schedule("interleaved") == Schedule::kInterleaved);
  CHECK(*parse_schedule("sequential") == Schedule::kSequential);
  CHECK_FALSE(parse_schedule("fast").ok());
}

} // namespace
} // namespace ipu::lowering
