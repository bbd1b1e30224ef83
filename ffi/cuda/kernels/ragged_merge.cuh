// ragged_merge.cuh (level: kernels): the merge of up to eight sorted runs of any lengths a row
// (call_args.h RaggedMergeCall: a sharded sort's received pieces), by one eight-way level: two
// launches on the eight-way pass's core (eight_way_merge.cuh):
//   1. ragged_partition_kernel: for every tile boundary d of every row, eight lanes find the
//      runs' counts among the first d outputs from their lengths (k_way_co_rank_lanes; runs past
//      call.runs are empty, call_args.h ragged_run): eight int32 a boundary in the workspace;
//   2. ragged_merge_kernel: one block a tile merges its eight ranges (eight_way_merge_tile) into
//      the row's outputs.
// Ties go to the earlier run: stable. Tiles cover out_length outputs a row; a row whose lengths
// sum to less leaves its tail unwritten (its tiles there have no ranges). Runs are sorted and
// disjoint (call_args.h), so a row's lengths sum to at most its span, under 2^31.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "eight_way_merge.cuh"
#include "jax_mergepath/call_args.h"

namespace jax_mergepath {

// kEightWayRuns lanes a tile boundary of every row (tiles_per_row + 1 boundaries a row).
template <typename Traits>
__global__ void __launch_bounds__(kEightWayPartitionThreads)
    ragged_partition_kernel(RaggedMergeCall call, typename Traits::Bits flip, int64_t tile,
                            int64_t tiles_per_row, int32_t* splits) {
  grid_prologue();
  using Bits = typename Traits::Bits;
  const int64_t lane_id = int64_t{blockIdx.x} * kEightWayPartitionThreads + threadIdx.x;
  const int64_t id = lane_id / kEightWayRuns;
  const int r = static_cast<int>(lane_id % kEightWayRuns);
  const bool valid = id < call.rows * (tiles_per_row + 1);
  const int64_t row = valid ? id / (tiles_per_row + 1) : 0;
  const int64_t t = valid ? id - row * (tiles_per_row + 1) : 0;
  const RaggedRun run_r = valid ? ragged_run(call, row, r) : RaggedRun{0, 0};
  // (int32: a row's span is under 2^31, checked at launch, so is a run; their sum is summed in
  // 64 bits)
  const auto len = static_cast<int32_t>(run_r.length);
  const int64_t sum = group_sum(int64_t{len}, kEightWayRuns);
  const int64_t outputs = sum < call.out_length ? sum : call.out_length;
  const int32_t d = static_cast<int32_t>(tile_diagonal(t, tile, outputs));
  const Bits* run = static_cast<const Bits*>(call.x) + row * call.span + run_r.start;
  const int32_t count = k_way_co_rank_lanes<kEightWayRuns>(
      d, len, [&](int32_t i) { return __ldg(run + i); },
      [&](Bits raw) { return directed_key<Traits>(raw, flip); });
  if (valid) splits[kEightWayRuns * id + r] = count;
}

// One block a tile (tiles_per_row a row); splits: ragged_partition_kernel's; store: the call's
// outputs as a MergeCall (out, out_payload).
template <typename Traits, PayloadKind kPayload, typename Value, typename Policy>
__global__ void __launch_bounds__(Policy::kThreads, Policy::kMinBlocks)
    ragged_merge_kernel(RaggedMergeCall call, MergeCall store, const int32_t* splits,
                        typename Traits::Bits flip, int64_t tiles_per_row) {
  grid_prologue();
  using Bits = typename Traits::Bits;
  constexpr bool kValues = kPayload == PayloadKind::kValue;
  // 32-bit division: tiles < 2^31 (checked at launch). The tile's first boundary is
  // row (tiles_per_row + 1) + t, t = blockIdx.x - row tiles_per_row.
  const uint32_t row = blockIdx.x / static_cast<uint32_t>(tiles_per_row);
  const int32_t* s0 = splits + kEightWayRuns * (int64_t{blockIdx.x} + row);
  int start[kEightWayRuns], count[kEightWayRuns];
  int64_t d0 = 0;
  int total = 0;
#pragma unroll
  for (int r = 0; r < kEightWayRuns; ++r) {
    start[r] = static_cast<int>(ragged_run(call, row, r).start) + s0[r];
    count[r] = s0[kEightWayRuns + r] - s0[r];
    d0 += s0[r];
    total += count[r];
  }
  if (total == 0) return;  // past a short row's outputs (or an empty tile)
  const int64_t base = int64_t{row} * call.span;
  const Bits* in = static_cast<const Bits*>(call.x) + base;
  const Value* vin = kValues ? static_cast<const Value*>(call.values) + base : nullptr;
  eight_way_merge_tile<Traits, kPayload, Value, Policy>(in, vin, start, count, total, flip, store,
                                                        int64_t{row} * call.out_length + d0);
}

// Enqueues the ragged merge (module comment); workspace: ragged_merge_workspace_elements
// (tuning/workspace.h).
template <typename Traits, PayloadKind kPayload, typename Value,
          typename Policy = RaggedMergePolicy<int(sizeof(typename Traits::Bits)),
                                              payload_bytes(kPayload, int(sizeof(Value)))>>
cudaError_t launch_ragged_merge(const RaggedMergeCall& call, int32_t* workspace,
                                cudaStream_t stream) {
  if (call.rows == 0 || call.out_length == 0) return cudaSuccess;
  if (call.runs < 1 || call.runs > kRaggedRuns || call.span >= (int64_t{1} << 31) ||
      call.out_length >= (int64_t{1} << 31)) {
    return cudaErrorInvalidValue;
  }
  const int64_t tiles_per_row = ceil_div(call.out_length, Policy::kTile);
  const int64_t boundaries = call.rows * (tiles_per_row + 1);
  if (call.rows * tiles_per_row >= (int64_t{1} << 31) ||
      kEightWayRuns * boundaries >= (int64_t{1} << 31)) {
    return cudaErrorInvalidConfiguration;
  }
  const auto flip = order_mask<Traits>(call.key_type, call.descending);
  const unsigned partition_blocks =
      static_cast<unsigned>(ceil_div(kEightWayRuns * boundaries, kEightWayPartitionThreads));
  if (cudaError_t err = launch_kernel(ragged_partition_kernel<Traits>, partition_blocks,
                                      kEightWayPartitionThreads, stream, call, flip,
                                      Policy::kTile, tiles_per_row, workspace);
      err != cudaSuccess) {
    return err;
  }
  MergeCall store{};
  store.out = call.out;
  store.out_payload = call.out_values;
  auto* merge = ragged_merge_kernel<Traits, kPayload, Value, Policy>;
  return launch_kernel(merge, static_cast<unsigned>(call.rows * tiles_per_row), Policy::kThreads,
                       stream, call, store, workspace, flip, tiles_per_row);
}

// The call's values (none, 4 or 8 bytes) -> launch_ragged_merge's template (values move as raw
// bits): per_traits.h's ragged merge launcher, instantiated in ffi/cuda/instances/sort_*.cu.
template <typename Traits>
cudaError_t ragged_merge_for_traits(const RaggedMergeCall& call, int32_t* workspace,
                                    cudaStream_t stream) {
  switch (call.value_bytes) {
    case 0: return launch_ragged_merge<Traits, PayloadKind::kNone, uint8_t>(call, workspace, stream);
    case 4:
      return launch_ragged_merge<Traits, PayloadKind::kValue, uint32_t>(call, workspace, stream);
    case 8:
      return launch_ragged_merge<Traits, PayloadKind::kValue, uint64_t>(call, workspace, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace jax_mergepath
