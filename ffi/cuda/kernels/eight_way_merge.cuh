// eight_way_merge.cuh (level: kernels): the eight-way pass of the CUDA mergesort: every eight
// consecutive sorted runs of width w of every row merged into one run of 8 w, reading and writing
// the keys (and the carried payload) once for three merge levels. Two launches, on the shared core:
//   1. eight_way_partition_kernel: for every tile boundary d of every group of eight runs, eight
//      lanes find the eight runs' counts among the first d outputs from the run lengths alone
//      (no samples, no earlier launch; k_way_co_rank_lanes, merge_path.h's k_way_split a lane a
//      run): eight int32 a boundary in the workspace;
//   2. eight_way_merge_kernel: one block per tile copies its eight exact ranges into shared
//      memory (tile_io.cuh: packed; 4-byte keys alone, which the ragged merge and the sweep run,
//      in 16-byte chunks), merges them pairwise in place (each level's outputs padded to whole threads:
//      four groups, then two), then the last two into registers (block_merge.cuh
//      merge_full_sorted every time), and stores through shared memory like the quad pass
//      (block_merge.cuh store_tile_outputs).
// Ties go to the earlier run at every level: stable. A tile holds (threads - 3) x items outputs
// (three pads at the first level). tuning/sort.h says which passes are eight-way (sort_pass_factor)
// and with which shape (eight_way_shape). Sort passes: runs sorted by the block sort or an
// earlier pass, every key valid, payload none or a value. Rows flagged sorted (layout.row_done)
// have empty groups. The tile merge (eight_way_merge_tile) also serves the ragged merge
// (ragged_merge.cuh).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "../block/block_merge.cuh"
#include "../block/grid_launch.cuh"
#include "../block/tile_io.cuh"
#include "jax_mergepath/batch_geometry.h"
#include "jax_mergepath/call_args.h"
#include "jax_mergepath/merge_path.h"
#include "jax_mergepath/tuning/merge.h"
#include "jax_mergepath/tuning/sort.h"
#include "merge_kernels.cuh"

