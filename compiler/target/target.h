// Simulated targets: IPU presets and the cycle model parameters that go with them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "runtime/base/status.h"
#include "runtime/format/executable.pb.h"

namespace ipu::target {

// Tile cycles per fp32 element of the functions that are not one vector instruction, from popops'
// unaryOpPerfInfo and binaryOpPerfInfo (lib/popops/popopsCycleEstimators.hpp: simulator averages
// on random inputs). Those give worker cycles per unrolled loop of `unroll` elements with no
// further loop overhead; six workers each taking a sixth of the elements, one issue per worker
// every sixth tile cycle, make that the same number of tile cycles per element per tile:
// cycles / unroll.
struct FunctionCycles {
  double exp = 6.0 / 2;         // EXPONENT float {6 cycles, unroll 2}
  double log = 12.0 / 2;        // LOGARITHM float {12, 2}
  double tanh = 12.0 / 2;       // TANH float {12, 2}
  double sigmoid = 12.0 / 2;    // SIGMOID float {12, 2}
  double sqrt = 10.0 / 2;       // SQRT float {10, 2}
  double rsqrt = 8.0 / 2;       // RSQRT float {8, 2}
  double inverse = 6.0 / 2;     // INVERSE float {6, 2}
  double erf = 41;              // ERF float {41, 1}
  double gelu_erf = 22;         // GELU_ERF float {22, 1}
  double swish = 11.0 / 2;      // SWISH float {11, 2}: popnn's getNonLinearityOpCycles, not popops'
  double divide = 10.0 / 2;     // DIVIDE float {10, 2}
  double power = 312;           // POWER float {312, 1}
  double remainder = 133.0 / 2; // REMAINDER float {133, 2} (C's fmod)
  double compare = 14.0 / 4;    // EQUAL, LESS_THAN, ... float {14, 4} (a bool result per element)
};

// Parameters of the cycle estimate. Each cites its source; docs/cycle_model.md gives the
// formulas, and docs/cycle_model_sources.md the evidence. Cycles are tile clock cycles.
struct CycleModel {
  // Launching a vertex: the supervisor's start of its workers (popops basicOpSupervisorOverhead,
  // 11) plus a worker prologue of 17 cycles on each of the 6 workers (popops UnaryOp1D
  // estimator); poplibs' fixed vertex costs run from about 100 to 350 cycles.
  double vertex_overhead_cycles = 11 + 6 * 17;
  // Charged once per vertex to the whole step, not to its tile: every vertex adds descriptors
  // and exchange code that the IPU runs and stores each step. Without it a plan would spread a
  // few hundred elements over a thousand tiles to save a handful of cycles. An ipucc
  // assumption: poplibs charges no per-region exchange cost.
  double vertex_spread_cycles = 10;
  // fp32 multiply-accumulates per tile per cycle on the AMP unit: the GC200's 62.5 TFLOPS fp32
  // ÷ (2 × 1472 tiles × 1.33 GHz) = 16 (mk1: 31.1 TFLOPS ÷ (2 × 1216 × 1.6 GHz) = 8).
  double macs_per_cycle = 16;
  // fp32 elementwise results per tile per cycle: popops' float BinaryOp1D loop issues a 2-float
  // vector every 3 worker cycles on each of 6 barrel-scheduled workers, ≈ 0.67 per tile cycle.
  double vector_flops_per_cycle = 2.0 / 3.0;
  // fp16 multiply-accumulates per tile per cycle on the AMP unit with fp32 partial sums: the
  // GC200's 250 TFLOPS fp16.32 ÷ (2 × 1472 tiles × 1.33 GHz) = 63.8 ≈ 64, four times the fp32
  // rate (mk1: 124.5 TFLOPS ÷ (2 × 1216 × 1.6 GHz) = 32).
  double half_macs_per_cycle = 64;
  // What an AMP convolution or MatMul vertex spends on each run of contiguous outputs a worker
  // takes (a row of an nx1 vertex's worklist, a 1x1 vertex's share of the field) beyond the
  // outputs themselves, in outputs at the peak rate. poplibs' getConvPartialnx1WorkerCycles
  // (lib/poplin/PerformanceEstimation.hpp) charges a worker 3 + 45 + 8 (n − 3) cycles for a run
  // of n fp32 outputs, which the peak does in 8 n: 24 more, 3 outputs' worth. The 1x1 vertex
  // (getConvPartial1x1SupervisorInnerLoopCycleEstimateHalfFloat) is within a cycle of it.
  double amp_run_overhead_outputs = 24.0 / 8;
  // The same for fp16 activations: 3 + 34 + 4 (n − 3) worker cycles against 4 n, 25 more.
  double half_amp_run_overhead_outputs = 25.0 / 4;
  // fp16 elementwise results per tile per cycle: popops' half BinaryOp1D loop issues a 4-half
  // vector (f16v4) where the float one issues a 2-float one (f32v2), every 3 worker cycles on
  // each of 6 workers, ≈ 1.33 per tile cycle.
  double half_vector_flops_per_cycle = 4.0 / 3.0;
  // Tile cycles per fp16 element of popops' channel ops, a per-channel operand broadcast over
  // [.., C] blocks with C a multiple of 4 (BroadcastVectorInner; popops binaryOpBroadcastInnerVector
  // picks them for half only, float stays BinaryOp1D). The inner loops of popopsCycleEstimators'
  // exact worker counts: vectorInnerAddCoreCycles_half (two f16v4 vectors per 2 cycles),
  // vectorInnerMulCoreCycles_half's pipelined path (one f16v4 per cycle) and its in-place path (one
  // per 2 cycles). Batch norm's whitening and scaling are these ops (poplin normWhiten, normalise,
  // normStatisticsGradients).
  double half_channel_add_cycles_per_element = 2.0 / 8;
  double half_channel_mul_cycles_per_element = 1.0 / 4;
  double half_channel_mul_in_place_cycles_per_element = 2.0 / 4;
  // The adds that sum partials (a MatMul's or a convolution's split over K or samples, a norm's
  // shares) run at the fp32 rate in any precision: AMP keeps partial sums fp32 (poplin's
  // partialsType float), so at_half_rates leaves this at vector_flops_per_cycle's fp32 value.
  double partial_sum_flops_per_cycle = 2.0 / 3.0;
  FunctionCycles functions;
  // Bytes a tile receives per cycle over the exchange: the GC200's 8 TB/s IPU-Exchange ÷
  // (1472 tiles × 1.33 GHz) ≈ 4 (derived; poplibs' Mk1-era default was also 4).
  double exchange_bytes_per_cycle = 4;
  // Two tiles share an exchange bus, and data both receive arrives at twice the rate (poplibs'
  // ExchangeEstimator: getTilesPerSharedExchangeBus() == 2).
  uint32_t tiles_per_exchange_bus = 2;
  // Global sync: ceil(15 ns × clock × hops × 2) with hops = 1 + ⌊N/4⌋ for N IPUs (poplibs'
  // setGlobalSyncLatency for its IPU model: one hop within a card plus one per card pair).
  double sync_ns_per_hop = 15;
  double host_bytes_per_cycle = 12; // 16 GB/s host link: an assumption under PCIe Gen4 x16's 31.5 GB/s
  // One IPU-Link direction: 128 Gbit/s at 85 % efficiency (poplibs' multi-IPU model), 13.6 GB/s
  // = 10.2 bytes per 1.33 GHz cycle.
  double ipu_link_bytes_per_cycle = 0.85 * 128e9 / 8 / 1.33e9;
  // One GW-Link direction: an IPU-M2000's IPU-Gateway has 2 GW-Link ports of 100 GbE to M2000s of
  // other POD64 racks (Graphcore's IPU-POD build and test guides), taken at the IPU-Link's 85 %
  // efficiency (an assumption: none is published for GW-Links), 10.6 GB/s = 8.0 bytes per cycle.
  double gw_link_bytes_per_cycle = 0.85 * 100e9 / 8 / 1.33e9;
  uint32_t gw_links_per_m2000 = 2;
  uint64_t vertex_state_bytes = 32;   // tile memory per vertex descriptor (an assumption: Poplar's is closed)
  uint64_t codelet_code_bytes = 1024; // tile memory per distinct codelet used on a tile (an assumption)
};
// The share of a tile one convolution's or MatMul's working set may take when the planner splits
// it: poplibs' availableMemoryProportion, 0.6 by default in poplin's ConvOptions and
// MatMulOptions (and popops' SliceOptions; docs/cycle_model_sources.md).
inline constexpr double kDefaultAvailableMemoryProportion = 0.6;

struct TargetSpec {
  std::string arch; // the preset ("mk2", "mk1"), also when tiles or memory are overridden
  uint32_t num_ipus = 1;
  uint32_t tiles_per_ipu = 1472;
  uint64_t bytes_per_tile = 638976;
  uint32_t worker_threads_per_tile = 6;
  double clock_hz = 1.33e9;
  // Graphcore's systems (docs/cycle_model_sources.md): an IPU-M2000 holds 4 IPUs; IPU-Links join
  // the M2000s of a POD (POD16: 4, POD64: 16, a 2D torus), and GW-Links (100 GbE) join POD64
  // racks (POD128, POD256, ...). A POD64 is the largest set of IPUs one IPU-Link ring reaches.
  uint32_t ipus_per_m2000 = 4;
  uint32_t ipus_per_pod = 64;
  CycleModel cycles;
  // What the user's --available-memory-proportion sets, in (0, 1]: a planning option, as
  // poplibs' is, not a property of the IPU.
  double available_memory_proportion = kDefaultAvailableMemoryProportion;

