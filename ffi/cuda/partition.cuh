// partition.cuh: the partition pass of the CUDA tiled merge: for every merge of the batch and
// every tile boundary k (batch_geometry.h's tile map), the merge-path split co_rank(k), written
// to the workspace as (tiles + 1) int32 per merge.
//
// Two strategies, by the number of boundaries:
//   * few (<= kWarpSearchMaxBoundaries): one warp per boundary, a 32-ary search (~6 dependent
//     steps for 2^27): latency is what matters when the grid is small.
//   * many: one thread per boundary, merge_path.h's grid_co_rank_search on A's ABSOLUTE
//     power-of-two grid (the CPU's anchor search): the pass is bound by random DRAM reads, and
//     the top levels' A probes are the same few elements for every boundary (L2 hits). (Tried
//     and slower on an H200, NOTES.md: a 4-ary search, and sampled ranks + a window search.)
// For sorted input every strategy gives exactly co_rank's split (merge_path.h), so CPU and GPU
// agree. Unsorted input: every search stays inside [co_rank_lower, co_rank_upper], and the merge
// kernel clamps tile ranges on top (tile_ranges), so nothing reads out of bounds.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "jax_mergepath/batch_geometry.h"
#include "jax_mergepath/merge_args.h"
#include "jax_mergepath/merge_path.h"
#include "jax_mergepath/tuning.h"

namespace jax_mergepath {

// Up to this many tile boundaries, the partition searches with a warp per boundary.
inline constexpr int64_t kWarpSearchMaxBoundaries = 4096;

// co_rank(k) of one merge by a whole warp: a 32-ary search (32 probes a step) for the smallest
// i in [lo, hi) with b_first(i, k - 1 - i), else hi: the same split as co_rank's binary search
// for sorted input. All lanes return it.
template <typename KeyA, typename KeyB>
__device__ int64_t warp_co_rank(int64_t k, int64_t m, int64_t n, int64_t mv, int64_t nv,
                                const KeyA& key_a, const KeyB& key_b) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  int64_t lo = co_rank_lower(k, n);
  int64_t hi = co_rank_upper(k, m);
  while (lo < hi) {
    const int64_t step = (hi - lo + 31) / 32;
    const int64_t probe = lo + lane * step;
    const bool in_range = probe < hi;
    const bool hit = in_range && b_first(probe, k - 1 - probe, mv, nv, key_a, key_b);
    const unsigned hits = __ballot_sync(0xffffffffu, hit);
    const unsigned probed = __ballot_sync(0xffffffffu, in_range);
    if (hits) {
      const int first = __ffs(hits) - 1;
      hi = lo + first * step;
      lo = first > 0 ? lo + (first - 1) * step + 1 : lo;
    } else {
      lo = lo + (31 - __clz(probed)) * step + 1;
    }
  }
  return lo;
}

// One warp (kWarpSearch: warp_co_rank) or one thread (grid_co_rank_search) per tile boundary.
template <typename Traits, bool kWarpSearch>
__global__ void partition_kernel(MergeLayout layout, const typename Traits::Bits* a_all,
                                 const typename Traits::Bits* b_all, typename Traits::Bits flip,
                                 TileMap map, int32_t* splits) {
  using Bits = typename Traits::Bits;
  const int64_t thread = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  const int64_t id = kWarpSearch ? thread >> 5 : thread;
  if (id >= map.boundaries()) return;  // (whole warps exit together)
  const int64_t merge = id / (map.tiles_per_merge + 1);
  const int64_t t = id - merge * (map.tiles_per_merge + 1);
  const RowGeometry g = row_geometry(layout, merge);
  const Bits* a = a_all + g.a_offset;
  const Bits* b = b_all + g.b_offset;
  auto key_a = [&](int64_t i) { return directed_key<Traits>(__ldg(a + i), flip); };
  auto key_b = [&](int64_t j) { return directed_key<Traits>(__ldg(b + j), flip); };
  const int64_t k = tile_diagonal(t, map.tile, g.m + g.n);
  if constexpr (kWarpSearch) {
    const int64_t split = warp_co_rank(k, g.m, g.n, g.mv, g.nv, key_a, key_b);
    if ((threadIdx.x & 31) == 0) splits[id] = static_cast<int32_t>(split);
  } else {
    const int64_t split = grid_co_rank_search(
        co_rank_lower(k, g.n), co_rank_upper(k, g.m), g.m,
        [&](int64_t i) { return b_first(i, k - 1 - i, g.mv, g.nv, key_a, key_b); });
    splits[id] = static_cast<int32_t>(split);
  }
}

// Enqueues the partition pass of a tiled merge: the split of every tile boundary of every merge
// into workspace[0, map.boundaries()).
template <typename Traits>
cudaError_t launch_partition(const MergeCall& call, const TileMap& map, int32_t* workspace,
                             cudaStream_t stream) {
  using Bits = typename Traits::Bits;
  const MergeLayout& layout = call.layout;
  const int64_t boundaries = map.boundaries();
  const Bits* a = static_cast<const Bits*>(call.a);
  const Bits* b = layout.mode == RowMode::kSeparate ? static_cast<const Bits*>(call.b) : a;
  const Bits flip = direction_mask<Traits>(call.descending);
  const bool warp_search = boundaries <= kWarpSearchMaxBoundaries;
  const int64_t per_block = warp_search ? kPartitionThreads / 32 : kPartitionThreads;
  const int64_t blocks = (boundaries + per_block - 1) / per_block;
  if (blocks >= (int64_t{1} << 31)) return cudaErrorInvalidConfiguration;
  const unsigned grid = static_cast<unsigned>(blocks);
  if (warp_search) {
    partition_kernel<Traits, true>
        <<<grid, kPartitionThreads, 0, stream>>>(layout, a, b, flip, map, workspace);
  } else {
    partition_kernel<Traits, false>
        <<<grid, kPartitionThreads, 0, stream>>>(layout, a, b, flip, map, workspace);
  }
  return cudaGetLastError();
}

}  // namespace jax_mergepath
