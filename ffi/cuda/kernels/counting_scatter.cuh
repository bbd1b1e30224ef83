// counting_scatter.cuh (level: kernels): the CUDA sort of one row of one-byte keys (U8Key traits)
// with a 4-byte payload (argsort's positions or 4-byte values; tuning/radix.h scatter_possible):
// one stable pass of an 8-bit counting sort, over tiles of kScatterTile keys:
//   1. count (counting_sort.cuh counting_tile_kernel, a block a tile): counts[bin][tile], the
//      tile's keys of each directed order key, in the workspace;
//   2. scan (a block a bin): counts[bin][.] made exclusive prefixes over the tiles, the bin's
//      total to totals[bin];
//   3. scatter (a block a tile): the bins' starts (a scan of the totals); the tile's keys ranked
//      stably in shared memory (a warp kScatterWarpKeys consecutive keys, 32 at a time, equal
//      keys ranked in lane order), the payload (and the key) staged at the
//      rank; then written bin run by bin run to start[bin] + counts[bin][tile] + rank in tile.
// Stable, so bit-identical to the merge sort (one-byte integer keys that tie have equal bits).
// All on `stream`, no allocation, no host sync (graph-safe).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "../block/block_scan.cuh"
#include "../block/grid_launch.cuh"
#include "../block/scan_in_place.cuh"
#include "counting_sort.cuh"
#include "jax_mergepath/call_args.h"
#include "jax_mergepath/key_types.h"
#include "jax_mergepath/tuning/radix.h"
#include "jax_mergepath/tuning/workspace.h"

