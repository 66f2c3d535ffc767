#include "compiler/passes/recompute.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <queue>
#include <set>

namespace ipu::passes {
namespace {

// The forward ops in graph order (a topological order), and where each stands in it.
struct ForwardPass {
  std::vector<int> ops;
  std::map<int, int> position; // op id -> index in ops
};

ForwardPass forward_pass(const ir::Graph& graph) {
  ForwardPass pass;
  for (const ir::Op& op : graph.ops()) {
    if (op.phase != ir::Phase::kForward) continue;
    pass.position.emplace(op.id, static_cast<int>(pass.ops.size()));
    pass.ops.push_back(op.id);
  }
  return pass;
}

// The forward position of the op producing `value`, or -1 if no forward op does.
int produced_at(const ir::Graph& graph, const ForwardPass& pass, int value) {
  const auto found = pass.position.find(graph.value(value).producer);
  return found == pass.position.end() ? -1 : found->second;
}

// Bytes of a value in float32: only compared with each other, so the precision does not matter.
double bytes_of(const ir::Value& value) {
  return 4.0 * static_cast<double>(value.type.elements());
}

// For each position p, the bytes of the values made at or before p that a forward op after p reads:
// what a checkpoint at a cut after p holds.
std::vector<double> crossing_bytes(const ir::Graph& graph, const ForwardPass& pass) {
  const size_t n = pass.ops.size();
  std::map<int, int> last_reader; // value -> position
  for (size_t i = 0; i < n; ++i) {
    for (int in : graph.op(pass.ops[i]).inputs) {
      if (produced_at(graph, pass, in) >= 0) last_reader[in] = static_cast<int>(i);
    }
  }
  std::vector<double> change(n + 1, 0.0);
  for (const auto& [value, last] : last_reader) {
    const int made = produced_at(graph, pass, value);
    change[static_cast<size_t>(made)] += bytes_of(graph.value(value));
    change[static_cast<size_t>(last)] -= bytes_of(graph.value(value));
  }
  change.pop_back(); // a value's last reader is a position, never past the end
  double open = 0.0;
  for (double& at : change) {
    open += at;
    at = open;
  }
  return change;
}

// Chen et al.'s O(√n) cuts: round(√n) segments of about equal activation bytes, the cut of each
// where the fewest bytes cross among the positions within half a segment of its share.
std::vector<int> balanced_cuts(const ir::Graph& graph, const ForwardPass& pass) {
  const size_t n = pass.ops.size();
  if (n < 2) return {};
  const int segments = std::max(1, static_cast<int>(std::lround(std::sqrt(static_cast<double>(n)))));
  std::vector<double> made_by(n, 0.0); // activation bytes of the ops up to each position
  double total = 0.0;
  for (size_t p = 0; p < n; ++p) {
    for (int out : graph.op(pass.ops[p]).outputs)
      total += bytes_of(graph.value(out));
    made_by[p] = total;
  }
  const std::vector<double> crossing = crossing_bytes(graph, pass);
  std::vector<int> cuts;
  for (int s = 1; s < segments; ++s) {
    const double share = total * s / segments, reach = total / (2.0 * segments);
    int best = -1;
    for (size_t p = cuts.empty() ? 0 : static_cast<size_t>(cuts.back()) + 1; p + 1 < n; ++p) {
      const double off = std::abs(made_by[p] - share);
      if (off > reach) continue;
      const auto b = static_cast<size_t>(best);
      if (best < 0 || crossing[p] < crossing[b] ||
          (crossing[p] == crossing[b] && off < std::abs(made_by[b] - share))) {
        best = static_cast<int>(p);
      }
    }
    if (best >= 0) cuts.push_back(best);
  }
  return cuts;
}

// Whether `op` is one of the user's checkpoint ops: its kind, its name, or the layer its name
// starts with ("dense1" for "dense1/matmul").
bool names_op(const std::string& name, const ir::Op& op) {
  return name == ir::op_kind_name(op.kind) || op.name == name ||
         (op.name.size() > name.size() && op.name.starts_with(name) && op.name[name.size()] == '/');
}

// Cuts after the forward ops the user names; BadOption for a name that matches none.
StatusOr<std::vector<int>> named_cuts(const ir::Graph& graph, const ForwardPass& pass,
                                      const std::vector<std::string>& names) {
  std::vector<int> cuts;
  std::string unmatched;
  for (const std::string& name : names) {
    bool matched = false;
    for (size_t p = 0; p < pass.ops.size(); ++p) {
      if (!names_op(name, graph.op(pass.ops[p]))) continue;
      matched = true;
      if (p + 1 < pass.ops.size()) cuts.push_back(static_cast<int>(p));
    }
    if (!matched) unmatched += (unmatched.empty() ? "'" : ", '") + name + "'";
  }
  if (!unmatched.empty()) {
    return bad_option(
        "--recompute-checkpoints: " + unmatched +
        " names no op kind, op or layer of the forward pass (ipucc compile --dump-ir lists them)");
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  return cuts;
}

// Which forward values the backward pass must not recompute: those a later segment reads, those
// another phase than the forward and backward reads (the loss), and the outputs of ops that must
// not run twice. Indexed by value id.
std::vector<bool> find_checkpoints(const ir::Graph& graph, const ForwardPass& pass,
                                   const std::vector<int>& segment) {
  std::vector<bool> checkpoint(graph.values().size(), false);
  for (int id : pass.ops) {
    if (is_recomputable(graph, graph.op(id))) continue;
    for (int out : graph.op(id).outputs)
      checkpoint[static_cast<size_t>(out)] = true;
  }
  for (const ir::Op& op : graph.ops()) {
    for (int in : op.inputs) {
      const int made = produced_at(graph, pass, in);
      if (made < 0 || op.phase == ir::Phase::kBackward) continue;
      if (op.phase != ir::Phase::kForward ||
          segment[static_cast<size_t>(pass.position.at(op.id))] > segment[static_cast<size_t>(made)]) {
        checkpoint[static_cast<size_t>(in)] = true;
      }
    }
  }
  return checkpoint;
}

// For each value, the ops that read it.
std::vector<std::vector<int>> readers_of(const ir::Graph& graph) {
  std::vector<std::vector<int>> readers(graph.values().size());
  for (const ir::Op& op : graph.ops()) {
    for (int in : op.inputs)
      readers[static_cast<size_t>(in)].push_back(op.id);
  }
  return readers;
}

// The ops computed, directly or not, from `values`, by op id.
std::vector<bool> computed_from(const ir::Graph& graph, const std::vector<std::vector<int>>& readers,
                                const std::vector<int>& values) {
  std::vector<bool> reached(graph.ops().size(), false);
  std::vector<int> pending = values;
  while (!pending.empty()) {
    const int value = pending.back();
    pending.pop_back();
    for (int op : readers[static_cast<size_t>(value)]) {
      if (reached[static_cast<size_t>(op)]) continue;
      reached[static_cast<size_t>(op)] = true;
      const std::vector<int>& outputs = graph.op(op).outputs;
      pending.insert(pending.end(), outputs.begin(), outputs.end());
    }
  }
  return reached;
}

// What a segment's clones (ops `clones`) wait for: the gradients that reach the segment. Of the
// values made by backward ops that are not clones which the readers of the clones read, those
// not computed from the clones (which would be a cycle) nor from another of them.
std::vector<int> gradients_reaching(const ir::Graph& graph, const std::vector<std::vector<int>>& readers,
                                    const std::vector<int>& clones,
                                    const std::function<bool(int)>& is_clone) {
  std::vector<int> outputs;
  for (int clone : clones)
    outputs.insert(outputs.end(), graph.op(clone).outputs.begin(), graph.op(clone).outputs.end());
  const std::vector<bool> from_clones = computed_from(graph, readers, outputs);
  std::set<int> candidates;
  for (int out : outputs) {
    for (int reader : readers[static_cast<size_t>(out)]) {
      if (is_clone(reader)) continue;
      for (int in : graph.op(reader).inputs) {
        const int producer = graph.value(in).producer;
        if (producer >= 0 && graph.op(producer).phase == ir::Phase::kBackward && !is_clone(producer) &&
            !from_clones[static_cast<size_t>(producer)]) {
          candidates.insert(in);
        }
      }
    }
  }
  std::vector<int> first;
  for (int candidate : candidates) {
    bool later = false;
    for (int other : candidates) {
      if (other != candidate &&
          computed_from(graph, readers, {other})[static_cast<size_t>(graph.value(candidate).producer)]) {
        later = true;
        break;
      }
    }
    if (!later) first.push_back(candidate);
  }
  return first;
}

// Orders the ops so that each follows the producers of what it reads and waits for, keeping the
// present order wherever that allows (the clones, appended last, move just before their readers).
Status order_topologically(ir::Graph& graph) {
  const size_t n = graph.ops().size();
  std::vector<std::vector<int>> successors(n);
  std::vector<int> waiting(n, 0);
  for (const ir::Op& op : graph.ops()) {
    for (const std::vector<int>* values : {&op.inputs, &op.after}) {
      for (int v : *values) {
        const int producer = graph.value(v).producer;
        if (producer < 0) continue;
        successors[static_cast<size_t>(producer)].push_back(op.id);
        ++waiting[static_cast<size_t>(op.id)];
      }
    }
  }
  std::priority_queue<int, std::vector<int>, std::greater<>> ready;
  for (size_t i = 0; i < n; ++i) {
    if (waiting[i] == 0) ready.push(static_cast<int>(i));
  }
  std::vector<int> order;
  order.reserve(n);
  while (!ready.empty()) {
    const int id = ready.top();
    ready.pop();
    order.push_back(id);
    for (int next : successors[static_cast<size_t>(id)]) {
      if (--waiting[static_cast<size_t>(next)] == 0) ready.push(next);
    }
  }
  if (order.size() != n) return internal_error("recompute: the recomputed ops' waits form a cycle");
  graph.reorder_ops(order);
  return Status();
}

} // namespace

bool is_recomputable(const ir::Graph& graph, const ir::Op& op) {
  if (op.phase != ir::Phase::kForward || op.outputs.empty()) return false;
  for (int out : op.outputs) {
    if (graph.value(out).role != ir::Role::kActivation) return false;
  }
  for (int in : op.inputs) {
    const ir::Value& v = graph.value(in);
    if (v.producer >= 0) continue;
    switch (v.role) {
    case ir::Role::kInput:
    case ir::Role::kLabel:
    case ir::Role::kWeight:
    case ir::Role::kConstant:
    case ir::Role::kHyperParameters:
    case ir::Role::kActivation:
      continue;
    default:
      return false; // state the op may update in place
    }
  }
  return true;
}

StatusOr<RecomputeSummary> recompute_forward(ir::Graph& graph, const RecomputeOptions& options) {
  const ForwardPass pass = forward_pass(graph);
  std::vector<int> cuts;
  if (options.checkpoint_ops.empty()) {
    cuts = balanced_cuts(graph, pass);
  } else {
    IPU_ASSIGN_OR_RETURN(cuts, named_cuts(graph, pass, options.checkpoint_ops));
  }
  std::vector<int> segment(pass.ops.size(), 0);
  for (size_t p = 0, next = 0; p < pass.ops.size(); ++p) {
    segment[p] = static_cast<int>(next);
    if (next < cuts.size() && static_cast<int>(p) == cuts[next]) ++next;
  }
  const std::vector<bool> checkpoint = find_checkpoints(graph, pass, segment);
  auto recomputed = [&](int value) {
    return produced_at(graph, pass, value) >= 0 && !checkpoint[static_cast<size_t>(value)];
  };

  // The forward ops to run again: those making a value the backward reads that is no checkpoint,
  // and, going back within their segment, those making what they read that is none either.
  std::vector<bool> again(pass.ops.size(), false);
  for (const ir::Op& op : graph.ops()) {
    for (int in : op.inputs) {
      if (op.phase == ir::Phase::kBackward && recomputed(in))
        again[static_cast<size_t>(produced_at(graph, pass, in))] = true;
    }
  }
  for (size_t p = pass.ops.size(); p-- > 0;) {
    if (!again[p]) continue;
    for (int in : graph.op(pass.ops[p]).inputs) {
      if (recomputed(in)) again[static_cast<size_t>(produced_at(graph, pass, in))] = true;
    }
  }

  RecomputeSummary summary;
  summary.segments = static_cast<int>(cuts.size()) + 1;
  const int first_clone = static_cast<int>(graph.ops().size());
  std::map<int, int> clone_of; // forward value -> its recomputed value
  std::map<int, std::vector<int>> clones_by_segment;
  for (size_t p = 0; p < pass.ops.size(); ++p) {
    if (!again[p]) continue;
    std::vector<int> inputs = graph.op(pass.ops[p]).inputs;
    for (int& in : inputs) {
      if (const auto found = clone_of.find(in); found != clone_of.end()) in = found->second;
    }
    const int clone = graph.clone_op(pass.ops[p], "/recompute", std::move(inputs), ir::Phase::kBackward);
    for (size_t i = 0; i < graph.op(clone).outputs.size(); ++i)
      clone_of.emplace(graph.op(pass.ops[p]).outputs[i], graph.op(clone).outputs[i]);
    clones_by_segment[segment[p]].push_back(clone);
    ++summary.recomputed_ops;
  }
  for (int id = 0; id < first_clone; ++id) {
    ir::Op& op = graph.op(id);
    if (op.phase != ir::Phase::kBackward) continue;
    for (int& in : op.inputs) {
      if (const auto found = clone_of.find(in); found != clone_of.end()) in = found->second;
    }
  }
  const std::vector<std::vector<int>> readers = readers_of(graph);
  const auto is_clone = [&](int op) { return op >= first_clone; };
  for (const auto& [s, clones] : clones_by_segment) {
    const std::vector<int> waits = gradients_reaching(graph, readers, clones, is_clone);
    for (int clone : clones)
      graph.op(clone).after = waits;
  }
  std::set<int> kept;
  for (const ir::Op& op : graph.ops()) {
    for (int in : op.inputs) {
      if (op.phase == ir::Phase::kBackward && produced_at(graph, pass, in) >= 0) kept.insert(in);
    }
  }
  summary.checkpoints.assign(kept.begin(), kept.end());
  IPU_RETURN_IF_ERROR(order_topologically(graph));
  return summary;
}

} // namespace ipu::passes
