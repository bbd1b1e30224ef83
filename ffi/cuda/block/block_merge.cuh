// block_merge.cuh (level: block): the block level of the CUDA merges: a tile's shared-memory
// layout, its load (keys and values) and its store (keys, then indices or values), shared by the
// tiled and packed merge kernels, the block sort and the test sweeps; and the check that a block's
// threads merged a chain of spans (unsorted input breaks it). Thread-level merging is
// merge_path.h's.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "jax_mergepath/call_args.h"
#include "jax_mergepath/merge_path.h"
#include "jax_mergepath/tuning/merge.h"
#include "tile_io.cuh"

namespace jax_mergepath {

// One merge segment in shared memory (merge_path.h's StagedSegment) with what a payload needs:
// the merge positions of A[0] and B[0] (index payload) and their value-staging positions (value
// payload).
struct Segment : StagedSegment {
  int a_index_base, b_index_base;
  int a_src_base, b_src_base;
};

// merge_full (merge_path.h) of staged sorted ranges, comparing as PlainFloatCompare when
// `nan_free` (sorted_ranges_nan_free of the block's ranges: float32 / float64 tiles without a
// NaN), else as KeyCompare. The block's threads agree on nan_free, so nothing diverges.
template <int kCount, typename Traits, typename Emit, typename Started = IgnoreStart>
__device__ __forceinline__ MergeEnd merge_full_sorted(bool nan_free,
                                                      const typename Traits::Bits* keys,
                                                      int a_loc, int m, int b_loc, int n, int diag,
                                                      typename Traits::Bits flip, const Emit& emit,
                                                      const Started& started = {}) {
#if defined(__CUDA_ARCH__)
  if constexpr (kFpuComparable<Traits>) {
    if (nan_free) {
      return merge_full_by<kCount>(keys, a_loc, m, b_loc, n, diag, 0,
                                   PlainFloatCompare<Traits>(flip), emit, started);
    }
  }
#endif
  return merge_full<kCount, Traits>(keys, a_loc, m, b_loc, n, diag, 0, flip, emit, started);
}

// Shared-memory layout of a merge block: `stage` holds the tile's keys (as load_two_ranges or
// load_rows_strided place them) and later every warp's output transposes; `vals` holds the tile's
// values (kValue only).
// kSlackBudget > 0: `stage` is up to 1 / kRowsStageSlackDivisor larger (the rows kernel's strided
// rows) while the layout and kOtherBytes of the block's other shared memory stay within
// kSlackBudget bytes (tuning/merge.h shared_budget_per_block).
template <PayloadKind kPayload, typename Bits, typename Value, int kThreads, int kItems,
          int kSlackBudget = 0, int kOtherBytes = 0>
struct MergeShared {
  static constexpr PayloadKind kPayloadKind = kPayload;
  static constexpr int kTile = kThreads * kItems;
  static constexpr int kValueSlots = kPayload == PayloadKind::kValue ? kSharedSlots<Value, kTile> : 1;
  static constexpr int kElemBytes = std::max({int(sizeof(Bits)),
                                              kPayload == PayloadKind::kIndex || is_ranks(kPayload) ? 4 : 0,
                                              kPayload == PayloadKind::kValue ? int(sizeof(Value)) : 0});
  static constexpr int kRegionBytes = 32 * kItems * kElemBytes;  // one warp's transpose
  static constexpr int kPlainStageBytes =
      std::max(kSharedSlots<Bits, kTile> * int(sizeof(Bits)), kTile * kElemBytes);
  static constexpr int kRoomBytes = kSlackBudget - (kPlainStageBytes + 15) / 16 * 16 -
                                    kValueSlots * int(sizeof(Value)) - kOtherBytes - 16;
  static constexpr int kSlackBytes =
      std::max(0, std::min(kPlainStageBytes / kRowsStageSlackDivisor, kRoomBytes)) / 16 * 16;
  static constexpr int kStageBytes = kPlainStageBytes + kSlackBytes;
  alignas(16) unsigned char stage[(kStageBytes + 15) / 16 * 16];
  alignas(16) Value vals[kValueSlots];
  __device__ Bits* keys() { return reinterpret_cast<Bits*>(stage); }
};

// Where a block's two input ranges sit in shared memory: keys at key_loc1 / key_loc2, values at
// val_loc1 / val_loc2 (kValue only).
struct TileLocs {
  int key_loc1 = 0, key_loc2 = 0, val_loc1 = 0, val_loc2 = 0;
};

// Loads a block's two input ranges (keys, and values when the payload is kValue) into shared
// memory, all loads in flight at once (tile_io.cuh load_two_ranges: kAsync copies, waited for
// here, or staged through registers); the caller synchronizes the block before reading them.
template <int kThreads, bool kAsync, PayloadKind kPayload, typename Bits, typename Value,
          int kItems, int kBudget, int kOther>
__device__ __forceinline__ TileLocs load_tile(
    MergeShared<kPayload, Bits, Value, kThreads, kItems, kBudget, kOther>& shared,
    const Bits* keys1, const Bits* keys2, const Value* vals1, const Value* vals2, int c1, int c2) {
  constexpr int kTile = kThreads * kItems;
  TileLocs locs;
  if constexpr (kPayload == PayloadKind::kValue) {
    load_two_ranges<kThreads, kTile, kAsync>(vals1, c1, vals2, c2, shared.vals, locs.val_loc1,
                                             locs.val_loc2);
  }
  load_two_ranges<kThreads, kTile, kAsync>(keys1, c1, keys2, c2, shared.keys(), locs.key_loc1,
                                           locs.key_loc2);
  if constexpr (kAsync) wait_async_copies();
  return locs;
}

// load_tile of whole rows, the keys as strided rows (tile_io.cuh load_rows_strided): `rows` rows
// of len1 keys from keys1 at stride1 from slot 0, then (len2 > 0) `rows` rows of len2 keys from
// keys2 at stride2 from slot key_loc2 = rows * stride1; the values (kValue) as load_tile places
// them. The caller checked that the keys' sources are 16-byte aligned, the lengths multiples of
// 16 bytes and that rows * (stride1 + stride2) slots (and the merge's reads past them) fit.
template <int kThreads, PayloadKind kPayload, typename Bits, typename Value, int kItems,
          int kBudget, int kOther>
__device__ __forceinline__ TileLocs load_tile_rows_strided(
    MergeShared<kPayload, Bits, Value, kThreads, kItems, kBudget, kOther>& shared,
    const Bits* keys1, const Bits* keys2, const Value* vals1, const Value* vals2, int rows,
    int len1, int stride1, int len2, int stride2) {
  constexpr int kTile = kThreads * kItems;
  TileLocs locs;
  if constexpr (kPayload == PayloadKind::kValue) {
    load_two_ranges<kThreads, kTile, true>(vals1, rows * len1, vals2, rows * len2, shared.vals,
                                           locs.val_loc1, locs.val_loc2);
  }
  locs.key_loc1 = 0;
  locs.key_loc2 = rows * stride1;
  load_rows_strided<kThreads>(keys1, rows, len1, stride1, shared.keys());
  if (len2 > 0) {
    load_rows_strided<kThreads>(keys2, rows, len2, stride2, shared.keys() + locs.key_loc2);
  }
  wait_async_copies();
  return locs;
}

// A thread's output registers before a merge that may leave some unset (outputs past the
// tile's count): zero keys, value positions and indices, so the stores read defined values.
template <typename Bits, int kItems>
__device__ __forceinline__ void clear_outputs(Bits (&key_reg)[kItems], int (&src_reg)[kItems],
                                              int32_t (&index_reg)[kItems]) {
#pragma unroll
  for (int c = 0; c < kItems; ++c) {
    key_reg[c] = Bits(0);
    src_reg[c] = 0;
    index_reg[c] = 0;
  }
}

// The block's outputs: keys, then the payload (indices, or values gathered from `vals` at the
// value positions in src_reg). Call after a barrier that ends every read of the keys in `stage`.
// Shared: a MergeShared, or a layout with the same members (quad_merge.cuh).
template <typename Shared, typename Bits, int kItems>
__device__ __forceinline__ void store_tile_outputs(Shared& shared, const Bits (&key_reg)[kItems],
                                                   const int (&src_reg)[kItems],
                                                   const int32_t (&index_reg)[kItems], Bits* out,
                                                   void* out_payload, int count) {
  constexpr PayloadKind kPayload = Shared::kPayloadKind;
  using Value = std::remove_reference_t<decltype(shared.vals[0])>;
  constexpr int kRegion = Shared::kRegionBytes;
  store_warp_striped<kItems, kRegion>(key_reg, shared.stage, out, count);
  if constexpr (kPayload == PayloadKind::kIndex) {
    store_warp_striped<kItems, kRegion>(index_reg, shared.stage,
                                        static_cast<int32_t*>(out_payload), count);
  } else if constexpr (kPayload == PayloadKind::kValue) {
    Value value_reg[kItems];
#pragma unroll
    for (int c = 0; c < kItems; ++c) value_reg[c] = shared.vals[src_reg[c]];
    store_warp_striped<kItems, kRegion>(value_reg, shared.stage, static_cast<Value*>(out_payload),
                                        count);
  }
}

// The last level of a multiway pass's block (quad_merge.cuh, eight_way_merge.cuh): the earlier
// levels' two staged outputs (a_loc, m) and (b_loc, n) merged into this thread's registers,
// outputs p0 .. p0 + kItems - 1 of the tile's `count` (a value through shared.src: the slot
// the earlier levels left), then, after a barrier, the block's outputs stored to the call's
// outputs from element out_at (store_tile_outputs). key_reg / src_reg: the caller's registers,
// reused.
template <int kItems, typename Traits, typename Shared>
__device__ __forceinline__ void merge_last_level_and_store(
    Shared& shared, bool nan_free, int a_loc, int m, int b_loc, int n, int p0, int count,
    typename Traits::Bits flip, const MergeCall& call, int64_t out_at,
    typename Traits::Bits (&key_reg)[kItems], int (&src_reg)[kItems]) {
  using Bits = typename Traits::Bits;
  using Value = std::remove_reference_t<decltype(shared.vals[0])>;
  int32_t index_reg[kItems];
  clear_outputs(key_reg, src_reg, index_reg);
  if (p0 < count) {
    merge_full_sorted<kItems, Traits>(nan_free, shared.keys(), a_loc, m, b_loc, n, p0, flip,
                                      [&](int c, Bits raw, int pos) {
                                        key_reg[c] = raw;
                                        if constexpr (Shared::kValues) {
                                          src_reg[c] = p0 + c < count ? int{shared.src[pos]} : 0;
                                        }
                                      });
  }
  __syncthreads();  // every read of the earlier levels' outputs is done: `stage` is free
  store_tile_outputs(shared, key_reg, src_reg, index_reg, static_cast<Bits*>(call.out) + out_at,
                     Shared::kValues
                         ? static_cast<void*>(static_cast<Value*>(call.out_payload) + out_at)
                         : nullptr,
                     count);
}

// The threads of a block merge consecutive spans of outputs: each open span (merge_path.h
// MergeEnd) must stop where the next thread's starts, or some input is emitted twice and some
// never (unsorted input). Each thread publishes its start as its merge reports it (`started`),
// and after a barrier that follows every publish, breaks() compares its stop with the next
// thread's start; the block then decides with __syncthreads_or and, if broken, writes a
// permutation instead (merge_kernels.cuh copy_concatenated).
template <int kThreads>
struct SpanChain {
  int begin_of[kThreads];