namespace jax_mergepath {

inline constexpr int kScatterChunks = int(kScatterWarpKeys / 32);  // 32 keys a chunk of a warp

// The lanes of `real` whose bin equals this lane's: eight ballots, one a bit of the bin (the
// hardware's match.any measured several times slower here). Every lane of the warp must call it.
__device__ inline unsigned lanes_with_bin(uint32_t bin, unsigned real) {
  unsigned peers = real;
#pragma unroll
  for (int bit = 0; bit < 8; ++bit) {
    const bool one = (bin >> bit) & 1u;
    const unsigned ones = __ballot_sync(0xffffffffu, one);
    peers &= one ? ones : ~ones;
  }
  return peers;
}

using CountScan = BlockScanStorage<uint32_t, kCountingThreads>;

// Block blockIdx.x = bin: counts[bin][0, tiles) -> exclusive prefixes; totals[bin] <- the sum.
template <typename Traits>
__global__ void __launch_bounds__(kCountingThreads)
    scatter_scan_kernel(uint32_t* counts, int64_t tiles, uint32_t* totals) {
  __shared__ CountScan scan;
  grid_prologue();
  const uint32_t total = scan_in_place<uint32_t, kCountingThreads, kScatterScanItems>(
      counts + int64_t{blockIdx.x} * tiles, tiles, scan);
  if (threadIdx.x == 0) totals[blockIdx.x] = total;
}

struct ScatterShared {
  uint32_t next[kCountingWarps][kCountingBins];  // a warp's counts, then where its next key goes
  uint32_t tile_start[kCountingBins];            // a bin's first position in the staged tile
  uint32_t global_start[kCountingBins];          // ... and in the row's output
  uint32_t payload[kScatterTile];                // the tile sorted (stable), staged
  uint8_t keys[kScatterTile];
  CountScan scan;
};

// Tile blockIdx.x of the row (see the top, 3). out_keys == nullptr: the keys are not written.
template <typename Traits, PayloadKind kPayload>
__global__ void __launch_bounds__(kCountingThreads)
    scatter_kernel(const uint8_t* keys, const uint32_t* values, int64_t n, uint8_t flip,
                   const uint32_t* counts, const uint32_t* totals, uint8_t* out_keys,
                   uint32_t* out_payload) {
  __shared__ ScatterShared s;
  grid_prologue();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const unsigned lanes_before = (1u << lane) - 1;
  const int64_t tile_begin = int64_t{blockIdx.x} * kScatterTile;
  const int64_t warp_begin = tile_begin + int64_t{warp} * kScatterWarpKeys;
  // A lane's keys (bin: the directed order key) and, past the row's end, no peers.
  uint32_t bin[kScatterChunks];
  unsigned peers[kScatterChunks];
#pragma unroll
  for (int w = 0; w < kCountingWarps; ++w) s.next[w][threadIdx.x] = 0;
#pragma unroll
  for (int c = 0; c < kScatterChunks; ++c) {
    const int64_t i = warp_begin + c * 32 + lane;
    bin[c] = i < n ? (keys[i] ^ flip) : 0;
  }
#pragma unroll
  for (int c = 0; c < kScatterChunks; ++c) {  // (every lane takes part in the ballots)
    const bool real = warp_begin + c * 32 + lane < n;
    const unsigned peers_if_real = lanes_with_bin(bin[c], __ballot_sync(0xffffffffu, real));
    peers[c] = real ? peers_if_real : 0u;
  }
  __syncthreads();
  // The warp's count of each bin: one leader (the lowest lane) a bin a chunk adds its peers.
#pragma unroll
  for (int c = 0; c < kScatterChunks; ++c) {
    if (peers[c] != 0 && (peers[c] & lanes_before) == 0) {
      s.next[warp][bin[c]] += __popc(peers[c]);
    }
    __syncwarp();
  }
  __syncthreads();
  // Thread = bin: the tile's count, its start in the staged tile and in the output, and each
  // warp's first position for it (warps in order: the tile's keys in input order).
  {
    const uint32_t b = threadIdx.x;
    uint32_t count = 0;
#pragma unroll
    for (int w = 0; w < kCountingWarps; ++w) count += s.next[w][b];
    uint32_t tiles_total, bins_total;
    const uint32_t tile_start = block_exclusive_sum(count, tiles_total, s.scan);
    __syncthreads();
    const uint32_t bin_start = block_exclusive_sum(totals[b], bins_total, s.scan);
    s.tile_start[b] = tile_start;
    s.global_start[b] = bin_start + counts[int64_t{b} * gridDim.x + blockIdx.x];
    uint32_t at = tile_start;
#pragma unroll
    for (int w = 0; w < kCountingWarps; ++w) {
      const uint32_t own = s.next[w][b];
      s.next[w][b] = at;
      at += own;
    }
  }
  __syncthreads();
  // Ranks: a key goes after the warp's earlier keys of its bin and its chunk's lower lanes.
#pragma unroll
  for (int c = 0; c < kScatterChunks; ++c) {
    const bool leader = peers[c] != 0 && (peers[c] & lanes_before) == 0;
    if (peers[c] != 0) {
      const int64_t i = warp_begin + c * 32 + lane;
      const uint32_t at = s.next[warp][bin[c]] + __popc(peers[c] & lanes_before);
      if constexpr (kPayload == PayloadKind::kIndex) s.payload[at] = static_cast<uint32_t>(i);
      if constexpr (kPayload == PayloadKind::kValue) s.payload[at] = values[i];
      s.keys[at] = static_cast<uint8_t>(bin[c] ^ flip);
    }
    __syncwarp();
    if (leader) s.next[warp][bin[c]] += __popc(peers[c]);
    __syncwarp();
  }
  __syncthreads();
  const int64_t tile_keys = n - tile_begin < kScatterTile ? n - tile_begin : kScatterTile;
  for (int64_t p = threadIdx.x; p < tile_keys; p += kCountingThreads) {
    const uint8_t key = s.keys[p];
    const uint32_t b = key ^ flip;
    const int64_t at = int64_t{s.global_start[b]} + (p - s.tile_start[b]);
    out_payload[at] = s.payload[p];
    if (out_keys != nullptr) out_keys[at] = key;
  }
}

// The counting scatter of a sort (see the top); *taken = false (nothing enqueued) where the
// workspace holds fewer than scatter_workspace_elements(n): the caller merge-sorts.
template <typename Traits, PayloadKind kPayload>
cudaError_t counting_scatter(const SortCall& call, int32_t* workspace, int64_t workspace_elements,
                             cudaStream_t stream, bool* taken) {
  static_assert(sizeof(typename Traits::Bits) == 1 && Traits::kind == KeyKind::kUnsigned);
  static_assert(kPayload != PayloadKind::kNone);
  const int64_t n = call.length;
  *taken = workspace_elements >= scatter_workspace_elements(n);
  if (!*taken) return cudaSuccess;
  const int64_t tiles = ceil_div(n, kScatterTile);
  const auto flip = order_mask<Traits>(call.key_type, call.descending);
  const auto* keys = static_cast<const uint8_t*>(call.keys);
  auto* counts = reinterpret_cast<uint32_t*>(workspace);
  uint32_t* totals = counts + kCountingBins * tiles;
  if (cudaError_t err = launch_kernel(counting_tile_kernel<Traits, true>,
                                      static_cast<unsigned>(tiles), kCountingThreads, stream, keys,
                                      n, kScatterTile, flip, counts);
      err != cudaSuccess) {
    return err;
  }
  if (cudaError_t err = launch_kernel(scatter_scan_kernel<Traits>, kCountingBins,
                                      kCountingThreads, stream, counts, tiles, totals);
      err != cudaSuccess) {
    return err;
  }
  auto* out_keys = call.keys_needed ? static_cast<uint8_t*>(call.out_keys) : nullptr;
  return launch_kernel(scatter_kernel<Traits, kPayload>, static_cast<unsigned>(tiles),
                       kCountingThreads, stream, keys, static_cast<const uint32_t*>(call.values),
                       n, flip, static_cast<const uint32_t*>(counts),
                       static_cast<const uint32_t*>(totals), out_keys,
                       static_cast<uint32_t*>(call.out_payload));
}

}  // namespace jax_mergepath
