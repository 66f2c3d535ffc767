// State shared by the op lowerings while an IR graph becomes compute sets: which executable
// tensor holds each IR value, where each tensor lives on the tiles, which tiles the current
// compute set has handed out, and the cycles and exchange of each compute set.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/lowering/precision.h"
#include "compiler/lowering/tile_planner.h"
#include "compiler/target/target.h"
#include "runtime/format/codelet.h"
#include "runtime/format/codelet_params.h"
#include "runtime/format/executable.pb.h"

namespace ipu::lowering {

// Elements a vertex reads or writes: rows [row_begin, row_end) of `row_stride` elements,
// columns [col_begin, col_end) of each. A flat range is a single row.
struct Region {
  uint32_t tensor = 0;
  int64_t row_begin = 0, row_end = 1;
  int64_t col_begin = 0, col_end = 0;
  int64_t row_stride = 0;
};
inline Region flat_region(uint32_t tensor, int64_t begin, int64_t end) {
  return {tensor, 0, 1, begin, end, 0};
}
inline Region block_region(uint32_t tensor, int64_t row_begin, int64_t row_end, int64_t col_begin,
                           int64_t col_end, int64_t row_stride) {
  return {tensor, row_begin, row_end, col_begin, col_end, row_stride};
}

struct VertexSpec {
  format::Codelet codelet;
  std::vector<uint32_t> operands;
  std::vector<int64_t> params;
  std::vector<float> fparams;
  double compute_cycles = 0; // excluding the per-vertex overhead, which the context adds
  std::vector<Region> reads;
  std::vector<Region> writes;
  // Regions of `reads` the vertex also updates in place (an optimizer's weight): their mapping
  // stays; those of FLOAT16 tensors are rounded after the compute set, as writes are.
  std::vector<Region> in_place;
};

// A StageCopy: `source` (on IPU source_stage) travels to `destination` (on destination_stage).
struct StageCopy {
  uint32_t source = 0;
  uint32_t destination = 0;
  int source_stage = 0;
  int destination_stage = 0;
  ir::Phase phase = ir::Phase::kForward;
};

// What the memory plan needs to know of one compute set.
struct ComputeSetRecord {
  std::map<uint32_t, uint64_t> received_bytes; // tile -> bytes arriving over the exchange
  std::set<uint32_t> tensors;                  // tensors read or written
};

// The dtype the executable stores `v` in under `precision`: FLOAT16, FLOAT32, or INT32 for
// integer values.
format::DType stored_dtype(const ir::Graph& graph, const ir::Value& v, Precision precision);

class LowerContext {
public:
  LowerContext(const ir::Graph& graph, const target::TargetSpec& target, format::Executable& executable,
               Precision precision = Precision::kFp32);

  const ir::Graph& graph() const { return m_graph; }
  // The target, its cycle model at the rates of the phase being lowered (begin_phase).
  const target::TargetSpec& target() const { return m_half_rates ? m_half_rates_target : m_target; }
  // The all-reduce of the gradients: in binary16 on the links under fp16 and mixed precision.
  format::AllReduce gradient_all_reduce(const std::vector<uint32_t>& accumulators) const;
  // Ops of `phase` are lowered next: the forward and backward of an fp16 or mixed program compute
  // in fp16 (target::at_half_rates); the loss, clip and update phases in fp32.
  void begin_phase(ir::Phase phase);

  // The executable tensor of an IR value, created on first use.
  uint32_t tensor(int value);
  // A new tensor shaped like `like` on the same IPU, spread over its tiles: stash slots and
  // receive buffers of the pipeline.
  uint32_t add_buffer(const std::string& name, uint32_t like, format::TensorRole role);
  const format::Executable& executable() const { return m_exe; }
  // Makes `value` share the tensor of `source` (a reshape moves no data).
  void alias(int value, int source);
  // Spreads the tensor of `value` linearly over the tiles of its IPU (for tensors that no
  // vertex produces: weights, optimizer state, infeed destinations).
  void map_linearly(int value);
  // Gives the tensor of `value` the tile mapping of `like`'s (mapped already): an optimizer's
  // state and accumulators lie beside their weight, so the update reads them all locally.
  void map_like(int value, int like);
  // Leaves the tensor of `value` unmapped for the first op that reads it to lay out where its
  // vertices read it (place_region), as Poplar creates a MatMul's weights with the layout of the
  // MatMul's plan (poplin::createMatMulInputRHS) rather than moving them there at every step.
  void defer_mapping_to_reader(int value);
  // Whether `tensor` still waits for its reader to place it.
  bool awaits_placement(uint32_t tensor) const { return m_awaiting_placement.contains(tensor); }
  // Maps `region` of a tensor that awaits placement to `tile`: a vertex there then reads it
  // locally. Call before emitting the vertex.
  void place_region(const Region& region, uint32_t tile);
  // The reader has placed all of `tensor`; an element it did not place is spread linearly.
  void end_placement(uint32_t tensor);
  // Tiles for the vertices of an op that places a tensor (take_tiles' contract): the run where the
  // last linear mapping or placement ended, wrapping round the IPU, so the tensors readers lay out
  // continue the linear mappings' spread instead of stacking on the tiles each compute set starts
  // from.
  std::vector<uint32_t> take_tiles_for_placement(int64_t count);

