// partition.cuh (level: kernels): the partition pass of the CUDA tiled merge: for every merge of
// the batch and every tile boundary k (batch_geometry.h's tile map), the merge-path split
// co_rank(k), written to the workspace as (tiles + 1) int32 per merge.
//
// Two strategies, by the number of boundaries (tuning/merge.h partition_boundaries_per_block), with
// the same split for any input (the warp replays the thread's descent):
//   * few (<= kWarpSearchMaxBoundaries): one warp per boundary, five levels of the descent a step
//     (~6 dependent steps for 2^27): latency is what matters when the grid is small.
//   * many: one thread per boundary, merge_path.h's grid_co_rank_search on A's ABSOLUTE
//     power-of-two grid (the CPU's anchor search): the pass is bound by random DRAM reads, and
//     the top levels' A probes are the same few elements for every boundary (L2 hits). (Tried
//     and slower on an H200, docs/performance.md: a 4-ary search, and sampled ranks + a
//     window search.)
// (Small batches without order checks skip this pass: tuning/merge.h merge_splits_in_tiles; their
// tile blocks call warp_split themselves. So do the first tiles of larger sort passes, while this
// pass runs: the merge kernel's early tiles, merge_kernels.cuh.)
// Consecutive blocks share one boundary (both write the same split), so a block holds both
// splits of every boundary pair it starts. With `chain_flags` (merge_checks_order), block b
// writes chain_flags[b] = 1 iff one of those pairs does not chain up (clamp_split_end would move
// the second split), and then, after every block's flag, its mask of partition_mask_words
// words: bit j set iff its j-th pair is one of them (a block's pairs may belong to several
// merges). Only unsorted input breaks a pair, and the merge kernel then returns that merge's
// inputs concatenated (merge_kernels.cuh).
// For sorted input every strategy gives exactly co_rank's split (merge_path.h), so CPU and GPU
// agree. Unsorted input: every search stays inside [co_rank_lower, co_rank_upper], and the merge
// kernel clamps tile ranges on top (tile_ranges), so nothing reads out of bounds.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "../block/grid_launch.cuh"
#include "jax_mergepath/batch_geometry.h"
#include "jax_mergepath/call_args.h"
#include "jax_mergepath/merge_path.h"
#include "jax_mergepath/tuning/merge.h"

namespace jax_mergepath {

// co_rank(k) of one merge by a whole warp: grid_co_rank_search's descent (merge_path.h: steps of
// powers of two down A's ABSOLUTE grid), five of its levels a step. A step's lanes probe the 31
// points count + j * stride - 1 (j = 1..31, stride a power of 32, count a multiple of 32 strides)
// that those levels can reach, and the ballot then replays the thread search's path through them,
// so the warp returns exactly the thread search's split for ANY input (sorted or not: the
// partition pass may use either search and the tiles that search their own splits agree with
// it). Every diagonal of a merge probes the same few elements of A in its first steps (L2 hits)
// and only its B probes are scattered; probes outside [lo, hi) read nothing. The first step takes
// the levels left over the multiples of five, so the last probes 31 consecutive elements. All
// lanes return the split.
template <typename RawA, typename RawB, typename Order>
__device__ int64_t warp_co_rank(int64_t k, int64_t m, int64_t n, int64_t mv, int64_t nv,
                                const RawA& raw_a, const RawB& raw_b, const Order& order) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int64_t lo = co_rank_lower(k, n);
  const int64_t hi = co_rank_upper(k, m);
  if (lo >= hi) return lo;
  // hi < 2^bits <= 2 m: the thread search's probes at steps over 2^(bits - 1) all lie past hi.
  const int bits = 64 - __clzll(hi);
  int64_t count = 0;  // every i < count precedes the split
  int shift = (bits - 1) / 5 * 5;
  int levels = bits - shift;  // 1..5: steps 2^(shift + levels - 1) .. 2^shift
  for (;;) {
    const int64_t stride = int64_t{1} << shift;
    const int j = lane + 1;
    const int64_t i = count + j * stride - 1;
    const bool advance = j < (1 << levels) && i < hi &&
                         (i < lo || !b_first(i, k - 1 - i, mv, nv, raw_a, raw_b, order));
    const unsigned advances = __ballot_sync(0xffffffffu, advance);
    int at = 0;  // the thread search's count past `count`, in strides: step h probes j = at + h
    for (int h = 1 << (levels - 1); h > 0; h >>= 1) {
      if ((advances >> (at + h - 1)) & 1u) at += h;
    }
    count += at * stride;
    if (shift == 0) break;
    shift -= 5;
    levels = 5;
  }
  return count < lo ? lo : (count > hi ? hi : count);
}

