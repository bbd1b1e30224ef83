// block_sort.cuh: the block sort of the CUDA mergesort: one block sorts one tile of
// SortPolicy::kTile keys of a row (the last tile of a row may be short), stably, with its
// payload. Thread level (sort_network.h, merge_path.h), as the CPU runs it:
//   1. the tile is loaded into shared memory (tile_io.cuh: 16-byte loads), each thread takes its
//      kItems consecutive keys into registers and sorts them with the stable network;
//   2. merge rounds: runs of kItems, 2 kItems, ... are merged pairwise in shared memory, every
//      thread producing kItems outputs of its run pair with merge_full;
//   3. each warp stores its outputs coalesced (store_warp_striped).
// A row found already sorted (row_sorted) is copied straight to the final output instead.
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

// keys_out / vals_out: the buffer the passes start from (the outputs when there are none).
template <typename Traits, PayloadKind kPayload, typename Value, typename Policy>
__global__ void __launch_bounds__(Policy::kThreads)
    block_sort_kernel(SortCall call, typename Traits::Bits* keys_out, Value* vals_out,
                      typename Traits::Bits flip, int64_t tiles_per_row) {
  using Bits = typename Traits::Bits;
  constexpr int kThreads = Policy::kThreads, kItems = Policy::kItems;
  constexpr int kTile = kThreads * kItems;
  constexpr bool kCarry = kPayload != PayloadKind::kNone;
  using Shared =
      MergeShared<kCarry ? PayloadKind::kValue : PayloadKind::kNone, Bits, Value, kThreads, kItems>;
  constexpr int kRegion = Shared::kRegionBytes;
  __shared__ Shared shared;
  Bits* keys = shared.keys();

  const int64_t tile_id = blockIdx.x;
  const int64_t row = tile_id / tiles_per_row, t = tile_id - row * tiles_per_row;
  const int64_t d = call.length;
  const int64_t begin = t * kTile;
  const int valid = static_cast<int>(d - begin < kTile ? d - begin : kTile);
  const int64_t at = row * d + begin;
  const Bits* in = static_cast<const Bits*>(call.keys) + at;
  const Value* vin = static_cast<const Value*>(call.values) + at;
  const bool presorted = call.row_sorted[row] != 0;
  if (presorted) {  // the row is copied to the final outputs, tile by tile
    keys_out = static_cast<Bits*>(call.out_keys);
    if constexpr (kCarry) vals_out = static_cast<Value*>(call.out_payload);
  }
  int loc = 0, vloc = 0, unused = 0;
  load_two_ranges<kThreads, kTile>(in, valid, in, 0, keys, loc, unused);
  if constexpr (kPayload == PayloadKind::kValue) {
    load_two_ranges<kThreads, kTile>(vin, valid, vin, 0, shared.vals, vloc, unused);
  }
  __syncthreads();
  const int p0 = static_cast<int>(threadIdx.x) * kItems;
  Bits raw[kItems];
  Value pay[kItems];
#pragma unroll
  for (int c = 0; c < kItems; ++c) {
    const int p = p0 + c;
    raw[c] = p < valid ? keys[loc + p] : Bits(0);
    if constexpr (kPayload == PayloadKind::kIndex) {
      pay[c] = static_cast<Value>(begin + p);
    } else if constexpr (kPayload == PayloadKind::kValue) {
      pay[c] = p < valid ? shared.vals[vloc + p] : Value(0);
    } else {
      pay[c] = Value(0);
    }
  }
  if (!presorted) {
    sort_network<kItems, Traits>(raw, pay, valid - p0, flip);
    for (int width = kItems; width < valid; width *= 2) {
      __syncthreads();  // every read of the previous round (or of the load) is done
#pragma unroll
      for (int c = 0; c < kItems; ++c) {
        if (p0 + c < valid) {
          keys[p0 + c] = raw[c];
          if constexpr (kCarry) shared.vals[p0 + c] = pay[c];
        }
      }
      __syncthreads();
      if (p0 < valid) {
        const RoundMerge rm = round_merge(valid, width, p0);
        const int a_loc = static_cast<int>(rm.pair.begin);
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
  __syncthreads();  // every read of shared memory is done: it becomes the store's stage
  store_warp_striped<kItems, kRegion>(raw, shared.stage, keys_out + at, valid);
  if constexpr (kCarry) store_warp_striped<kItems, kRegion>(pay, shared.stage, vals_out + at, valid);
}

}  // namespace jax_mergepath
