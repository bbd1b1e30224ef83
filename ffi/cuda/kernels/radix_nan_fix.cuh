// radix_nan_fix.cuh (level: kernels): the NaN fix-up of float keys alone sorted ascending by CUB
// as their own type (radix_sort.cuh radix_sort_float_direct). CUB's order is ours (ordering.h)
// but for NaNs: it ties -0.0 with +0.0 and is stable, so the zeros keep input order as ours do,
// but it puts the negative NaNs first and every NaN in the order of its bits, where ours puts
// every NaN last, in input order. Its output is [m negative NaNs | the other keys, in our order |
// p positive NaNs]; where m = 0 and the p NaNs have one bit pattern (no NaN at all, most often)
// it is ours already; else ("moved") the other keys go m places down and the NaNs, in input
// order, after them. Two kernels of at most kRadixNanFixBlocks blocks (tuning/radix.h: an empty
// block costs its launch), each block the encode tiles (kRadixEncodeTile) b, b + grid, ...:
//   check: every block finds m and p (two loads; a warp's 32-way search at an end that holds a
//     NaN); moved: copies its tiles of the output to `spare` and writes each tile's count of
//     input NaNs; block 0 writes the state {moved, m, p}.
//   fix: reads the state and returns unless moved; then out[i] <- spare[i + m] for a tile's
//     i < n - m - p, and the tile's input NaNs, in input order, to out[n - m - p + the NaNs of
//     the tiles before it (a look-back over the tiles' counts) + their rank (a block scan)].
// The fix writes out only from spare and the input (two disjoint ranges of it), so its blocks
// need no order; the look-back never waits (every tile's entry holds a count before it runs;
// a block's own earlier tile holds a prefix, so a walk is at most a grid's tiles long). Where
// nothing moved each block costs two loads (check; and the search where an end holds a NaN) or
// one (fix). n < 2^31 (one row: tuning/radix.h kRadixRowLimit).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "../block/block_scan.cuh"
#include "../block/grid_launch.cuh"
#include "jax_mergepath/ordering.h"
#include "jax_mergepath/tuning/radix.h"

namespace jax_mergepath {

// The fix-up's state in the workspace (int32 entries): {moved, m, p, unused}, then a uint64_t a
// tile (the look-back's entries below): radix_count_elements(1, n) holds them.
inline constexpr int kNanState = 4;

// How many of the first `n` places satisfy `pred`, which holds on a prefix of them: a warp's
// 32-way search (every lane of the warp calls it; each step 32 probes).
template <typename Pred>
__device__ int64_t warp_prefix_length(int64_t n, Pred pred) {
  const int lane = static_cast<int>(threadIdx.x & 31u);
  int64_t lo = 0, hi = n;  // the answer lies in [lo, hi]
  while (lo < hi) {
    const int64_t step = (hi - lo + 31) / 32;
    const int64_t probe = lo + int64_t{lane} * step;
    const unsigned held = __ballot_sync(0xffffffffu, probe < hi && pred(probe));
    const int c = __popc(held);  // (a prefix of the lanes: pred holds on a prefix)
    if (c == 0) break;           // pred(lo) fails: the answer is lo
    const int64_t past = lo + int64_t{c} * step;
    lo = lo + int64_t{c - 1} * step + 1;
    hi = past < hi ? past : hi;
  }
  return lo;
}

struct NanEnds {
  int64_t m, p;  // leading negative NaNs, trailing positive NaNs
  bool moved;
};

// The ends of CUB's output `out` (n keys): every lane of the warp calls it.
template <typename Traits>
__device__ NanEnds nan_ends(const typename Traits::Bits* out, int64_t n) {
  using Bits = typename Traits::Bits;
  auto negative_nan = [](Bits b) { return Traits::is_nan(b) && (b & Traits::kSign); };
  auto positive_nan = [](Bits b) { return Traits::is_nan(b) && !(b & Traits::kSign); };
  NanEnds e{0, 0, false};
  if (negative_nan(out[0])) {
    e.m = warp_prefix_length(n, [&](int64_t i) { return negative_nan(out[i]); });
  }
  if (positive_nan(out[n - 1])) {
    e.p = warp_prefix_length(n, [&](int64_t i) { return positive_nan(out[n - 1 - i]); });
  }
  e.moved = e.m > 0 || (e.p > 1 && out[n - e.p] != out[n - 1]);
  return e;
}

// A tile's entry in the fix-up's look-back, (kind << 32) | value: kind kTileOwn, the tile's own
// input NaNs (written by the check); kind kTilePrefix, those of every tile up to it (the fix).
inline constexpr uint64_t kTileOwn = 1, kTilePrefix = 2;

// The input NaNs of the tiles before tile b: a warp walks back from b, 32 entries a step, adding
// own counts up to the nearest prefix (none before tile 0: 0). Every entry holds one of the two
// kinds (the check wrote them all), so nothing waits; a prefix met early shortens the walk.
__device__ inline int64_t warp_nans_before(const uint64_t* tiles, int64_t b) {
  const int lane = static_cast<int>(threadIdx.x & 31u);
  int64_t sum = 0;
  for (int64_t end = b; end > 0; end -= 32) {
    const int64_t t = end - 32 + lane;
    const uint64_t e =
        t >= 0 ? *static_cast<const volatile uint64_t*>(tiles + t) : kTilePrefix << 32;
    const unsigned prefixes = __ballot_sync(0xffffffffu, (e >> 32) == kTilePrefix);
    const int from = prefixes ? 31 - __clz(static_cast<int>(prefixes)) : 0;
    int64_t v = lane >= from ? static_cast<int64_t>(e & 0xffffffffu) : 0;
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) v += __shfl_xor_sync(0xffffffffu, v, d);
    sum += v;
    if (prefixes) break;
  }
  return sum;
}