  __device__ __forceinline__ void publish(int a_begin) { begin_of[threadIdx.x] = a_begin; }

  // An open span has a next thread in the block (its outputs follow in the same segment).
  __device__ __forceinline__ bool breaks(const MergeEnd& end) const {
    return end.open && end.a_end != begin_of[threadIdx.x + 1];
  }
};

// A SpanChain that also keeps every thread's end, stored where breaks() is asked (its inputs
// are live there: storing the verdict instead, or voting by row, made ptxas spill the
// 40-register rows kernels, docs/performance.md), so that after the block's vote any thread can
// tell whose span broke: the rows and packed kernels (merge_kernels.cuh) fall back row by row, and
// a row whose input is sorted keeps its merge whatever its neighbours hold.
template <int kThreads>
struct SpanChainWithEnds : SpanChain<kThreads> {
  int end_of[kThreads];  // a_end of an open span, else -1 (the last thread's is never open)

  __device__ __forceinline__ bool breaks_and_keep(const MergeEnd& end) {
    end_of[threadIdx.x] = end.open ? end.a_end : -1;
    return this->breaks(end);
  }
  // True iff a thread in [first, end) found its span broken (0 <= first, end <= kThreads).
  __device__ __forceinline__ bool any_broken(int first, int end) const {
    for (int t = first; t < end; ++t) {
      if (end_of[t] >= 0 && end_of[t] != this->begin_of[t + 1]) return true;
    }
    return false;
  }
};

}  // namespace jax_mergepath