  void begin_compute_set(std::string name, int ipu);
  // The IPU of the open compute set.
  int compute_set_ipu() const { return m_cs_ipu; }
  // The op whose vertices the next emit calls add: its name is recorded in the compute set so a
  // runtime fault can name it.
  void begin_op(const std::string& name);
  // Closes the compute set: fixes the mapping of every tensor it wrote and its cycle estimate.
  // Returns its index, or nullopt if no vertex was emitted.
  std::optional<uint32_t> end_compute_set();

  // Tiles for one op's vertices: `count` consecutive tiles of the current IPU (wrapping round),
  // the window where the earlier ops of the open compute set receive the fewest bytes (at its
  // fullest tile, then in all, counted in grains of 1/16 of an op's working-set budget): ops that
  // share a compute set then spread their exchange receive buffers over the tiles instead of
  // stacking them (as Poplar spreads concurrent ops' vertices). Among equally light windows, the
  // one right after the previous op's (round robin), so an op alone in its compute set starts at
  // tile 0.
  std::vector<uint32_t> take_tiles(int64_t count);
  // The tiles take_tiles(count) would give, without taking them.
  std::vector<uint32_t> peek_tiles(int64_t count) const;
  // By value: every caller hands its spec over with std::move, a move rather than a copy.
  void emit(uint32_t tile, VertexSpec vertex);
  // A vertex for the compute set right after the open one (a MatMul split over K sums its
  // partial products there): lower_follow_ups places it once the open set has ended.
  void emit_after(uint32_t tile, VertexSpec vertex);
  // Closes the open compute set's follow-up: a compute set named '<its name>/reduce' holding the
  // vertices emit_after queued, on the same IPU. Returns its index, or nullopt if none was queued.
  std::optional<uint32_t> lower_follow_ups();
  // A FLOAT32 tensor (whatever the precision: partial sums stay fp32) on the open compute set's IPU, living
  // only across the compute sets that use it (the memory plan's temporaries); the vertices writing it give
  // its mapping.
  uint32_t add_temporary(const std::string& name, const std::vector<int64_t>& shape);

  void record_stage_copy(const ir::Op& op);
  const std::vector<StageCopy>& stage_copies() const { return m_stage_copies; }

  const std::vector<ComputeSetRecord>& records() const { return m_records; }

  // The bytes of `region` that `tile` does not hold: what a vertex there reading it receives.
  uint64_t bytes_off_tile(const Region& region, uint32_t tile) const;
  // What the open compute set's vertices so far give `tile`: their cycles (launch and compute) and
  // the bytes they receive.
  double tile_cycles_so_far(uint32_t tile) const;
  uint64_t tile_received_so_far(uint32_t tile) const;
  // The most bytes any one tile receives in the open compute set so far.
  uint64_t fullest_tile_received() const;

private:
  uint32_t lightest_window(uint32_t width) const;
  // Lists `written`'s elements in the open compute set's ComputeSet.rounded if its tensor is FLOAT16.
  void round_if_half(const Region& written);
  void set_mapping(uint32_t tensor, std::vector<format::Interval> intervals);
  void map_tensor_linearly(uint32_t tensor);

  const ir::Graph& m_graph;
  const target::TargetSpec& m_target;
  target::TargetSpec m_half_rates_target; // m_target at the fp16 rates
  bool m_half_rates = false;
  format::Executable& m_exe;
  Precision m_precision = Precision::kFp32;
  // Elements of FLOAT16 tensors the open compute set's vertices write (ComputeSet.rounded).
  std::vector<format::TensorRange> m_rounded;
  std::vector<int64_t> m_value_tensor; // IR value id -> tensor index, -1 if none yet
  // Tensors whose reader lays them out, with the intervals placed so far.
  std::map<uint32_t, std::vector<format::Interval>> m_awaiting_placement;
  uint32_t m_linear_cursor = 0;

  // The open compute set.
  format::ComputeSet* m_cs = nullptr;
  int m_cs_ipu = 0;
  uint32_t m_tile_cursor = 0;
  std::map<uint32_t, double> m_tile_compute;
  std::map<uint32_t, uint64_t> m_tile_vertices;
  std::string m_last_cs_name;
  struct FollowUp {
    std::string op_name;
    uint32_t tile = 0;
    VertexSpec vertex;
  };
  std::vector<FollowUp> m_follow_ups;
  // What each tile receives in the open compute set, region by region (tensor, rows, columns,
  // row stride), with the bytes of it held elsewhere: a region both tiles of an exchange bus
  // receive arrives at twice the rate (target::exchange_cycles).
  using RegionKey = std::array<int64_t, 6>;
  std::map<uint32_t, std::map<RegionKey, uint64_t>> m_tile_received;
  std::map<uint32_t, std::vector<format::Interval>> m_pending_writes;
  ComputeSetRecord m_record;
  std::vector<ComputeSetRecord> m_records;
  std::string m_op_name;
  int m_op_index = -1; // in the open compute set's ops; -1 until the op emits a vertex
  std::vector<StageCopy> m_stage_copies;
};

} // namespace ipu::lowering