namespace jax_mergepath {

static_assert(kEightWayPartitionThreads % 32 == 0 && 32 % kEightWayRuns == 0, "whole groups");

// Run r (0..7) of a group with `total` elements: its length.
__device__ __forceinline__ int64_t eight_way_run_length(int64_t total, int64_t width, int r) {
  return clamp_length(total - r * width, width);
}

// The sum of v over the `width` lanes of this lane's group (a power of two).
template <typename T>
__device__ __forceinline__ T group_sum(T v, int width) {
  for (int step = 1; step < width; step <<= 1) v += __shfl_xor_sync(0xffffffffu, v, step, width);
  return v;
}

// merge_path.h's k_way_split with a lane a run, from the run lengths alone: K lanes of a warp
// (a power of two, at most 32) find the counts of their boundary's K sorted runs (lane r's of
// length len) among the first d outputs of their stable merge, lane r holding run r's bracket,
// from [max(0, d - the other runs' lengths), min(len, d)], and its middle. The same steps and
// decisions as k_way_split, its sums gathered by shuffles: a step costs O(K) a lane instead of
// O(K^2) a thread, and a boundary's K loads come from K lanes (one thread a boundary took 147 us
// for the eight-way split of 2^27 int32 keys, eight lanes 64-106 us; docs/performance.md).
// Every lane of the warp calls it (shuffles); a lane whose group has no boundary passes
// d = len = 0. Returns run r's count. raw_of(i): run r's element i as stored; order(raw): its
// directed order key.
template <int K, typename RawOf, typename Order>
__device__ __forceinline__ int32_t k_way_co_rank_lanes(int32_t d, int32_t len, const RawOf& raw_of,
                                                       const Order& order) {
  static_assert(K >= 2 && K <= 32 && (K & (K - 1)) == 0, "a power-of-two group of lanes");
  using Key = decltype(order(raw_of(0)));
  const int r = static_cast<int>(threadIdx.x) & (K - 1);
  const int32_t others = group_sum(len, K) - len;
  int32_t lo = d > others ? d - others : 0, hi = len < d ? len : d;
  int32_t mid = (lo + hi) >> 1;
  Key middle = lo < hi ? order(raw_of(mid)) : Key(0);
  for (;;) {
    const bool open = lo < hi;
    if (!__any_sync(0xffffffffu, open)) return lo;  // (groups done early idle in the warp)
    // below: the lo's plus through_mid of this run and of every middle before it; above: the
    // lo's and every open bracket's mid - lo, plus past_mid of every middle before it.
    const int32_t through_mid = open ? mid + 1 - lo : 0, past_mid = open ? hi - mid : 0;
    const int32_t los = group_sum(lo, K);
    int32_t below = los + through_mid, above = los + group_sum(open ? mid - lo : 0, K);
#pragma unroll
    for (int t = 0; t < K; ++t) {
      const Key other = __shfl_sync(0xffffffffu, middle, t, K);
      const int32_t other_through = __shfl_sync(0xffffffffu, through_mid, t, K);
      const int32_t other_past = __shfl_sync(0xffffffffu, past_mid, t, K);
      // Run t's middle before this one's in the stable order (key, then run; never itself).
      const bool t_first = t < r ? !(middle < other) : (t > r && other < middle);
      below += t_first ? other_through : 0;
      above += t_first ? other_past : 0;
    }
    const bool out = open && below > d;
    const bool in = open && !out && above < d;
    hi = out ? mid : hi;
    lo = in ? mid + 1 : lo;
    mid = (lo + hi) >> 1;  // unchanged where the bracket is
    if ((out || in) && lo < hi) middle = order(raw_of(mid));
  }
}

// kEightWayRuns lanes per tile boundary of every group. groups: the pass's multiway_layout; map:
// its tile map; width: w. splits[8 id + r]: run r's count among the group's first d outputs.
template <typename Traits>
__global__ void __launch_bounds__(kEightWayPartitionThreads)
    eight_way_partition_kernel(MergeLayout groups, int64_t width, const typename Traits::Bits* x,
                               typename Traits::Bits flip, TileMap map, int32_t* splits) {
  grid_prologue();
  using Bits = typename Traits::Bits;
  const int64_t lane_id = int64_t{blockIdx.x} * kEightWayPartitionThreads + threadIdx.x;
  const int64_t id = lane_id / kEightWayRuns;
  const int r = static_cast<int>(lane_id % kEightWayRuns);
  const bool valid = id < map.boundaries();
  const int64_t group = valid ? id / (map.tiles_per_merge + 1) : 0;
  const int64_t t = valid ? id - group * (map.tiles_per_merge + 1) : 0;
  const RowGeometry g = row_geometry(groups, group);
  // (a presorted row's groups: d = len = 0, no search; their blocks return at once)
  const int64_t total = valid && !row_done_of_merge(groups, group) ? g.m + g.n : 0;
  // (int32 counts: a row is under 2^31 keys, so is its group)
  const int32_t d = static_cast<int32_t>(tile_diagonal(t, map.tile, total));
  const int32_t len = static_cast<int32_t>(eight_way_run_length(total, width, r));
  const Bits* run = x + g.a_offset + r * width;
  const int32_t count = k_way_co_rank_lanes<kEightWayRuns>(
      d, len, [&](int32_t i) { return __ldg(run + i); },
      [&](Bits raw) { return directed_key<Traits>(raw, flip); });
  if (valid) splits[kEightWayRuns * id + r] = count;
}

// Shared memory of an eight-way block: `stage` holds the eight ranges as loaded, then each
// level's outputs in place (padded to whole threads: up to threads x items slots), then the
// warps' output transposes; `vals` the values as loaded (at their keys' slots); `src` each
// level output's value slot. Slack: the chunked loads' misalignment, and the merges' reads one
// past a range's end.
template <PayloadKind kPayload, typename Bits, typename Value, int kThreads, int kItems>
struct EightWayShared {
  static constexpr PayloadKind kPayloadKind = kPayload;
  static constexpr bool kValues = kPayload == PayloadKind::kValue;
  static constexpr int kTile = (kThreads - 3) * kItems;
  static constexpr int kSlots = kThreads * kItems;
  // The loads' slots (tile_io.cuh: a chunked range's slack), then the level outputs' (padded),
  // and the merges' reads one past a range's end.
  static constexpr int kLoadSlots = kTile + kEightWayRuns * kChunkedSlack<Bits>;
  static constexpr int kKeySlots = std::max(kLoadSlots, kSlots) + 2;
  static constexpr int kElemBytes = std::max(int(sizeof(Bits)), kValues ? int(sizeof(Value)) : 0);
  static constexpr int kRegionBytes = 32 * kItems * kElemBytes;  // one warp's transpose
  static constexpr int kStageBytes = std::max(kKeySlots * int(sizeof(Bits)), kSlots * kElemBytes);
  alignas(16) unsigned char stage[(kStageBytes + 15) / 16 * 16];
  alignas(16) Value vals[kValues ? kTile : 1];
  uint16_t src[kValues ? kSlots : 1];
  __device__ Bits* keys() { return reinterpret_cast<Bits*>(stage); }
};

// One merge level in shared memory: kGroups merges of range pairs (2 j, 2 j + 1) of loc / count,
// group j's outputs at the padded offset of the groups before it; this thread's outputs from
// p0 (items a thread) into key_reg / src_reg (src: the value slot, through `src` after the first
// level: kFirst, the slots as loaded). loc / count become the groups' outputs.
template <int kGroups, bool kFirst, int kItems, typename Traits, typename Shared>
__device__ __forceinline__ void eight_way_level(Shared& shared, bool nan_free, int p0,
                                                typename Traits::Bits flip,
                                                int (&loc)[kEightWayRuns],
                                                int (&count)[kEightWayRuns],
                                                typename Traits::Bits (&key_reg)[kItems],
                                                int (&src_reg)[kItems]) {
  using Bits = typename Traits::Bits;
  Bits* keys = shared.keys();
  int off[kGroups], n[kGroups];
  int at = 0;
#pragma unroll
  for (int j = 0; j < kGroups; ++j) {
    off[j] = at;
    n[j] = count[2 * j] + count[2 * j + 1];
    at += (n[j] + kItems - 1) / kItems * kItems;
  }
  // This thread's group: the last whose outputs start at or before p0.
  int l1 = loc[0], n1 = count[0], l2 = loc[1], n2 = count[1], diag = p0, group_n = n[0];
#pragma unroll
  for (int j = 1; j < kGroups; ++j) {
    if (p0 >= off[j]) {
      l1 = loc[2 * j];
      n1 = count[2 * j];
      l2 = loc[2 * j + 1];
      n2 = count[2 * j + 1];
      diag = p0 - off[j];
      group_n = n[j];
    }
  }
  const bool active = diag < group_n;
  if (active) {
    merge_full_sorted<kItems, Traits>(nan_free, keys, l1, n1, l2, n2, diag, flip,
                                      [&](int c, Bits raw, int pos) {
                                        key_reg[c] = raw;
                                        if constexpr (Shared::kValues) {
                                          src_reg[c] = kFirst ? pos
                                                       : diag + c < group_n ? int{shared.src[pos]}
                                                                            : 0;
                                        }
                                      });
  }
  __syncthreads();  // every read of this level's inputs is done: its outputs go in place
  if (active) {
#pragma unroll
    for (int c = 0; c < kItems; ++c) {
      keys[p0 + c] = key_reg[c];
      if constexpr (Shared::kValues) shared.src[p0 + c] = static_cast<uint16_t>(src_reg[c]);
    }
  }
  __syncthreads();
#pragma unroll
  for (int j = 0; j < kGroups; ++j) {
    loc[j] = off[j];
    count[j] = n[j];
  }
}

// One block's tile of an eight-way merge: the eight ranges [start[r], start[r] + count[r]) of
// `in` (and `vin`, their values), sorted, merged stably (ties: the lower range first) into the
// call's outputs from element out_at (call.out, call.out_payload). Every thread of the block
// calls it; the counts sum to `total`, at most Policy::kTile.
template <typename Traits, PayloadKind kPayload, typename Value, typename Policy>
__device__ __forceinline__ void eight_way_merge_tile(const typename Traits::Bits* in,
                                                     const Value* vin,
                                                     const int (&start)[kEightWayRuns],
                                                     int (&count)[kEightWayRuns], int total,
                                                     typename Traits::Bits flip,
                                                     const MergeCall& call, int64_t out_at) {
  using Bits = typename Traits::Bits;
  constexpr int kThreads = Policy::kThreads, kItems = Policy::kItems;
  constexpr bool kValues = kPayload == PayloadKind::kValue;
  static_assert(kPayload == PayloadKind::kNone || kValues, "eight-way passes carry values or none");
  using Shared = EightWayShared<kPayload, Bits, Value, kThreads, kItems>;
  static_assert(Policy::kTile <= Shared::kTile, "a tile's padded outputs fit the threads");
  static_assert(Shared::kSlots <= 65536, "value slots fit uint16_t");
  __shared__ Shared shared;
  Bits* keys = shared.keys();
  int loc[kEightWayRuns];
  if constexpr (!kValues && sizeof(Bits) == 4) {
    load_ranges_chunked<kThreads, std::max(Shared::kLoadSlots, Shared::kSlots), kEightWayRuns>(
        in, start, count, keys, loc);
  } else {
    load_ranges_packed<kThreads, kItems, kEightWayRuns, kValues>(in, vin, start, count, keys,
                                                                 shared.vals, loc);
  }
  const int p0 = static_cast<int>(threadIdx.x) * kItems;
  __syncthreads();
  const bool nan_free = sorted_ranges_nan_free<Traits>(keys, loc, count);  // (every level)

  Bits key_reg[kItems];
  int src_reg[kItems];
  eight_way_level<4, true, kItems, Traits>(shared, nan_free, p0, flip, loc, count, key_reg,
                                           src_reg);
  eight_way_level<2, false, kItems, Traits>(shared, nan_free, p0, flip, loc, count, key_reg,
                                            src_reg);
  // Last level: the two halves, output p0 + c of the tile.
  merge_last_level_and_store<kItems, Traits>(shared, nan_free, loc[0], count[0], loc[1],
                                             count[1], p0, total, flip, call, out_at, key_reg,
                                             src_reg);
}

// call.layout: the pass's multiway_layout; splits: eight_way_partition_kernel's.
template <typename Traits, PayloadKind kPayload, typename Value, typename Policy>
__global__ void __launch_bounds__(Policy::kThreads, Policy::kMinBlocks)
    eight_way_merge_kernel(MergeCall call, const int32_t* splits, int64_t width,
                           typename Traits::Bits flip, TileMap map) {
  grid_prologue();
  using Bits = typename Traits::Bits;
  constexpr bool kValues = kPayload == PayloadKind::kValue;
  const MergeLayout& groups = call.layout;
  if (row_done_of_tile(groups, blockIdx.x, map)) return;
  const PassTile tile = pass_tile(groups, map);
  const RowGeometry& g = tile.g;
  if (tile.d0 == tile.d1) return;  // a spare tile of a short group
  const int32_t* s0 = splits + kEightWayRuns * (tile.merge * (map.tiles_per_merge + 1) + tile.t);
  int start[kEightWayRuns], count[kEightWayRuns];
#pragma unroll
  for (int r = 0; r < kEightWayRuns; ++r) {
    // In the group (a row is under 2^31 keys; an empty run past a short group's end may wrap
    // here, and is never read).
    start[r] = static_cast<int>(r * width) + s0[r];
    count[r] = s0[kEightWayRuns + r] - s0[r];
  }
  const Bits* in = static_cast<const Bits*>(call.a) + g.a_offset;
  const Value* vin = kValues ? static_cast<const Value*>(call.a_values) + g.a_offset : nullptr;
  eight_way_merge_tile<Traits, kPayload, Value, Policy>(
      in, vin, start, count, static_cast<int>(tile.d1 - tile.d0), flip, call,
      g.out_offset + tile.d0);
}

// Enqueues the partition launch of an eight-way pass on tile `tile` (`pairs`: the two-way pass
// of width w).
template <typename Traits>
cudaError_t launch_eight_way_partition(const MergeCall& pairs, int64_t tile, int32_t* workspace,
                                       cudaStream_t stream) {
  const MergeCall call = multiway_call(pairs, kEightWayRuns);
  const TileMap map = tile_map(call.layout, tile);
  const auto flip = order_mask<Traits>(call.key_type, call.descending);
  const auto* keys = static_cast<const typename Traits::Bits*>(call.a);
  const unsigned blocks = static_cast<unsigned>(
      ceil_div(kEightWayRuns * map.boundaries(), kEightWayPartitionThreads));
  return launch_kernel(eight_way_partition_kernel<Traits>, blocks, kEightWayPartitionThreads,
                       stream, call.layout, pairs.layout.n, keys, flip, map, workspace);
}

// Enqueues the eight-way pass that merges the runs of width pairs.layout.n eight at a time
// (`pairs`: the two-way sort pass of that width, sort_pass) into the call's outputs; workspace:
// eight_way_workspace_elements (tuning/workspace.h).
template <typename Traits, PayloadKind kPayload, typename Value,
          typename Policy = EightWayPolicy<int(sizeof(typename Traits::Bits)),
                                           payload_bytes(kPayload, int(sizeof(Value)))>>
cudaError_t launch_eight_way_pass(const MergeCall& pairs, int32_t* workspace,
                                  cudaStream_t stream) {
  const MergeCall call = multiway_call(pairs, kEightWayRuns);
  if (call.layout.merges() == 0 || call.layout.merge_span() == 0) return cudaSuccess;
  const TileMap map = tile_map(call.layout, Policy::kTile);
  if (map.tiles() >= (int64_t{1} << 31) || kEightWayRuns * map.boundaries() >= (int64_t{1} << 31)) {
    return cudaErrorInvalidConfiguration;
  }
  if (cudaError_t err = launch_eight_way_partition<Traits>(pairs, Policy::kTile, workspace, stream);
      err != cudaSuccess) {
    return err;
  }
  auto* merge = eight_way_merge_kernel<Traits, kPayload, Value, Policy>;
  return launch_kernel(merge, static_cast<unsigned>(map.tiles()), Policy::kThreads, stream, call,
                       workspace, pairs.layout.n,
                       order_mask<Traits>(call.key_type, call.descending), map);
}

}  // namespace jax_mergepath
