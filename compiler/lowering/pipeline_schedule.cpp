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

// Graphcore's grouped schedule: pipeline step t is a forward slot (stage s on micro-batch t - s)
// and then a backward slot (stage s on micro-batch t - 2 (S - 1) + s), so micro-batch m leaves
// stage s forward in step m + s and comes back in step m + 2 (S - 1) - s; the last stage turns
// it around in the step it computed the loss in. The ramp-up's backward slots and the
// ramp-down's forward slots are empty and left out.
void plan_grouped(int S, int K, PipelinePlan& plan) {
  for (int t = 0; t < K + 2 * (S - 1); ++t) {
    std::vector<PipelineWork> forward, backward;
    for (int s = 0; s < S; ++s) {
      if (const int m = t - s; m >= 0 && m < K) forward.push_back({s, true, m});
      if (const int m = t - 2 * (S - 1) + s; m >= 0 && m < K) backward.push_back({s, false, m});
    }
    const bool both = !forward.empty() && !backward.empty();
    for (std::vector<PipelineWork>* slot : {&forward, &backward}) {
      if (slot->empty()) continue;
      plan.sends_with_next_slot.push_back(both && slot == &forward);
      plan.slots.push_back(std::move(*slot));
    }
  }
}

// A stage runs a backward pass as soon as it is ready, else a forward pass while it holds fewer
// than S - s micro-batches.
void plan_interleaved(int S, int K, PipelinePlan& plan) {
  std::vector<std::vector<int>> forward_at(S, std::vector<int>(K, kNotYet)), backward_at = forward_at;
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
      if (backward_ready) {
        slot.push_back({s, false, b});
        backward_at[s][b] = t;
        ++next_backward[s];
      } else if (forward_ready && f - b < S - s) {
        slot.push_back({s, true, f});
        forward_at[s][f] = t;
        ++next_forward[s];
      }
    }
    plan.slots.push_back(std::move(slot));
  }
}

void plan_sequential(int S, int K, PipelinePlan& plan) {
  for (int m = 0; m < K; ++m) {
    for (int s = 0; s < S; ++s)
      plan.slots.push_back({{s, true, m}});
    for (int s = S - 1; s >= 0; --s)
      plan.slots.push_back({{s, false, m}});
  }
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
  PipelinePlan plan;
  switch (schedule) {
  case Schedule::kGrouped:
    plan_grouped(S, K, plan);
    break;
  case Schedule::kInterleaved:
    plan_interleaved(S, K, plan);
    break;
  case Schedule::kSequential:
    plan_sequential(S, K, plan);
    break;
  }

  plan.sends_with_next_slot.resize(plan.slots.size(), false);
  plan.forward_slot.assign(static_cast<size_t>(S), std::vector<int>(static_cast<size_t>(K), kNotYet));
  plan.backward_slot = plan.forward_slot;
  for (int t = 0; t < static_cast<int>(plan.slots.size()); ++t) {
    for (const PipelineWork& w : plan.slots[static_cast<size_t>(t)]) {
      (w.forward ? plan.forward_slot
                 : plan.backward_slot)[static_cast<size_t>(w.stage)][static_cast<size_t>(w.micro_batch)] = t;
    }
  }
  for (int s = 0; s < S; ++s) {
    plan.stash_depth.push_back(max_outstanding(plan.forward_slot[static_cast<size_t>(s)],
                                               plan.backward_slot[static_cast<size_t>(s)],
                                               static_cast<int>(plan.slots.size())));
    if (s + 1 < S) {
      plan.forward_depth.push_back(receive_depth(plan, s, s + 1, true));
      plan.backward_depth.push_back(receive_depth(plan, s + 1, s, false));
    }
  }
  return plan;
}

int receive_depth(const PipelinePlan& plan, int from, int to, bool forward) {
  const auto& at = forward ? plan.forward_slot : plan.backward_slot;
  return max_outstanding(at[static_cast<size_t>(from)], at[static_cast<size_t>(to)],
                         static_cast<int>(plan.slots.size()));
}

} // namespace ipu::lowering
