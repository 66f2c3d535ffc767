#include "compiler/lowering/pipeline_schedule.h"

#include <algorithm>

namespace ipu::lowering {
namespace {

constexpr int kNotYet = -1;

// Most items outstanding at once, for items sent at send[i] and consumed at consume[i] > send[i].
int max_outstanding(const std::vector<int>& send, const std::vector<int>& consume, int slots) {
  int most = 0;
  for (int t = 0; t < slots; ++t) {
    int outstanding = 0;
    for (size_t i = 0; i < send.size(); ++i)
      outstanding += send[i] <= t && consume[i] > t;
    most = std::max(most, outstanding);
  }
  return std::max(most, 1);
}

} // namespace

StatusOr<Schedule> parse_schedule(const std::string& name) {
  if (name == "grouped") return Schedule::kGrouped;
  if (name == "interleaved") return Schedule::kInterleaved;
  if (name == "sequential") return Schedule::kSequential;
  return invalid_argument("unknown --schedule '" + name + "' (expected grouped, interleaved or sequential)");
}

const char* schedule_name(Schedule schedule) {
  switch (schedule) {
  case Schedule::kGrouped:
    return "grouped";
  case Schedule::kInterleaved:
    return "interleaved";
  case Schedule::kSequential:
    return "sequential";
  }
  return "?";
}

PipelinePlan plan_pipeline(int stages, int micro_batches, Schedule schedule) {
  const int S = stages, K = micro_batches;
  std::vector<std::vector<int>> forward_at(S, std::vector<int>(K, kNotYet)), backward_at = forward_at;
  PipelinePlan plan;

  if (schedule == Schedule::kSequential) {
    for (int m = 0; m < K; ++m) {
      for (int s = 0; s < S; ++s)
        plan.slots.push_back({{s, true, m}});
      for (int s = S - 1; s >= 0; --s)
        plan.slots.push_back({{s, false, m}});
    }
  } else {
    std::vector<int> next_forward(S, 0), next_backward(S, 0);
    for (int t = 0; next_backward[0] < K; ++t) {
      std::vector<PipelineWork> slot;
      for (int s = 0; s < S; ++s) {
        const int f = next_forward[s], b = next_backward[s];
        const bool forward_ready =
            f < K && (s == 0 || (forward_at[s - 1][f] != kNotYet && forward_at[s - 1][f] < t));
        const bool backward_ready =
            b < f && forward_at[s][b] < t &&
            (s == S - 1 || (backward_at[s + 1][b] != kNotYet && backward_at[s + 1][b] < t));
        bool run_forward = false, run_backward = false;
        if (schedule == Schedule::kGrouped) {
          run_forward = forward_ready;
          run_backward = !run_forward && backward_ready && f == K;
        } else {
          run_backward = backward_ready;
          run_forward = !run_backward && forward_ready && f - b < S - s;
        }
        if (run_forward) {
          slot.push_back({s, true, f});
          forward_at[s][f] = t;
          ++next_forward[s];
        } else if (run_backward) {
          slot.push_back({s, false, b});
          backward_at[s][b] = t;
          ++next_backward[s];
        }
      }
      plan.slots.push_back(std::move(slot));
    }
  }

  // Record when each pass ran (the sequential order above did not).
  for (int t = 0; t < static_cast<int>(plan.slots.size()); ++t) {
    for (const PipelineWork& w : plan.slots[static_cast<size_t>(t)]) {
      (w.forward ? forward_at
                 : backward_at)[static_cast<size_t>(w.stage)][static_cast<size_t>(w.micro_batch)] = t;
    }
  }
  const int slots = static_cast<int>(plan.slots.size());
  for (int s = 0; s < S; ++s) {
    plan.stash_depth.push_back(max_outstanding(forward_at[s], backward_at[s], slots));
    if (s + 1 < S) {
      plan.forward_depth.push_back(max_outstanding(forward_at[s], forward_at[s + 1], slots));
      plan.backward_depth.push_back(max_outstanding(backward_at[s + 1], backward_at[s], slots));
    }
  }
  return plan;
}

} // namespace ipu::lowering
