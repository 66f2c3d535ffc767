#include "runtime/session/session_impl.h"

#include <cstring>
#include <string>

#include "runtime/base/non_finite.h"

namespace ipu::session {

// Replicas hold identical weights after every update, so replica 0's are checked and kept.
bool Session::Impl::keep_state_if_finite() {
  for (const auto& [tensor, bytes] : last_finite_state) {
    const std::span<std::byte> device = engine->tensor_bytes(tensor);
    if (!all_finite({reinterpret_cast<const float*>(device.data()), device.size() / sizeof(float)}))
      return false;
  }
  for (auto& [tensor, bytes] : last_finite_state) {
    const std::span<std::byte> device = engine->tensor_bytes(tensor);
    std::memcpy(bytes.data(), device.data(), bytes.size());
  }
  return true;
}

// Every replica back to the state after the last finite execution: its weights and optimizer
// state; every other tensor as the executable starts it (accumulators empty, since an execution
// holds whole updates; activations and gradients, which each step writes before reading, free of
// the NaNs the failed execution left, so the finite check sees them appear).
void Session::Impl::restore_last_finite_state() {
  const int tensors = engine->executable().tensors_size();
  for (uint32_t t = 0; t < static_cast<uint32_t>(tensors); ++t) {
    auto kept = last_finite_state.find(t);
    if (kept == last_finite_state.end()) {
      engine->reset_tensor(t);
      continue;
    }
    for (uint32_t r = 0; r < replicas; ++r)
      std::memcpy(engine->tensor_bytes(t, r).data(), kept->second.data(), kept->second.size());
  }
}

// An execution left a NaN or an infinity in a loss or the weights: run it again from the state
// before it, with the engine's finite check on, to name the step and the first tensor that went
// non-finite. Runs are deterministic, so the replay meets what the execution met.
Status Session::Impl::diagnose_non_finite(uint32_t program, const ExecutionFeed& feed,
                                          const std::vector<float>& hyper_rows, int epoch,
                                          int64_t steps_before) {
  restore_last_finite_state();
  engine->set_finite_check(true);
  Outfeed replay;
  Status found = run_execution(program, feed, replay, hyper_rows);
  engine->set_finite_check(false);
  restore_last_finite_state();
  const std::string where =
      "epoch " + std::to_string(epoch) + ", step " + std::to_string(steps_before + replay.steps_started);
  if (found.code() == StatusCode::kNonFinite)
    return found.with_context(where + ": training stopped at a NaN or an infinity");
  if (!found.ok()) return found.with_context("epoch " + std::to_string(epoch));
  return non_finite("epoch " + std::to_string(epoch) +
                    ": training stopped at a NaN or an infinity in the loss or the weights between steps " +
                    std::to_string(steps_before + 1) + " and " +
                    std::to_string(steps_before + steps_per_execution) +
                    " (the replay to find its tensor did not meet it)");
}

} // namespace ipu::session
