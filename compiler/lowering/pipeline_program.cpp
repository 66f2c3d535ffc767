#include "compiler/lowering/pipeline_program.h"

#include <algorithm>
#include <map>
#include <set>

#include "compiler/lowering/memory_plan.h"
#include "runtime/format/verifier.h"

namespace ipu::lowering {
namespace {

std::set<uint32_t> touched_by(const format::Executable& exe, const std::vector<uint32_t>& sets) {
  std::set<uint32_t> tensors;
  for (uint32_t cs : sets) {
    for (const auto& v : exe.compute_sets(static_cast<int>(cs)).vertices())
      tensors.insert(v.operands().begin(), v.operands().end());
  }
  return tensors;
}

std::vector<uint32_t> concat(std::vector<uint32_t> a, const std::vector<uint32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Per-micro-batch copies of one tensor: slot m % depth holds micro-batch m.
struct Slots {
  uint32_t working = 0;
  std::vector<uint32_t> buffers;
  uint32_t at(int micro_batch) const { return buffers[static_cast<size_t>(micro_batch) % buffers.size()]; }
};

struct Boundary {
  StageCopy copy;
  Slots receive; // on the destination stage
};

// A slot is one nested Sequence: its host reads, one exchange of the copies into stages, the
// stages' passes at once, one exchange of the copies out of them, its host writes. Each run of
// copies is costed as one exchange (ProgramEstimator::cycles_of), and a slot's copies never
// merge with the next slot's.
struct SlotParts {
  format::Sequence reads, before, after, writes, sends_later;
  format::Parallel parallel;
};

// The train program of one weight update as build_pipelined_update builds it: the stashes and the
// boundaries between stages, then the plan's slots, then the update after them, filling the
// schedule's estimate on the way.
struct PipelinedUpdate {
  PipelinedUpdate(LowerContext& ctx, ProgramBuilder& programs, const std::vector<StageComputeSets>& stages,
                  const StepStreams& io, const PipelinePlan& plan, bool recompute,
                  format::ScheduleEstimate& estimate)
      : ctx(ctx), programs(programs), stages(stages), io(io), plan(plan), recompute(recompute),
        estimate(estimate) {
    for (int s = 0; s < S; ++s)
      forward[static_cast<size_t>(s)] = concat(stages[s].forward, stages[s].loss);
  }

  LowerContext& ctx;
  ProgramBuilder& programs;
  const std::vector<StageComputeSets>& stages;
  const StepStreams& io;
  const PipelinePlan& plan;
  const bool recompute;
  format::ScheduleEstimate& estimate;
  const format::Executable& exe = ctx.executable();
  const int S = static_cast<int>(stages.size());
  std::vector<uint64_t> stash_bytes = std::vector<uint64_t>(static_cast<size_t>(S), 0);
  // A stage's forward work includes the loss on the last stage.
  std::vector<std::vector<uint32_t>> forward = std::vector<std::vector<uint32_t>>(static_cast<size_t>(S));
  std::vector<std::vector<Slots>> stash = std::vector<std::vector<Slots>>(static_cast<size_t>(S));
  std::vector<Boundary> boundaries;
  std::vector<double> busy = std::vector<double>(static_cast<size_t>(S), 0);
  // Per stage: its passes' copies across stage boundaries, in and out (the automatic split
  // charges a cut's transfers to the stages on both sides; the imbalance report does the same).
  std::vector<double> crossing_cycles = std::vector<double>(static_cast<size_t>(S), 0);

  uint64_t bytes(uint32_t t) const {
    return format::element_count(exe.tensors(static_cast<int>(t))) *
           format::dtype_size(exe.tensors(static_cast<int>(t)).dtype());
  }

  // What each stage's backward pass reads of its forward pass is stashed per micro-batch (with
  // recompute: only the inputs the forward pass is re-run from).
  void add_stashes() {
    // The stage's inputs: what arrives from the host or the previous stage rather than being computed.
    std::set<uint32_t> arriving = {io.features, io.labels};
    for (const StageCopy& c : ctx.stage_copies())
      arriving.insert(c.destination);
    for (int s = 0; s < S; ++s) {
      const std::set<uint32_t> in_forward = touched_by(exe, forward[static_cast<size_t>(s)]);
      const std::set<uint32_t> in_backward = recompute ? in_forward : touched_by(exe, stages[s].backward);
      for (uint32_t t : in_forward) {
        if (!in_backward.count(t) || !stashed_per_micro_batch(exe.tensors(static_cast<int>(t)).role()))
          continue;
        if (recompute && !arriving.count(t)) continue;
        Slots slots{t, {}};
        for (int j = 0; j < plan.stash_depth[static_cast<size_t>(s)]; ++j) {
          slots.buffers.push_back(ctx.add_buffer(
              exe.tensors(static_cast<int>(t)).name() + "/stash" + std::to_string(j), t, format::STASH));
          stash_bytes[static_cast<size_t>(s)] += bytes(t);
        }
        stash[static_cast<size_t>(s)].push_back(std::move(slots));
      }
    }
  }

  // Activations cross forward boundaries, gradients backward ones, through receive buffers.
  void add_boundaries(ReceiveBuffers& receive) {
    for (const StageCopy& c : ctx.stage_copies()) {
      if (c.phase == ir::Phase::kClip) continue; // once per update, in `finish`
      // A value skipping stages waits longer for its reader, in more buffers.
      const auto depth = static_cast<size_t>(
          receive_depth(plan, c.source_stage, c.destination_stage, c.phase == ir::Phase::kForward));
      const std::vector<uint32_t>& buffers = receive_buffers(ctx, receive, c, depth);
      Boundary b{c, {c.destination, {buffers.begin(), buffers.begin() + static_cast<std::ptrdiff_t>(depth)}}};
      stash_bytes[static_cast<size_t>(c.destination_stage)] += depth * bytes(c.destination);
      boundaries.push_back(std::move(b));
    }
  }

  std::vector<const Boundary*> boundaries_into(int stage, bool forward_pass) const {
    std::vector<const Boundary*> out;
    for (const Boundary& b : boundaries) {
      if (b.copy.destination_stage == stage && (b.copy.phase == ir::Phase::kForward) == forward_pass)
        out.push_back(&b);
    }
    return out;
  }
  std::vector<const Boundary*> boundaries_from(int stage, bool forward_pass) const {
    std::vector<const Boundary*> out;
    for (const Boundary& b : boundaries) {
      if (b.copy.source_stage == stage && (b.copy.phase == ir::Phase::kForward) == forward_pass)
        out.push_back(&b);
    }
    return out;
  }

  void add_pass(const PipelineWork& w, bool defer_sends, SlotParts& parts, format::ScheduleSlot* estimated);
  format::Program build_slot(size_t slot_index, format::Sequence& deferred_sends);
  format::Sequence build_finish(const std::vector<uint32_t>& accumulators, uint32_t replicas);
};

// One stage's forward or backward pass of one micro-batch within a slot: its host transfers and
// copies into the slot's parts, its compute sets a branch of the slot's Parallel.
void PipelinedUpdate::add_pass(const PipelineWork& w, bool defer_sends, SlotParts& parts,
                               format::ScheduleSlot* estimated) {
  const auto s = static_cast<size_t>(w.stage);
  format::Sequence crossing;
  auto crossing_copy = [&](format::Sequence& seq, uint32_t source, uint32_t destination) {
    ProgramBuilder::copy(seq, source, destination);
    ProgramBuilder::copy(crossing, source, destination);
  };
  const std::vector<uint32_t> sets = w.forward   ? forward[s]
                                     : recompute ? concat(forward[s], stages[s].backward)
                                                 : stages[s].backward;
  if (w.forward) {
    if (w.stage == 0) ProgramBuilder::stream_in(parts.reads, io.features_stream, io.features);
    if (w.stage == S - 1) ProgramBuilder::stream_in(parts.reads, io.labels_stream, io.labels);
    for (const Boundary* b : boundaries_into(w.stage, true))
      crossing_copy(parts.before, b->receive.at(w.micro_batch), b->receive.working);
    for (const Slots& st : stash[s])
      ProgramBuilder::copy(parts.after, st.working, st.at(w.micro_batch));
    for (const Boundary* b : boundaries_from(w.stage, true)) {
      if (!defer_sends) {
        crossing_copy(parts.after, b->copy.source, b->receive.at(w.micro_batch));
        continue;
      }
      uint32_t source = b->copy.source;
      for (const Slots& st : stash[s]) {
        if (st.working == source) source = st.at(w.micro_batch);
      }
      crossing_copy(parts.sends_later, source, b->receive.at(w.micro_batch));
    }
    if (w.stage == S - 1) {
      ProgramBuilder::stream_out(parts.writes, io.loss_stream, io.loss);
      if (io.counts_correct) ProgramBuilder::stream_out(parts.writes, io.correct_stream, io.correct);
      for (const StepStreams::Metric& m : io.metrics)
        ProgramBuilder::stream_out(parts.writes, m.stream, m.sum);
    }
  } else {
    for (const Slots& st : stash[s])
      ProgramBuilder::copy(parts.before, st.at(w.micro_batch), st.working);
    for (const Boundary* b : boundaries_into(w.stage, false))
      crossing_copy(parts.before, b->receive.at(w.micro_batch), b->receive.working);
    for (const Boundary* b : boundaries_from(w.stage, false))
      crossing_copy(parts.after, b->copy.source, b->receive.at(w.micro_batch));
  }
  format::Sequence branch;
  ProgramBuilder::execute(branch, sets);
  *parts.parallel.add_branches()->mutable_sequence() = std::move(branch);
  const double cycles = programs.estimator().cycles_of(sets);
  format::SlotWork* work = estimated->add_work();
  work->set_stage(static_cast<uint32_t>(w.stage));
  work->set_forward(w.forward);
  work->set_micro_batch(static_cast<uint32_t>(w.micro_batch));
  work->set_cycles(cycles);
  busy[s] += cycles;
  crossing_cycles[s] += programs.estimator().cycles_of(ProgramBuilder::sequence(std::move(crossing)));
}

format::Program PipelinedUpdate::build_slot(size_t slot_index, format::Sequence& deferred_sends) {
  const std::vector<PipelineWork>& slot = plan.slots[slot_index];
  // Without recompute a stage's backward pass leaves the values its forward pass sent alone,
  // or restores them from the stash, where this micro-batch's copy waits.
  const bool defer_sends = plan.sends_with_next_slot[slot_index] && !recompute;
  SlotParts parts;
  format::ScheduleSlot* estimated = estimate.add_slots();
  for (const PipelineWork& w : slot)
    add_pass(w, defer_sends, parts, estimated);
  format::Sequence steps;
  for (format::Sequence* part : {&parts.reads, &parts.before}) {
    for (auto& step : *part->mutable_steps())
      *steps.add_steps() = std::move(step);
  }
  if (parts.parallel.branches_size() == 1) {
    *steps.add_steps() = parts.parallel.branches(0);
  } else if (parts.parallel.branches_size() > 1) {
    *steps.add_steps()->mutable_parallel() = std::move(parts.parallel);
  }
  for (format::Sequence* part : {&deferred_sends, &parts.after, &parts.writes}) {
    for (auto& step : *part->mutable_steps())
      *steps.add_steps() = std::move(step);
  }
  deferred_sends = std::move(parts.sends_later);
  format::Program slot_program = ProgramBuilder::sequence(std::move(steps));
  estimated->set_cycles(programs.estimator().cycles_of(slot_program));
  return slot_program;
}

// After the slots: the all-reduce, the gradients' norm when clipping, and every stage's update.
format::Sequence PipelinedUpdate::build_finish(const std::vector<uint32_t>& accumulators, uint32_t replicas) {
  format::Sequence finish;
  if (replicas > 1) *finish.add_steps()->mutable_all_reduce() = ctx.gradient_all_reduce(accumulators);
  // With clipping: every stage's share of the gradients' squared norm, then each share to every
  // other stage (4 bytes over the IPU links), so each stage computes the same clip factor.
  format::Parallel norms;
  for (const StageComputeSets& stage : stages) {
    if (stage.clip.empty()) continue;
    format::Sequence branch;
    ProgramBuilder::execute(branch, stage.clip);
    *norms.add_branches()->mutable_sequence() = std::move(branch);
  }
  if (norms.branches_size() > 0) *finish.add_steps()->mutable_parallel() = std::move(norms);
  for (const StageCopy& c : ctx.stage_copies()) {
    if (c.phase == ir::Phase::kClip) ProgramBuilder::copy(finish, c.source, c.destination);
  }
  format::Parallel updates;
  for (const StageComputeSets& stage : stages) {
    if (stage.update.empty() && stage.loss_scale.empty()) continue;
    format::Sequence branch;
    append_stage_update(branch, stage);
    *updates.add_branches()->mutable_sequence() = std::move(branch);
  }
  *finish.add_steps()->mutable_parallel() = std::move(updates);
  if (io.reports_loss_scale) ProgramBuilder::stream_out(finish, io.loss_scale_stream, io.loss_scale_report);
  estimate.set_update_cycles(programs.estimator().cycles_of(ProgramBuilder::sequence(finish)));
  for (double b : busy)
    estimate.add_busy_cycles(b);
  for (uint64_t b : stash_bytes)
    estimate.add_stash_bytes(b);
  for (double c : crossing_cycles)
    estimate.add_crossing_cycles(c);
  return finish;
}

} // namespace

void append_stage_update(format::Sequence& seq, const StageComputeSets& stage) {
  ProgramBuilder::execute(seq, stage.loss_scale);
  if (!stage.update_condition) {
    ProgramBuilder::execute(seq, stage.update);
    return;
  }
  format::Conditional* conditional = seq.add_steps()->mutable_conditional();
  conditional->set_condition(*stage.update_condition);
  format::Sequence update, skip;
  ProgramBuilder::execute(update, stage.update);
  ProgramBuilder::execute(skip, stage.skip);
  *conditional->mutable_then_body() = ProgramBuilder::sequence(std::move(update));
  *conditional->mutable_else_body() = ProgramBuilder::sequence(std::move(skip));
}

format::Sequence build_pipelined_update(LowerContext& ctx, ProgramBuilder& programs,
                                        const std::vector<StageComputeSets>& stages, const StepStreams& io,
                                        const PipelinePlan& plan, const std::vector<uint32_t>& accumulators,
                                        uint32_t replicas, bool recompute, ReceiveBuffers& receive,
                                        format::ScheduleEstimate& estimate) {
  PipelinedUpdate pipeline(ctx, programs, stages, io, plan, recompute, estimate);
  pipeline.add_stashes();
  pipeline.add_boundaries(receive);
  format::Sequence update;
  format::Sequence deferred_sends; // the previous slot's, when plan.sends_with_next_slot says so
  for (size_t slot_index = 0; slot_index < plan.slots.size(); ++slot_index)
    *update.add_steps() = pipeline.build_slot(slot_index, deferred_sends);
  format::Sequence finish = pipeline.build_finish(accumulators, replicas);
  for (auto& step : *finish.mutable_steps())
    *update.add_steps() = std::move(step);
  return update;
}

} // namespace ipu::lowering
