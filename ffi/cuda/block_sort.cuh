// block_sort.cuh: the block sort of the CUDA mergesort, stable, with its payload, on the shared
// thread level (sort_network.h, merge_path.h) as the CPU runs it. A block sorts either one tile
// of SortPolicy::kTile keys of a long row (the last tile of a row may be short), or several
// short rows packed in one tile, each in its own segment of a whole number of threads' slots
// (sort_segment).
//   1. the block's keys (contiguous in global memory) are loaded into shared memory
//      (tile_io.cuh: 16-byte loads); each thread takes its kItems consecutive slots of its
//      segment into registers and sorts them with the stable network;
//   2. merge rounds: runs of kItems, 2 kItems, ... of a segment are merged pairwise in shared
//      memory, every thread producing kItems outputs of its run pair with merge_full;
//   3. the outputs are compacted in shared memory and copied out coalesced.
// A long row found already sorted (row_sorted) is copied straight to the final outputs instead.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "block_merge.cuh"
#include "jax_mergepath/merge_args.h"
#include "jax_mergepath/merge_path.h"
#include "jax_mergepath/sort_network.h"
#include "jax_mergepath/tuning.h"
#include "tile_io.cuh"

namespace jax_mergepath {

// Where a block's keys come from: `rows_here` rows of `count` keys in all, starting at global
// element `at`; segment j's keys sit at compact offset j * seg_keys, `valid` of them (the
// segment span is `span` slots).
struct BlockSortPlan {
  int64_t at, first_position;  // global offset; row position of the first key (index payload)
  int count, rows_here, span, seg_keys, valid;
  bool presorted;
};

__device__ __forceinline__ BlockSortPlan block_sort_plan(const SortCall& call, int64_t tile,
                                                         int span, int64_t tiles_per_row) {
  BlockSortPlan plan;
  const int64_t d = call.length;
  plan.span = span;
  if (span < tile) {  // short rows, tile / span of them a block
    const int64_t per_block = tile / span;
    const int64_t row0 = int64_t{blockIdx.x} * per_block;
    plan.rows_here = static_cast<int>(call.rows - row0 < per_block ? call.rows - row0 : per_block);
    plan.at = row0 * d;
    plan.first_position = 0;
    plan.seg_keys = plan.valid = static_cast<int>(d);
    plan.count = plan.rows_here * plan.valid;
    plan.presorted = false;
  } else {  // one tile of a long row
    const int64_t row = blockIdx.x / tiles_per_row, t = blockIdx.x - row * tiles_per_row;
    const int64_t begin = t * tile;
    plan.rows_here = 1;
    plan.at = row * d + begin;
    plan.first_position = begin;
    plan.seg_keys = plan.valid = plan.count =
        static_cast<int>(d - begin < tile ? d - begin : tile);
    plan.presorted = call.row_sorted[row] != 0;
  }
  return plan;
}

// keys_out / vals_out: the buffer the passes start from (the outputs when there are none).
template <typename Traits, PayloadKind kPayload, typename Value, typename Policy>
__global__ void __launch_bounds__(Policy::kThreads)
    block_sort_kernel(SortCall call, typename Traits::Bits* keys_out, Value* vals_out,
                      typename Traits::Bits flip, int span, int64_t tiles_per_row) {
  using Bits = typename Traits::Bits;
  constexpr int kThreads = Policy::kThreads, kItems = Policy::kItems;
  constexpr int kTile = kThreads * kItems;
  constexpr bool kCarry = kPayload != PayloadKind::kNone;
  __shared__ MergeShared<kCarry ? PayloadKind::kValue : PayloadKind::kNone, Bits, Value, kThreads,
                         kItems>
      shared;
  Bits* keys = shared.keys();
  const BlockSortPlan plan = block_sort_plan(call, kTile, span, tiles_per_row);
  if (plan.presorted) {  // the row is copied to the final outputs, tile by tile
    keys_out = static_cast<Bits*>(call.out_keys);
    if constexpr (kCarry) vals_out = static_cast<Value*>(call.out_payload);
  }
  const Bits* in = static_cast<const Bits*>(call.keys) + plan.at;
  const Value* vin = static_cast<const Value*>(call.values) + plan.at;
  int loc = 0, vloc = 0, unused = 0;
  load_two_ranges<kThreads, kTile>(in, plan.count, in, 0, keys, loc, unused);
  if constexpr (kPayload == PayloadKind::kValue) {
    load_two_ranges<kThreads, kTile>(vin, plan.count, vin, 0, shared.vals, vloc, unused);
  }
  __syncthreads();
  const int p0 = static_cast<int>(threadIdx.x) * kItems;
  const int seg = p0 / plan.span, local = p0 - seg * plan.span;
  const int seg_valid = seg < plan.rows_here ? plan.valid : 0;
  const int src0 = seg * plan.seg_keys + local;  // compact offset of the thread's first key
  Bits raw[kItems];
  Value pay[kItems];
#pragma unroll
  for (int c = 0; c < kItems; ++c) {
    const bool in_row = local + c < seg_valid;
    raw[c] = in_row ? keys[loc + src0 + c] : Bits(0);
    if constexpr (kPayload == PayloadKind::kIndex) {
      pay[c] = static_cast<Value>(plan.first_position + local + c);
    } else if constexpr (kPayload == PayloadKind::kValue) {
      pay[c] = in_row ? shared.vals[vloc + src0 + c] : Value(0);
    } else {
      pay[c] = Value(0);
    }
  }
  if (!plan.presorted) {
    sort_network<kItems, Traits>(raw, pay, seg_valid - local, flip);
    const int seg_base = seg * plan.span;
    const int rounds_end = plan.span < kTile ? plan.span : plan.valid;
    for (int width = kItems; width < rounds_end; width *= 2) {
      __syncthreads();  // every read of the previous round (or of the load) is done
#pragma unroll
      for (int c = 0; c < kItems; ++c) {
        if (local + c < seg_valid) {
          keys[p0 + c] = raw[c];
          if constexpr (kCarry) shared.vals[p0 + c] = pay[c];
        }
      }
      __syncthreads();
      if (local < seg_valid) {
        const RoundMerge rm = round_merge(seg_valid, width, local);
        const int a_loc = seg_base + static_cast<int>(rm.pair.begin);
        const int m = static_cast<int>(rm.pair.m), n = static_cast<int>(rm.pair.n);
        int pos_reg[kItems];
        merge_full<kItems, Traits>(keys, a_loc, m, a_loc + m, n, static_cast<int>(rm.diag), 0,
                                   flip, [&](int c, Bits r, int pos) {
                                     raw[c] = r;
                                     pos_reg[c] = pos;
                                   });
        if constexpr (kCarry) {
#pragma unroll
          for (int c = 0; c < kItems; ++c) pay[c] = shared.vals[pos_reg[c]];
        }
      }
    }
  }
  __syncthreads();  // every read of shared memory is done: compact the outputs, copy them out
#pragma unroll
  for (int c = 0; c < kItems; ++c) {
    if (local + c < seg_valid) {
      keys[src0 + c] = raw[c];
      if constexpr (kCarry) shared.vals[src0 + c] = pay[c];
    }
  }
  __syncthreads();
  Bits* out = keys_out + plan.at;
  for (int i = threadIdx.x; i < plan.count; i += kThreads) out[i] = keys[i];
  if constexpr (kCarry) {
    Value* vout = vals_out + plan.at;
    for (int i = threadIdx.x; i < plan.count; i += kThreads) vout[i] = shared.vals[i];
  }
}

}  // namespace jax_mergepath
