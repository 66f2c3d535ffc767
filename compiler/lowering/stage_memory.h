// What each unit of the automatic pipeline split (a layer or node, or a run of them) holds on the
// tiles of its IPU in the measuring compile, where every unit is a stage of its own, sorted by how
// long it lives. lowering::partition_stages combines these over the units of a candidate stage
// (stage_partition.h): what lives all program long or from the forward into the backward pass
// adds up over the units, while each unit's short-lived temporaries and receive buffers peak at
// different moments, of which only the largest counts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "compiler/lowering/lower_context.h"
#include "compiler/target/target.h"
#include "runtime/format/executable.pb.h"

namespace ipu::lowering {

// Per tile of the unit's IPU (index: tile within the IPU), as the memory plan counts them
// (memory_plan.h); together the arrays add up to at least the tile's peak in that plan.
struct UnitMemory {
  // Live the whole program: weights, optimizer state and other resident tensors (not the
  // measuring compile's stash slots and receive buffers: those depend on the split and its
  // schedule, and the partition counts them itself), and the descriptors of its vertices.
  std::vector<uint64_t> resident;
  // Activations live from its forward pass into its backward pass (what its backward pass reads).
  std::vector<uint64_t> carried;
  // Weight gradients live from its backward pass into the update.
  std::vector<uint64_t> held_for_update;
  // The peak over its compute sets of its other live temporaries plus their receive buffers.
  std::vector<uint64_t> transient;
  // The codelets its vertices run (ids), code the tile holds once however many units run them.
  std::vector<std::vector<uint32_t>> codelets;
  // The most bytes one stash slot for one micro-batch of its carried activations puts on a tile:
  // slots are spread over the tiles as add_buffer spreads them (at least 64 elements a tile), so
  // each tensor puts at most max(64, ceil(elements / tiles)) elements on any tile, at the size
  // the executable stores them (2 bytes under fp16).
  uint64_t stash_tile_bytes = 0;
  // The part of stash_tile_bytes that is the model's own inputs and labels: all a stage stashes
  // of its own when it recomputes its forward pass (--recompute), besides what arrives from
  // earlier stages.
  uint64_t input_stash_tile_bytes = 0;
  // The same bound for a gradient accumulator of each of its weights (--gradient-accumulation or
  // --replicas above 1; the measuring compile has none), float32 under every precision.
  uint64_t accumulator_tile_bytes = 0;
  // Activations of earlier units that its backward pass reads. In the measuring compile they
  // arrive by copy; in a stage they are copies (kept, and stashed, besides the producer's own)
  // only when their producer is in an earlier stage, so they are not in `carried`.
  struct Arrival {
    size_t source_unit = 0;
    uint64_t stash_tile_bytes = 0;
    std::vector<std::pair<uint32_t, uint64_t>> tile_bytes; // (tile, bytes) where they are kept
  };
  std::vector<Arrival> arrivals;
};

// One UnitMemory per IPU of a compile that ran each unit as a stage of its own on an IPU of its
// own, with `copies` between them. `order` lists compute sets as the memory plan took them
// (lower_graph's concat_phases), and
// positions from `backward_begin` on are the backward pass and then the update, from
// `update_begin` on the update.
std::vector<UnitMemory> measure_unit_memory(const format::Executable& executable,
                                            const std::vector<uint32_t>& order,
                                            const std::vector<ComputeSetRecord>& records,
                                            const std::vector<StageCopy>& copies, size_t backward_begin,
                                            size_t update_begin, const target::TargetSpec& target);

// The most bytes a tensor of `elements` elements of `element_bytes` each puts on one tile when
// spread over `tiles` tiles as LowerContext::map_linearly spreads it.
uint64_t linear_tile_share(int64_t elements, uint32_t tiles, uint64_t element_bytes);

} // namespace ipu::lowering
