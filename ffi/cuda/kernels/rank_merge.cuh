// rank_merge.cuh (level: kernels): full rows of at most a warp's outputs (tuning/merge.h
// merge_takes_rank_rows) merged by ranks, in registers, without shared memory. A group of G lanes
// a row (G: the row length's power-of-two ceiling, tuning/merge.h rank_rows_group_log2; 32 / G
// rows a warp at once, rank_rows_slots such sets a warp); lane l holds the row's element l, A then
// B (a merge's index of it, kIndex). Its output place is its index in its side plus its insertion point in the other side (merge_path.h
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
#include <type_traits>

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

// A warp holds 32 / G rows at once, and kSlots such sets of consecutive rows (its loads of all of
// them issued before any is merged: a lane's one key a row would leave too few bytes in flight
// to keep the memory busy). top: the insertion points' first step (tuning/merge.h rank_rows_top).
// kSlots, kMinBlocks: tuning/merge.h's (a sweep may instantiate others).
template <typename Traits, PayloadKind kPayload, typename Value,
          int kSlots = rank_rows_slots(int(sizeof(typename Traits::Bits))),
          int kMinBlocks = kRankRowsMinBlocks>
__global__ void __launch_bounds__(kRankRowsThreads, kMinBlocks)
    merge_rank_rows_kernel(MergeCall call, typename Traits::Bits flip, int group_log2,
                           int top) {
  using Bits = typename Traits::Bits;
  constexpr bool kValues = kPayload == PayloadKind::kValue;
  using Held = std::conditional_t<kValues, Value, uint8_t>;  // (a value, or nothing)
  grid_prologue();
  const MergeLayout& layout = call.layout;
  const int group = 1 << group_log2;
  const int lane = static_cast<int>(threadIdx.x & 31u);
  const int l = lane & (group - 1);  // the element of its row a lane holds
  const int first_lane = lane - l;
  const int rows_at_once = 32 >> group_log2;
  const int64_t warp = (int64_t{blockIdx.x} * kRankRowsThreads + threadIdx.x) >> 5;
  const int64_t row0 = warp * kSlots * rows_at_once + (lane >> group_log2);
  const int length = static_cast<int>(layout.row_length());
  const bool separate = layout.mode == RowMode::kSeparate;
  // Where a lane's element of `row` comes from (its side's array, index in the side).
  auto source = [&](int64_t row, int& m, int& e, bool& from_b, int64_t& at, int64_t& out) {
    const RowGeometry g = row_geometry(layout, row);
    m = static_cast<int>(g.m);
    from_b = l >= m;
    e = from_b ? l - m : l;
    at = (from_b ? g.b_offset : g.a_offset) + e;
    out = g.out_offset;
  };
  Bits raw[kSlots];
  Held held[kSlots];
#pragma unroll
  for (int u = 0; u < kSlots; ++u) {
    const int64_t row = row0 + int64_t{u} * rows_at_once;
    raw[u] = 0;
    held[u] = 0;
    if (row < layout.rows && l < length) {
      int m, e;
      bool from_b;
      int64_t at, out;
      source(row, m, e, from_b, at, out);
      raw[u] = static_cast<const Bits*>(from_b && separate ? call.b : call.a)[at];
      if constexpr (kValues) {
        held[u] = static_cast<const Value*>(from_b && separate ? call.b_values : call.a_values)[at];
      }
    }
  }
#pragma unroll
  for (int u = 0; u < kSlots; ++u) {
    const int64_t row = row0 + int64_t{u} * rows_at_once;
    if (row - (lane >> group_log2) >= layout.rows) break;  // (warp-uniform: no row left)
    const bool holds = row < layout.rows && l < length;
    int m = 0, e = 0;
    bool from_b = false;
    int64_t at = 0, out = 0;
    if (row < layout.rows) source(row, m, e, from_b, at, out);
    const int n = length - m;
    const Bits key = directed_key<Traits>(raw[u], flip);
    // The other side's keys from their lanes (every lane makes every probe).
    const int other_first = first_lane + (from_b ? 0 : m);
    const int before = insertion_point_by_steps(from_b ? m : n, top, [&](int i) {
      const Bits probe = shuffle_bits(key, other_first + i);
      return from_b ? !(key < probe) : probe < key;
    });
    if constexpr (is_ranks(kPayload)) {
      const bool ranked = (kPayload == PayloadKind::kRanksOfB) == from_b;
      if (holds && ranked) static_cast<int32_t*>(call.out_payload)[at] = before;
    } else {
      // Unsorted rows: a lane whose successor on its side precedes it breaks its row.
      const Bits next = shuffle_bits(key, lane < 31 ? lane + 1 : lane);
      const bool breaks = holds && l + 1 < length && l + 1 != m && next < key;
      const unsigned votes = __ballot_sync(0xffffffffu, breaks);
      const unsigned row_lanes = group == 32 ? 0xffffffffu : ((1u << group) - 1u) << first_lane;
      const int64_t place = out + ((votes & row_lanes) != 0 ? l : e + before);
      if (holds) {
        static_cast<Bits*>(call.out)[place] = raw[u];
        if constexpr (kPayload == PayloadKind::kIndex) {
          static_cast<int32_t*>(call.out_payload)[place] = l;
        } else if constexpr (kValues) {
          static_cast<Value*>(call.out_payload)[place] = held[u];
        }
      }
    }
  }
}

}  // namespace jax_mergepath