template <typename Traits>
__global__ void __launch_bounds__(kRadixEncodeThreads)
    radix_nan_check_kernel(const typename Traits::Bits* keys, const typename Traits::Bits* out,
                           int64_t n, typename Traits::Bits* spare, int32_t* state) {
  __shared__ BlockScanStorage<int32_t, kRadixEncodeThreads> scan_storage;
  __shared__ NanEnds ends;
  grid_prologue();
  if (threadIdx.x < 32) {
    const NanEnds e = nan_ends<Traits>(out, n);
    if (threadIdx.x == 0) {
      ends = e;
      if (blockIdx.x == 0) {
        state[0] = e.moved;
        state[1] = static_cast<int32_t>(e.m);
        state[2] = static_cast<int32_t>(e.p);
      }
    }
  }
  __syncthreads();
  if (!ends.moved) return;
  auto* entries = reinterpret_cast<uint64_t*>(state + kNanState);
  for (int64_t tile = blockIdx.x; tile * kRadixEncodeTile < n; tile += gridDim.x) {
    const int64_t base = tile * kRadixEncodeTile;
    int nans = 0;
#pragma unroll 4
    for (int j = 0; j < kRadixEncodeItems; ++j) {
      const int64_t i = base + int64_t{j} * kRadixEncodeThreads + threadIdx.x;
      if (i < n) {
        spare[i] = out[i];
        nans += Traits::is_nan(keys[i]);
      }
    }
    int32_t total;
    block_exclusive_sum(nans, total, scan_storage);
    if (threadIdx.x == 0) entries[tile] = kTileOwn << 32 | static_cast<uint32_t>(total);
    __syncthreads();  // (the scan storage is written again)
  }
}

template <typename Traits>
__global__ void __launch_bounds__(kRadixEncodeThreads)
    radix_nan_fix_kernel(const typename Traits::Bits* keys, const typename Traits::Bits* spare,
                         int64_t n, int32_t* state, typename Traits::Bits* out) {
  using Bits = typename Traits::Bits;
  __shared__ BlockScanStorage<int32_t, kRadixEncodeThreads> scan_storage;
  __shared__ int64_t nans_before;
  grid_prologue();
  if (!state[0]) return;
  const int64_t m = state[1], kept = n - m - state[2];
  auto* entries = reinterpret_cast<uint64_t*>(state + kNanState);
  for (int64_t tile = blockIdx.x; tile * kRadixEncodeTile < n; tile += gridDim.x) {
    const int64_t base = tile * kRadixEncodeTile;
#pragma unroll 4
    for (int j = 0; j < kRadixEncodeItems; ++j) {
      const int64_t i = base + int64_t{j} * kRadixEncodeThreads + threadIdx.x;
      if (i < kept) out[i] = spare[i + m];
    }
    // Thread t holds keys [t * items, (t + 1) * items) of the tile: ranks in input order.
    const int64_t first = base + int64_t{threadIdx.x} * kRadixEncodeItems;
    int own = 0;
    for (int j = 0; j < kRadixEncodeItems; ++j) {
      if (first + j < n) own += Traits::is_nan(keys[first + j]);
    }
    int32_t total;
    const int32_t rank = block_exclusive_sum(own, total, scan_storage);
    if (threadIdx.x < 32) {
      const int64_t before = warp_nans_before(entries, tile);
      if (threadIdx.x == 0) {
        nans_before = before;
        // (one 64-bit store: a reader sees the own count or the prefix, either adds up)
        *static_cast<volatile uint64_t*>(entries + tile) =
            kTilePrefix << 32 | static_cast<uint32_t>(before + total);
      }
    }
    __syncthreads();
    if (own > 0) {
      int64_t at = kept + nans_before + rank;
      for (int j = 0; j < kRadixEncodeItems; ++j) {
        if (first + j < n) {
          const Bits raw = keys[first + j];
          if (Traits::is_nan(raw)) out[at++] = raw;
        }
      }
    }
    __syncthreads();  // (nans_before and the scan storage are written again)
  }
}

}  // namespace jax_mergepath
