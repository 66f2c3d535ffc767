#include "compiler/lowering/lower_context.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>

#include "compiler/lowering/tile_planner.h"
#include "runtime/base/half.h"
#include "runtime/format/verifier.h"

namespace ipu::lowering {
namespace {

// Whether `v` is binary16 under `precision` (docs/training.md, "Precision"): what the forward
// and backward compute, and the weights they read (in mixed precision, the casts' copies of them).
// The loss (as Keras computes it, in float32), the clip, loss-scale and update phases (a squared
// norm would overflow binary16 at 256²) compute in fp32.
bool is_half(const ir::Graph& graph, const ir::Value& v, Precision precision) {
  if (precision == Precision::kFp32 || v.type.dtype != ir::DType::kFloat32 || v.keeps_float32) return false;
  const auto made_in = [&](std::initializer_list<ir::Phase> phases) {
    return v.producer >= 0 &&
           std::find(phases.begin(), phases.end(), graph.op(v.producer).phase) != phases.end();
  };
  switch (v.role) {
  case ir::Role::kInput:
  case ir::Role::kConstant:
    return true;
  case ir::Role::kActivation:
    return v.producer < 0 || made_in({ir::Phase::kForward, ir::Phase::kBackward});
  case ir::Role::kGradient:
    return made_in({ir::Phase::kBackward});
  case ir::Role::kWeight:
    return precision == Precision::kFp16;
  default:
    return false;
  }
}

// Sorted by tensor and begin, overlapping and adjacent ranges of a tensor merged.
std::vector<format::TensorRange> merge_ranges(std::vector<format::TensorRange> ranges) {
  std::sort(ranges.begin(), ranges.end(), [](const format::TensorRange& a, const format::TensorRange& b) {
    return std::pair(a.tensor(), a.begin()) < std::pair(b.tensor(), b.begin());
  });
  std::vector<format::TensorRange> out;
  for (const format::TensorRange& r : ranges) {
    if (!out.empty() && out.back().tensor() == r.tensor() && out.back().end() >= r.begin()) {
      out.back().set_end(std::max(out.back().end(), r.end()));
    } else {
      out.push_back(r);
    }
  }
  return out;
}

format::TensorRole to_format(ir::Role role) {
  switch (role) {
  case ir::Role::kInput:
    return format::INPUT;
  case ir::Role::kLabel:
    return format::LABEL;
  case ir::Role::kWeight:
    return format::WEIGHT;
  case ir::Role::kOptimizerState:
    return format::OPTIMIZER_STATE;
  case ir::Role::kActivation:
    return format::ACTIVATION;
  case ir::Role::kGradient:
    return format::GRADIENT;
  case ir::Role::kLoss:
    return format::LOSS;
  case ir::Role::kMetric:
    return format::METRIC;
  case ir::Role::kAccumulator:
    return format::ACCUMULATOR;
  case ir::Role::kConstant:
    return format::CONSTANT;
  case ir::Role::kHyperParameters:
    return format::HYPER_PARAMETERS;
  case ir::Role::kRunningStatistics:
    return format::RUNNING_STATISTICS;
  case ir::Role::kStatisticsMode:
    return format::STATISTICS_MODE;
  }
  return format::ROLE_UNSPECIFIED;
}

// Keeps the mapping short: adjacent intervals on one tile become one.
std::vector<format::Interval> normalise(std::vector<format::Interval> intervals) {
  std::sort(intervals.begin(), intervals.end(),
            [](const format::Interval& a, const format::Interval& b) { return a.begin() < b.begin(); });
  std::vector<format::Interval> out;
  for (const auto& iv : intervals) {
    if (!out.empty() && out.back().tile() == iv.tile() && out.back().end() == iv.begin()) {
      out.back().set_end(iv.end());
    } else {
      out.push_back(iv);
    }
  }
  return out;
}

format::Interval interval(uint32_t tile, uint64_t begin, uint64_t end) {
  format::Interval iv;
  iv.set_tile(tile);
  iv.set_begin(begin);
  iv.set_end(end);
  return iv;
}

} // namespace

std::optional<Precision> parse_precision(const std::string& name) {
  if (name == "fp32") return Precision::kFp32;
  if (name == "fp16") return Precision::kFp16;
  if (name == "mixed") return Precision::kMixed;
  return std::nullopt;
}

const char* precision_name(Precision precision) {
  switch (precision) {
  case Precision::kFp32:
    return "fp32";
  case Precision::kFp16:
    return "fp16";
  case Precision::kMixed:
    return "mixed";
  }
  return "?";
}

format::DType stored_dtype(const ir::Graph& graph, const ir::Value& v, Precision precision) {
  if (v.declared_half) return format::FLOAT16;
  if (v.type.dtype != ir::DType::kFloat32) return format::INT32;
  return is_half(graph, v, precision) ? format::FLOAT16 : format::FLOAT32;
}

LowerContext::LowerContext(const ir::Graph& graph, const target::TargetSpec& target,
                           format::Executable& executable, Precision precision)
    : m_graph(graph), m_target(target), m_half_rates_target(target), m_exe(executable),
      m_precision(precision), m_value_tensor(graph.values().size(), -1) {
  m_half_rates_target.cycles = target::at_half_rates(target.cycles);
}

void LowerContext::begin_phase(ir::Phase phase) {
  m_half_rates =
      m_precision != Precision::kFp32 && (phase == ir::Phase::kForward || phase == ir::Phase::kBackward);
}

uint32_t LowerContext::tensor(int value) {
  int64_t& slot = m_value_tensor.at(static_cast<size_t>(value));
  if (slot >= 0) return static_cast<uint32_t>(slot);
  const ir::Value& v = m_graph.value(value);
  format::Tensor* t = m_exe.add_tensors();
  t->set_name(v.name);
  t->set_dtype(stored_dtype(m_graph, v, m_precision));
  for (int64_t d : v.type.shape)
    t->add_shape(d);
  t->set_role(to_format(v.role));
  t->set_ipu(static_cast<uint32_t>(v.stage)); // stage s runs on IPU s of its replica
  // An empty initial value means zeros: optimizer state and zero-initialised biases cost no bytes,
  // which halves a trained model's executable and the time a cache hit spends reading it.
  const bool all_zero =
      std::all_of(v.initial.begin(), v.initial.end(), [](float x) { return x == 0.0f && !std::signbit(x); });
  if (!all_zero && t->dtype() == format::FLOAT16) {
    std::string bits(v.initial.size() * 2, '\0');
    for (size_t i = 0; i < v.initial.size(); ++i) {
      const uint16_t h = float_to_half_bits(v.initial[i]);
      std::memcpy(bits.data() + 2 * i, &h, 2);
    }
    t->set_initial_value(std::move(bits));
  } else if (!all_zero) {
    t->set_initial_value(v.initial.data(), v.initial.size() * sizeof(float));
  }
  slot = m_exe.tensors_size() - 1;
  return static_cast<uint32_t>(slot);
}

void LowerContext::alias(int value, int source) {
  m_value_tensor.at(static_cast<size_t>(value)) = tensor(source);
}

void LowerContext::set_mapping(uint32_t tensor_index, std::vector<format::Interval> intervals) {
  format::Tensor* t = m_exe.mutable_tensors(static_cast<int>(tensor_index));
  t->clear_mapping();
  for (auto& iv : normalise(std::move(intervals)))
    *t->add_mapping() = iv;
}

void LowerContext::map_linearly(int value) {
  map_tensor_linearly(tensor(value));
}

void LowerContext::map_like(int value, int like) {
  const uint32_t target = tensor(value);
  const auto& mapping = m_exe.tensors(static_cast<int>(tensor(like))).mapping();
  set_mapping(target, {mapping.begin(), mapping.end()});
}

void LowerContext::defer_mapping_to_reader(int value) {
  m_awaiting_placement.try_emplace(tensor(value));
}

void LowerContext::place_region(const Region& region, uint32_t tile) {
  auto it = m_awaiting_placement.find(region.tensor);
  if (it == m_awaiting_placement.end()) return;
  for (int64_t r = region.row_begin; r < region.row_end; ++r) {
    it->second.push_back(interval(tile, static_cast<uint64_t>(r * region.row_stride + region.col_begin),
                                  static_cast<uint64_t>(r * region.row_stride + region.col_end)));
  }
  set_mapping(region.tensor, it->second);
}

void LowerContext::end_placement(uint32_t tensor_index) {
  auto it = m_awaiting_placement.find(tensor_index);
  if (it == m_awaiting_placement.end()) return;
  std::vector<format::Interval> placed = normalise(std::move(it->second));
  m_awaiting_placement.erase(it);
  uint64_t covered = 0;
  for (const format::Interval& iv : placed)
    covered += iv.end() - iv.begin();
  if (covered != format::element_count(m_exe.tensors(static_cast<int>(tensor_index)))) {
    m_exe.mutable_tensors(static_cast<int>(tensor_index))->clear_mapping();
    map_tensor_linearly(tensor_index);
  }
}

void LowerContext::map_tensor_linearly(uint32_t index) {
  const format::Tensor& t = m_exe.tensors(static_cast<int>(index));
  if (t.mapping_size() > 0) return;
  int64_t elements = 1;
  for (int64_t d : t.shape())
    elements *= d;
  const uint32_t tiles = m_target.tiles_per_ipu;
  // At least 64 elements per tile: finer slices cost more in descriptors than they save.
  const int64_t chunk = std::max<int64_t>(64, ceil_div(elements, tiles));
  const uint32_t base = t.ipu() * tiles;
  std::vector<format::Interval> intervals;
  for (int64_t begin = 0; begin < elements; begin += chunk) {
    intervals.push_back(interval(base + m_linear_cursor, static_cast<uint64_t>(begin),
                                 static_cast<uint64_t>(std::min(elements, begin + chunk))));
    m_linear_cursor = (m_linear_cursor + 1) % tiles;
  }
  set_mapping(index, std::move(intervals));
}

uint32_t LowerContext::add_buffer(const std::string& name, uint32_t like, format::TensorRole role) {
  format::Tensor* t = m_exe.add_tensors();
  const format::Tensor& source = m_exe.tensors(static_cast<int>(like));
  t->set_name(name);
  t->set_dtype(source.dtype());
  *t->mutable_shape() = source.shape();
  t->set_role(role);
  t->set_ipu(source.ipu());
  const uint32_t index = static_cast<uint32_t>(m_exe.tensors_size() - 1);
  map_tensor_linearly(index);
  return index;
}

void LowerContext::begin_compute_set(std::string name, int ipu) {
  m_cs = m_exe.add_compute_sets();
  m_last_cs_name = name;
  m_cs->set_name(std::move(name));
  m_cs_ipu = ipu;
  m_tile_cursor = 0;
  m_tile_compute.clear();
  m_tile_vertices.clear();
  m_tile_received.clear();
  m_pending_writes.clear();
  m_rounded.clear();
  m_record = ComputeSetRecord();
  m_op_index = -1;
}

void LowerContext::begin_op(const std::string& name) {
  m_op_name = name;
  m_op_index = -1;
}

uint32_t LowerContext::lightest_window(uint32_t width) const {
  const uint32_t tiles = m_target.tiles_per_ipu;
  const uint32_t base = static_cast<uint32_t>(m_cs_ipu) * tiles;
  // Bytes each tile receives so far, twice over, so every window is a contiguous run, in grains
  // of 1/16 of an op's working-set budget: finer differences do not matter to memory, and among
  // windows equal at that grain the one round robin would take keeps the layout it gave.
  const auto grain = static_cast<uint64_t>(std::max(1.0, tile_budget_bytes(m_target) / 16));
  std::vector<uint64_t> received(2 * static_cast<size_t>(tiles), 0);
  for (const auto& [tile, bytes] : m_record.received_bytes) {
    if (tile < base || tile >= base + tiles) continue;
    received[tile - base] = received[tile - base + tiles] = bytes / grain;
  }
  std::vector<uint64_t> prefix(received.size() + 1, 0);
  for (size_t i = 0; i < received.size(); ++i)
    prefix[i + 1] = prefix[i] + received[i];
  // The fullest tile of each window by a sliding maximum (a deque of decreasing loads). Windows
  // start where the previous op's would modulo an exchange bus, so the neighbouring vertices that
  // receive the same data (the rows of one MatMul block) still share a bus (target::exchange_cycles).
  const uint32_t bus = std::max<uint32_t>(1, m_target.cycles.tiles_per_exchange_bus);
  std::deque<size_t> fullest;
  uint32_t best = m_tile_cursor;
  std::array<uint64_t, 3> best_key = {UINT64_MAX, UINT64_MAX, UINT64_MAX};
  for (size_t end = 0; end < received.size(); ++end) {
    while (!fullest.empty() && received[fullest.back()] <= received[end])
      fullest.pop_back();
    fullest.push_back(end);
    if (end + 1 < width) continue;
    const size_t start = end + 1 - width;
    if (start >= tiles) break;
    while (fullest.front() < start)
      fullest.pop_front();
    if (start % bus != m_tile_cursor % bus) continue;
    const std::array<uint64_t, 3> key = {received[fullest.front()], prefix[end + 1] - prefix[start],
                                         (start + tiles - m_tile_cursor) % tiles};
    if (key < best_key) {
      best_key = key;
      best = static_cast<uint32_t>(start);
    }
  }
  return best;
}

std::vector<uint32_t> LowerContext::peek_tiles(int64_t count) const {
  std::vector<uint32_t> tiles;
  const uint32_t base = static_cast<uint32_t>(m_cs_ipu) * m_target.tiles_per_ipu;
  uint32_t cursor = m_tile_cursor;
  if (count > 0 && count < m_target.tiles_per_ipu && !m_record.received_bytes.empty())
    cursor = lightest_window(static_cast<uint32_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    tiles.push_back(base + cursor);
    cursor = (cursor + 1) % m_target.tiles_per_ipu;
  }
  return tiles;
}

std::vector<uint32_t> LowerContext::take_tiles(int64_t count) {
  std::vector<uint32_t> tiles = peek_tiles(count);
  if (!tiles.empty()) m_tile_cursor = (tiles.back() + 1) % m_target.tiles_per_ipu;
  return tiles;
}

std::vector<uint32_t> LowerContext::take_tiles_for_placement(int64_t count) {
  const uint32_t tiles_per_ipu = m_target.tiles_per_ipu;
  const uint32_t base = static_cast<uint32_t>(m_cs_ipu) * tiles_per_ipu;
  std::vector<uint32_t> tiles;
  for (int64_t i = 0; i < count; ++i) {
    tiles.push_back(base + m_linear_cursor);
    m_linear_cursor = (m_linear_cursor + 1) % tiles_per_ipu;
  }
  if (!tiles.empty()) m_tile_cursor = m_linear_cursor;
  return tiles;
}

uint64_t LowerContext::bytes_off_tile(const Region& region, uint32_t tile) const {
  const format::Tensor& t = m_exe.tensors(static_cast<int>(region.tensor));
  const auto& mapping = t.mapping();
  uint64_t total = 0, local = 0;
  for (int64_t r = region.row_begin; r < region.row_end; ++r) {
    const uint64_t begin = static_cast<uint64_t>(r * region.row_stride + region.col_begin);
    const uint64_t end = static_cast<uint64_t>(r * region.row_stride + region.col_end);
    total += end - begin;
    // First interval ending after `begin`, then walk while intervals overlap [begin, end).
    auto it = std::upper_bound(mapping.begin(), mapping.end(), begin,
                               [](uint64_t x, const format::Interval& iv) { return x < iv.end(); });
    for (; it != mapping.end() && it->begin() < end; ++it) {
      if (it->tile() == tile) local += std::min(end, it->end()) - std::max(begin, it->begin());
    }
  }
  return (total - local) * format::dtype_size(t.dtype());
}

double LowerContext::tile_cycles_so_far(uint32_t tile) const {
  const auto it = m_tile_compute.find(tile);
  return it == m_tile_compute.end() ? 0 : it->second;
}

uint64_t LowerContext::tile_received_so_far(uint32_t tile) const {
  const auto it = m_record.received_bytes.find(tile);
  return it == m_record.received_bytes.end() ? 0 : it->second;
}

format::AllReduce LowerContext::gradient_all_reduce(const std::vector<uint32_t>& accumulators) const {
  format::AllReduce all_reduce;
  for (uint32_t acc : accumulators)
    all_reduce.add_tensors(acc);
  if (m_precision != Precision::kFp32) all_reduce.set_wire_dtype(format::FLOAT16);
  return all_reduce;
}

uint64_t LowerContext::fullest_tile_received() const {
  uint64_t fullest = 0;
  for (const auto& [tile, bytes] : m_record.received_bytes)
    fullest = std::max(fullest, bytes);
  return fullest;
}

void LowerContext::emit(uint32_t tile, VertexSpec spec) { // NOLINT(performance-unnecessary-value-param)
  const auto& m = m_target.cycles;
  format::Vertex* v = m_cs->add_vertices();
  v->set_codelet(static_cast<uint32_t>(spec.codelet));
  v->set_tile(tile);
  for (uint32_t o : spec.operands)
    v->add_operands(o);
  for (int64_t p : spec.params)
    v->add_params(p);
  for (float f : spec.fparams)
    v->add_fparams(f);
  const double cycles = m.vertex_overhead_cycles + spec.compute_cycles;
  v->set_cycles(static_cast<uint64_t>(cycles));
  // Ops that emit nothing (a reshape aliases its input) are not listed.
  if (m_op_index < 0) {
    m_cs->add_ops(m_op_name);
    m_op_index = m_cs->ops_size() - 1;
  }
  v->set_op(static_cast<uint32_t>(m_op_index));
  m_tile_compute[tile] += cycles;
  ++m_tile_vertices[tile];
  for (const Region& r : spec.reads) {
    const uint64_t bytes = bytes_off_tile(r, tile);
    m_record.received_bytes[tile] += bytes;
    m_record.tensors.insert(r.tensor);
    if (bytes > 0) {
      m_tile_received[tile][{r.tensor, r.row_begin, r.row_end, r.col_begin, r.col_end, r.row_stride}] +=
          bytes;
    }
  }
  for (const Region& w : spec.writes) {
    m_record.tensors.insert(w.tensor);
    auto& pending = m_pending_writes[w.tensor];
    for (int64_t r = w.row_begin; r < w.row_end; ++r) {
      pending.push_back(interval(tile, static_cast<uint64_t>(r * w.row_stride + w.col_begin),
                                 static_cast<uint64_t>(r * w.row_stride + w.col_end)));
    }
    round_if_half(w);
  }
  for (const Region& w : spec.in_place)
    round_if_half(w);
}

void LowerContext::round_if_half(const Region& written) {
  if (m_exe.tensors(static_cast<int>(written.tensor)).dtype() != format::FLOAT16) return;
  for (int64_t r = written.row_begin; r < written.row_end; ++r) {
    const auto begin = static_cast<uint64_t>(r * written.row_stride + written.col_begin);
    const auto end = static_cast<uint64_t>(r * written.row_stride + written.col_end);
    if (begin >= end) continue;
    format::TensorRange& range = m_rounded.emplace_back();
    range.set_tensor(written.tensor);
    range.set_begin(begin);
    range.set_end(end);
  }
}

void LowerContext::emit_after(uint32_t tile, VertexSpec vertex) {
  m_follow_ups.push_back({m_op_name, tile, std::move(vertex)});
}

std::optional<uint32_t> LowerContext::lower_follow_ups() {
  if (m_follow_ups.empty()) return std::nullopt;
  begin_compute_set(m_last_cs_name + "/reduce", m_cs_ipu);
  std::vector<FollowUp> follow_ups = std::move(m_follow_ups);
  m_follow_ups.clear();
  for (FollowUp& f : follow_ups) {
    if (f.op_name != m_op_name) begin_op(f.op_name);
    emit(f.tile, std::move(f.vertex));
  }
  return end_compute_set();
}

uint32_t LowerContext::add_temporary(const std::string& name, const std::vector<int64_t>& shape) {
  format::Tensor* t = m_exe.add_tensors();
  t->set_name(name);
  t->set_dtype(format::FLOAT32);
  for (int64_t d : shape)
    t->add_shape(d);
  t->set_role(format::ACTIVATION);
  t->set_ipu(static_cast<uint32_t>(m_cs_ipu));
  return static_cast<uint32_t>(m_exe.tensors_size() - 1);
}

void LowerContext::record_stage_copy(const ir::Op& op) {
  const int source = op.inputs[0], destination = op.outputs[0];
  m_stage_copies.push_back({tensor(source), tensor(destination), m_graph.value(source).stage,
                            m_graph.value(destination).stage, op.phase});
}

std::optional<uint32_t> LowerContext::end_compute_set() {
  if (m_cs->vertices_size() == 0) {
    m_exe.mutable_compute_sets()->RemoveLast();
    m_cs = nullptr;
    return std::nullopt;
  }
  const auto& m = m_target.cycles;
  for (auto& [tensor_index, intervals] : m_pending_writes)
    set_mapping(tensor_index, std::move(intervals));
  for (format::TensorRange& range : merge_ranges(std::move(m_rounded)))
    *m_cs->add_rounded() = std::move(range);
  m_rounded.clear();
  double compute = 0, exchange = 0, launch = 0;
  uint64_t exchange_bytes = 0;
  for (const auto& [tile, cycles] : m_tile_compute) {
    if (cycles > compute) {
      compute = cycles;
      launch = m.vertex_overhead_cycles * static_cast<double>(m_tile_vertices[tile]);
    }
  }
  const uint32_t bus = std::max<uint32_t>(1, m.tiles_per_exchange_bus);
  for (const auto& [tile, bytes] : m_record.received_bytes) {
    // Regions the bus's other tiles receive too (of those, the bytes both fetch from elsewhere).
    double shared = 0;
    const auto& mine = m_tile_received[tile];
    for (uint32_t partner = tile - tile % bus; partner < tile - tile % bus + bus; ++partner) {
      auto theirs = m_tile_received.find(partner);
      if (partner == tile || theirs == m_tile_received.end()) continue;
      for (const auto& [region, region_bytes] : mine) {
        auto same = theirs->second.find(region);
        if (same != theirs->second.end()) shared += static_cast<double>(std::min(region_bytes, same->second));
      }
    }
    shared = std::min(shared, static_cast<double>(bytes));
    exchange = std::max(exchange, target::exchange_cycles(m, static_cast<double>(bytes), shared));
    exchange_bytes += bytes;
  }
  const double sync = target::sync_cycles(m_target, m_exe.target().num_ipus());
  m_cs->set_cycles(static_cast<uint64_t>(sync + exchange + compute));
  m_cs->set_compute_cycles(compute - launch);
  m_cs->set_launch_cycles(launch);
  m_cs->set_exchange_cycles(exchange);
  m_cs->set_sync_cycles(sync);
  m_cs->set_exchange_bytes(exchange_bytes);
  m_records.push_back(std::move(m_record));
  m_cs = nullptr;
  return static_cast<uint32_t>(m_exe.compute_sets_size() - 1);
}

} // namespace ipu::lowering
