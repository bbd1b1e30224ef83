// rank_merge.cuh (level: kernels): full rows of at most a warp's outputs (tuning/merge.h
// merge_takes_rank_rows) merged by ranks, in registers, without shared memory. A group of G lanes
// a row (G: the row length's power-of-two ceiling, tuning/merge.h rank_rows_group; 32 / G rows a
// warp); lane l holds the row's element l, A then B (a merge's index of it, kIndex). Its output
// place is its index in its side plus its insertion point in the other side (merge_path.h
// insertion_point_by_steps: A's element after the other side's keys that precede it, B's after
// those that do not follow it: ties A first, stable), the other side's keys read from their
// lanes by warp shuffles, a fixed number of probes for every lane of the batch.
// A row whose lane finds its successor on its side before it (unsorted input) writes A then B
// instead, as every merge kernel does (merge_kernels.cuh copy_concatenated): the output is
// always a permutation of the row, and the row's neighbours are merged whatever it holds.
// Ranks payloads (searchsorted's short rows) store the ranked side's insertion points, with no
// order check.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "../block/grid_launch.cuh"
#include "jax_mergepath/batch_geometry.h"
#include "jax_mergepath/call_args.h"
#include "jax_mergepath/key_types.h"
#include "jax_mergepath/merge_path.h"
#include "jax_mergepath/ordering.h"
#include "jax_mergepath/tuning/merge.h"

namespace jax_mergepath {

// Key bits from lane `src` of the warp (every lane of the warp calls it).
template <typename Bits>
__device__ __forceinline__ Bits shuffle_bits(Bits value, int src) {
  if constexpr (sizeof(Bits) == 8) {
    return static_cast<Bits>(
        __shfl_sync(0xffffffffu, static_cast<unsigned long long>(value), src));
  } else {
    return static_cast<Bits>(__shfl_sync(0xffffffffu, static_cast<unsigned>(value), src));
  }
}

// Thread t of the grid is lane t % G of row t / G. top: the insertion points' first step
// (tuning/merge.h rank_rows_top: the largest power of two not above the longest side).
template <typename Traits, PayloadKind kPayload, typename Value>
__global__ void __launch_bounds__(kRankRowsThreads)
    merge_rank_rows_kernel(MergeCall call, typename Traits::Bits flip, int group_log2,
                           int top) {
  using Bits = typename Traits::Bits;
  grid_prologue();
  const MergeLayout& layout = call.layout;
  const int group = 1 << group_log2;
  const int lane = static_cast<int>(threadIdx.x & 31u);
  const int l = lane & (group - 1);
  const int first_lane = lane - l;
  const int64_t row =
      (int64_t{blockIdx.x} * kRankRowsThreads + static_cast<int64_t>(threadIdx.x)) >> group_log2;
  const bool in_batch = row < layout.rows;
  const int length = static_cast<int>(layout.row_length());
  RowGeometry g{};
  if (in_batch) g = row_geometry(layout, row);
  const int m = static_cast<int>(g.m), n = static_cast<int>(g.n);
  const bool holds = in_batch && l < length;
  const bool from_b = l >= m;
  const int e = from_b ? l - m : l;  // the element's index in its side
  const bool separate = layout.mode == RowMode::kSeparate;
  const int64_t at = (from_b ? g.b_offset : g.a_offset) + e;
  Bits raw = 0;
  if (holds) raw = static_cast<const Bits*>(from_b && separate ? call.b : call.a)[at];
  const Bits key = directed_key<Traits>(raw, flip);
  // The other side's keys from their lanes (every lane makes every probe).
  const int other_first = first_lane + (from_b ? 0 : m);
  const int before = insertion_point_by_steps(from_b ? m : n, top, [&](int i) {
    const Bits probe = shuffle_bits(key, other_first + i);
    return from_b ? !(key < probe) : probe < key;
  });
  constexpr bool kRanks = is_ranks(kPayload);
  if constexpr (kRanks) {
    const bool ranked = (kPayload == PayloadKind::kRanksOfB) == from_b;
    if (holds && ranked) static_cast<int32_t*>(call.out_payload)[at] = before;
    return;
  } else {
    // Unsorted rows: a lane whose successor on its side precedes it breaks its row.
    const Bits next = shuffle_bits(key, lane < 31 ? lane + 1 : lane);
    const bool breaks = holds && l + 1 < length && l + 1 != m && next < key;
    const unsigned votes = __ballot_sync(0xffffffffu, breaks);
    const unsigned row_lanes =
        group == 32 ? 0xffffffffu : ((1u << group) - 1u) << first_lane;
    const int place = (votes & row_lanes) != 0 ? l : e + before;
    if (!holds) return;
    const int64_t out = g.out_offset + place;
    static_cast<Bits*>(call.out)[out] = raw;
    if constexpr (kPayload == PayloadKind::kIndex) {
      static_cast<int32_t*>(call.out_payload)[out] = l;
    } else if constexpr (kPayload == PayloadKind::kValue) {
      static_cast<Value*>(call.out_payload)[out] =
          static_cast<const Value*>(from_b && separate ? call.b_values : call.a_values)[at];
    }
  }
}

}  // namespace jax_mergepath