// search(raw_a, raw_b, order) with readers of merge g's A and B rows (at g.a_offset / g.b_offset
// of a_all / b_all) in global memory, and `order` their directed keys (merge_path.h b_first):
// the partition's searches and the self-splitting tiles' share them.
template <typename Traits, typename Search>
__device__ __forceinline__ int64_t search_row_keys(const RowGeometry& g,
                                                   const typename Traits::Bits* a_all,
                                                   const typename Traits::Bits* b_all,
                                                   typename Traits::Bits flip,
                                                   const Search& search) {
  const typename Traits::Bits* a = a_all + g.a_offset;
  const typename Traits::Bits* b = b_all + g.b_offset;
  auto raw_a = [&](int64_t i) { return __ldg(a + i); };
  auto raw_b = [&](int64_t j) { return __ldg(b + j); };
  auto order = [&](typename Traits::Bits bits) { return directed_key<Traits>(bits, flip); };
  return search(raw_a, raw_b, order);
}

// True iff merge `merge` of `layout` belongs to a row a sort pass leaves alone (kRunPairs,
// row_done: a presorted row): its merge blocks return at once, so its partition searches
// nothing (a presorted sort's passes: their partitions were most of its time).
__device__ __forceinline__ bool row_done_of_merge(const MergeLayout& layout, int64_t merge) {
  if (layout.mode != RowMode::kRunPairs || layout.row_done == nullptr) return false;
  // 32-bit division: merges < 2^31 (tiles are, checked at launch)
  const auto per_row = static_cast<uint32_t>(layout.merges_per_row());
  return layout.row_done[static_cast<uint32_t>(merge) / per_row] != 0;
}

// The split of diagonal k of merge g by the calling warp (warp_co_rank). All lanes return it.
template <typename Traits>
__device__ __forceinline__ int64_t warp_split(const RowGeometry& g,
                                              const typename Traits::Bits* a_all,
                                              const typename Traits::Bits* b_all,
                                              typename Traits::Bits flip, int64_t k) {
  return search_row_keys<Traits>(
      g, a_all, b_all, flip, [&](const auto& raw_a, const auto& raw_b, const auto& order) {
        return warp_co_rank(k, g.m, g.n, g.mv, g.nv, raw_a, raw_b, order);
      });
}