  uint32_t total_tiles() const { return num_ipus * tiles_per_ipu; }
  format::Target to_format() const;
};

// The model of a program whose float tensors are fp16 (compiler::CompileOptions::precision):
// macs_per_cycle and vector_flops_per_cycle become the fp16 rates. Transcendental functions keep
// their float cycles (popops' half estimates are within a cycle of them, and they are few).
CycleModel at_half_rates(CycleModel model);

// Tile cycles of an AMP vertex's `macs` multiply-accumulates producing `outputs` output positions
// (each over all its channels and kernel taps) in `runs` contiguous runs: the workers share the
// outputs and the runs, and the slowest worker's ⌈outputs/W⌉ outputs and ⌈runs/W⌉ runs
// (CycleModel::amp_run_overhead_outputs each) set the time, W workers at a time. A run of 7
// fp16 outputs is 53 % of the peak, one of 56 is 90 %; so a plan that gives each vertex a short
// field pays for it, as poplin's planner charges it.
double amp_cycles(const TargetSpec& target, double macs, double outputs, double runs);

// Cycles of one BSP sync across `ipus` IPUs (CycleModel::sync_ns_per_hop): 40 on mk2 for 1 to 3
// IPUs, 80 for 4 to 7, 200 for 16.
double sync_cycles(const TargetSpec& target, uint32_t ipus);

// Cycles for a tile to receive `bytes` over the exchange, of which `shared` its bus partner
// receives too (arriving at twice the rate).
double exchange_cycles(const CycleModel& model, double bytes, double shared);

// The gradient all-reduce of one weight update across `replicas` replicas of `ipus_per_replica`
// IPUs each (pipeline stages), each replica holding `bytes`; replicas fill PODs (ipus_per_pod) in
// order. Within a POD of r replicas it is a ring over the IPU-Links: a sync across the POD's
// IPUs + 2(r−1)/r × bytes at ipu_link_bytes_per_cycle (a reduce-scatter then an all-gather,
// (r−1)/r each). Across G PODs it is hierarchical: reduce-scatter within each POD, a ring
// all-reduce of each POD's reduced shards across the PODs over the GW-Links, all-gather within
// each POD. The cross-POD ring moves 2(G−1)/G of the bytes out of each POD, spread over its
// m = ⌈r·s/ipus_per_m2000⌉ M2000s' gateways: 2(G−1)/G × bytes/m per M2000 at gw_links_per_m2000 ×
// gw_link_bytes_per_cycle, and each of its 2(G−1) steps ends in a sync across all the job's IPUs
// (sync_cycles; no GW-Link latency is published).
struct AllReduceCost {
  uint32_t replicas_per_pod = 1;
  uint32_t pods = 1;
  double ipu_link_cycles = 0;
  double gw_link_cycles = 0;
  double total() const { return ipu_link_cycles + gw_link_cycles; }
};
AllReduceCost all_reduce_cost(const TargetSpec& target, double bytes, uint32_t replicas,
                              uint32_t ipus_per_replica);

// "mk2" (GC200) or "mk1" (GC2); InvalidArgument names the accepted values otherwise.
StatusOr<TargetSpec> target_preset(const std::string& arch);

// The target of an executable compiled for `compiled` with `replicas` replicas, as the lowering
// planned it: the preset's rates with the executable's tiles, memory and clock, and the IPUs of
// one replica. InvalidArgument for an unknown arch or IPUs that the replicas do not divide.
StatusOr<TargetSpec> target_of(const format::Target& compiled, uint32_t replicas);

// Applies explicit overrides (for small test targets); validates ranges. The arch keeps the
// preset's name: its cycle parameters still apply.
Status override_target(TargetSpec& target, std::optional<uint32_t> tiles_per_ipu,
                       std::optional<uint64_t> bytes_per_tile);

} // namespace ipu::target