// One warp (kWarpSearch: warp_split) or one thread (grid_co_rank_search) per tile boundary;
// block b takes boundaries [b * (per_block - 1), b * (per_block - 1) + per_block).
// next_starts_early: the merge kernel after it has early tiles (grid_launch.cuh).
template <typename Traits, bool kWarpSearch>
__global__ void partition_kernel(MergeLayout layout, const typename Traits::Bits* a_all,
                                 const typename Traits::Bits* b_all, typename Traits::Bits flip,
                                 TileMap map, int32_t* splits, int32_t* chain_flags,
                                 bool next_starts_early) {
  if (next_starts_early) {
    grid_prologue_waiting_first();
  } else {
    grid_prologue();
  }
  using Bits = typename Traits::Bits;
  constexpr int kPerBlock = kWarpSearch ? kPartitionThreads / 32 : kPartitionThreads;
  constexpr int kMaskWords = partition_mask_words_of(kPerBlock - 1);
  __shared__ int32_t split_of[kPerBlock];
  __shared__ uint32_t broken_pairs[kMaskWords];
  const int local = kWarpSearch ? static_cast<int>(threadIdx.x >> 5) : static_cast<int>(threadIdx.x);
  const int64_t id = int64_t{blockIdx.x} * (kPerBlock - 1) + local;
  const int64_t merge = id / (map.tiles_per_merge + 1);
  const int64_t t = id - merge * (map.tiles_per_merge + 1);
  const bool in_range = id < map.boundaries();  // (whole warps alike)
  RowGeometry g{};
  int64_t k = 0;
  // (a done row's splits are never read; chain_flags are only for other layouts)
  if (in_range && !row_done_of_merge(layout, merge)) {  // (whole warps alike)
    g = row_geometry(layout, merge);
    k = tile_diagonal(t, map.tile, g.m + g.n);
    int64_t split;
    if constexpr (kWarpSearch) {
      split = warp_split<Traits>(g, a_all, b_all, flip, k);
    } else {
      split = search_row_keys<Traits>(
          g, a_all, b_all, flip,
          [&](const auto& raw_a, const auto& raw_b, const auto& order) {
            return grid_co_rank_search(co_rank_lower(k, g.n), co_rank_upper(k, g.m), g.m,
                                       [&](int64_t i) {
                                         return b_first(i, k - 1 - i, g.mv, g.nv, raw_a, raw_b,
                                                        order);
                                       });
          });
    }
    if (!kWarpSearch || (threadIdx.x & 31) == 0) {
      splits[id] = static_cast<int32_t>(split);
      split_of[local] = static_cast<int32_t>(split);
    }
  }
  if (chain_flags == nullptr) return;  // (uniform)
  if (threadIdx.x < kMaskWords) broken_pairs[threadIdx.x] = 0;
  __syncthreads();
  bool broken = false;
  if (in_range && (!kWarpSearch || (threadIdx.x & 31) == 0) && local + 1 < kPerBlock &&
      id + 1 < map.boundaries() && t < map.tiles_per_merge) {
    const int64_t k_next = tile_diagonal(t + 1, map.tile, g.m + g.n);
    const int64_t next = split_of[local + 1];
    broken = clamp_split_end<int64_t>(split_of[local], k, next, k_next, g.m, g.n) != next;
  }
  if (broken) atomicOr(&broken_pairs[local / 32], 1u << (local % 32));  // (unsorted input)
  const int any_broken = __syncthreads_or(broken);
  if (threadIdx.x == 0) chain_flags[blockIdx.x] = any_broken != 0;
  if (any_broken && threadIdx.x < kMaskWords) {  // read only where the flag is set
    chain_flags[int64_t{gridDim.x} + int64_t{blockIdx.x} * kMaskWords + threadIdx.x] =
        static_cast<int32_t>(broken_pairs[threadIdx.x]);
  }
}

// Enqueues the partition pass of a tiled merge: the split of every tile boundary of every merge
// into workspace[0, map.boundaries()), and (merge_checks_order) the blocks' chain flags and
// masks after them (tuning/merge.h partition_flag_elements). next_starts_early: the kernel enqueued
// next is a tiled merge with early tiles.
template <typename Traits>
cudaError_t launch_partition(const MergeCall& call, const TileMap& map, int32_t* workspace,
                             cudaStream_t stream, bool next_starts_early = false) {
  using Bits = typename Traits::Bits;
  const MergeLayout& layout = call.layout;
  const int64_t boundaries = map.boundaries();
  const Bits* a = static_cast<const Bits*>(call.a);
  const Bits* b = layout.mode == RowMode::kSeparate ? static_cast<const Bits*>(call.b) : a;
  const Bits flip = order_mask<Traits>(call.key_type, call.descending);
  int32_t* chain_flags =
      merge_checks_order(layout, call.payload) ? workspace + boundaries : nullptr;
  const int64_t blocks = partition_blocks(boundaries);
  if (blocks >= (int64_t{1} << 31)) return cudaErrorInvalidConfiguration;
  const unsigned grid = static_cast<unsigned>(blocks);
  auto* warp_search = partition_kernel<Traits, true>;
  auto* thread_search = partition_kernel<Traits, false>;
  auto* kernel = partition_boundaries_per_block(boundaries) < kPartitionThreads ? warp_search
                                                                                : thread_search;
  return launch_kernel(kernel, grid, kPartitionThreads, stream, layout, a, b, flip, map, workspace,
                       chain_flags, next_starts_early);
}

}  // namespace jax_mergepath
