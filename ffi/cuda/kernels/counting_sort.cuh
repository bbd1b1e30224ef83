// counting_sort.cuh (level: kernels): the CUDA sort of one-byte keys alone (bool, int8, uint8, all
// run as U8Key; tuning/radix.h "counting path") by counting: a sorted row is its 256 directed order
// keys in order, each repeated as often as it occurs in the row. Equal one-byte integer keys have
// equal bits, so the output is the stable merge sort's, bit for bit. Two shapes:
//   * a block a row (counting_rows_kernel): the block counts its row in shared memory, scans the
//     counts and writes the row (no workspace needed): rows of up to a tile, or many rows;
//   * tiles, for one row longer than a tile with kCountingBins int32 of workspace: zero the
//     row's counts (workspace), add every tile's counts to them (counting_tile_kernel), then
//     every tile scans them and writes its part of the row (counting_fill_kernel);
// otherwise (a few rows longer than a tile; tuning/radix.h counting_shape) the merge sort runs.
// Reads and writes go by aligned 16-byte words, the unaligned ends of a row byte by byte. All on
// `stream`, no allocation, no host sync (graph-safe).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "../block/block_scan.cuh"
#include "../block/grid_launch.cuh"
#include "jax_mergepath/call_args.h"
#include "jax_mergepath/key_types.h"
#include "jax_mergepath/tuning/radix.h"

namespace jax_mergepath {

static_assert(kCountingThreads == kCountingBins, "a thread a bin: the scan and the reductions");
inline constexpr int kCountingWarps = kCountingThreads / 32;

// A block's counts: one histogram a warp (fewer same-address atomics), then their sums.
struct CountingShared {
  uint32_t warp_counts[kCountingWarps][kCountingBins];
  uint32_t starts[kCountingBins + 1];  // exclusive prefix of the row's counts, then its length
  BlockScanStorage<uint32_t, kCountingThreads> scan;
};

// The segment [begin, end) of a row at `p` (offsets from p) as a head of bytes up to a 16-byte
// boundary, aligned 16-byte words, and a tail of bytes.
struct AlignedSplit {
  int64_t head_end, words_end;  // [begin, head_end) bytes, [head_end, words_end) words
};

__device__ inline AlignedSplit split_aligned(const void* p, int64_t begin, int64_t end) {
  const auto address = reinterpret_cast<uintptr_t>(p) + static_cast<uintptr_t>(begin);
  const int64_t to_boundary = static_cast<int64_t>((16 - (address & 15)) & 15);
  const int64_t head_end = begin + to_boundary < end ? begin + to_boundary : end;
  const int64_t words_end = head_end + (end - head_end) / 16 * 16;
  return {head_end, words_end};
}

__device__ inline void zero_counts(CountingShared& s) {
  for (int w = 0; w < kCountingWarps; ++w) s.warp_counts[w][threadIdx.x] = 0;
}

// Adds the directed order keys (key ^ flip) of keys[begin, end) to the warps' counts. A word of
// 16 equal keys is one atomic (runs, presorted rows); otherwise one a key.
__device__ inline void count_segment(const uint8_t* keys, int64_t begin, int64_t end,
                                     uint8_t flip, CountingShared& s) {
  uint32_t* counts = s.warp_counts[threadIdx.x / 32];
  const AlignedSplit split = split_aligned(keys, begin, end);
  for (int64_t i = begin + threadIdx.x; i < split.head_end; i += kCountingThreads) {
    atomicAdd(&counts[keys[i] ^ flip], 1u);
  }
  const auto* words = reinterpret_cast<const uint4*>(keys + split.head_end);
  const int64_t word_count = (split.words_end - split.head_end) / 16;
#pragma unroll 4
  for (int64_t w = threadIdx.x; w < word_count; w += kCountingThreads) {
    const uint4 v = __ldg(&words[w]);
    const uint32_t parts[4] = {v.x, v.y, v.z, v.w};
    const uint32_t first = parts[0] & 0xffu;
    const uint32_t spread = first * 0x01010101u;
    if (parts[0] == spread && parts[1] == spread && parts[2] == spread && parts[3] == spread) {
      atomicAdd(&counts[first ^ flip], 16u);
      continue;
    }
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      atomicAdd(&counts[((parts[j / 4] >> (8 * (j % 4))) & 0xffu) ^ flip], 1u);
    }
  }
  for (int64_t i = split.words_end + threadIdx.x; i < end; i += kCountingThreads) {
    atomicAdd(&counts[keys[i] ^ flip], 1u);
  }
}

// The block's count of bin threadIdx.x (after zero_counts, count_segment and a barrier).
__device__ inline uint32_t block_count(const CountingShared& s) {
  uint32_t total = 0;
#pragma unroll
  for (int w = 0; w < kCountingWarps; ++w) total += s.warp_counts[w][threadIdx.x];
  return total;
}

// s.starts <- the exclusive prefix of the row's counts (count: bin threadIdx.x's), and the total.
__device__ inline void scan_counts(uint32_t count, CountingShared& s) {
  uint32_t total;
  const uint32_t before = block_exclusive_sum(count, total, s.scan);
  s.starts[threadIdx.x] = before;
  if (threadIdx.x == 0) s.starts[kCountingBins] = total;
}

// The bin of output position p of the row: the last b with starts[b] <= p (p < the length).
__device__ inline uint32_t bin_at(const CountingShared& s, uint32_t p) {
  uint32_t low = 0, high = kCountingBins;  // starts[low] <= p < starts[high]
  while (high - low > 1) {
    const uint32_t mid = (low + high) / 2;
    if (s.starts[mid] <= p) {
      low = mid;
    } else {
      high = mid;
    }
  }
  return low;
}

// out[begin, end) of the row <- its sorted keys (s.starts complete): bin b's keys are b ^ flip.
__device__ inline void fill_segment(uint8_t* out, int64_t begin, int64_t end, uint8_t flip,
                                    const CountingShared& s) {
  const AlignedSplit split = split_aligned(out, begin, end);
  for (int64_t i = begin + threadIdx.x; i < split.head_end; i += kCountingThreads) {
    out[i] = static_cast<uint8_t>(bin_at(s, static_cast<uint32_t>(i)) ^ flip);
  }
  auto* words = reinterpret_cast<uint4*>(out + split.head_end);
  const int64_t word_count = (split.words_end - split.head_end) / 16;
  for (int64_t w = threadIdx.x; w < word_count; w += kCountingThreads) {
    const auto p = static_cast<uint32_t>(split.head_end + 16 * w);
    uint32_t b = bin_at(s, p);
    uint32_t parts[4];
    if (s.starts[b + 1] >= p + 16) {  // one bin: the word is one key 16 times
      const uint32_t spread = (b ^ flip) * 0x01010101u;
      parts[0] = parts[1] = parts[2] = parts[3] = spread;
    } else {
#pragma unroll
      for (int j = 0; j < 16; ++j) {
        while (s.starts[b + 1] <= p + j) ++b;
        const uint32_t byte = (b ^ flip) << (8 * (j % 4));
        parts[j / 4] = j % 4 == 0 ? byte : parts[j / 4] | byte;
      }
    }
    words[w] = make_uint4(parts[0], parts[1], parts[2], parts[3]);
  }
  for (int64_t i = split.words_end + threadIdx.x; i < end; i += kCountingThreads) {
    out[i] = static_cast<uint8_t>(bin_at(s, static_cast<uint32_t>(i)) ^ flip);
  }
}

// A block a row (rows strided over the grid).
template <typename Traits>
__global__ void __launch_bounds__(kCountingThreads)
    counting_rows_kernel(const uint8_t* keys, uint8_t* out, int64_t rows, int64_t length,
                         uint8_t flip) {
  __shared__ CountingShared s;
  grid_prologue();
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    zero_counts(s);
    __syncthreads();
    count_segment(keys + row * length, 0, length, flip, s);
    __syncthreads();
    scan_counts(block_count(s), s);
    __syncthreads();
    fill_segment(out + row * length, 0, length, flip, s);
    __syncthreads();  // (s is reused by the next row)
  }
}

template <typename Traits>
__global__ void __launch_bounds__(kCountingThreads) counting_zero_kernel(uint32_t* counts) {
  grid_prologue();
  counts[threadIdx.x] = 0;
}

// Tile blockIdx.x (of `tile` keys) of the row: its counts added to the row's (kPerTile false:
// counts[bin], zeroed before) or stored as counts[bin * tiles + tile] (kPerTile: the counting
// scatter's, counting_scatter.cuh).
template <typename Traits, bool kPerTile>
__global__ void __launch_bounds__(kCountingThreads)
    counting_tile_kernel(const uint8_t* keys, int64_t length, int64_t tile, uint8_t flip,
                         uint32_t* counts) {
  __shared__ CountingShared s;
  grid_prologue();
  zero_counts(s);
  __syncthreads();
  const int64_t begin = int64_t{blockIdx.x} * tile;
  const int64_t end = begin + tile < length ? begin + tile : length;
  count_segment(keys, begin, end, flip, s);
  __syncthreads();
  const uint32_t own = block_count(s);
  if constexpr (kPerTile) {
    counts[int64_t{threadIdx.x} * gridDim.x + blockIdx.x] = own;
  } else if (own != 0) {
    atomicAdd(&counts[threadIdx.x], own);
  }
}

// Tile blockIdx.x of the output, from the row's counts.
template <typename Traits>
__global__ void __launch_bounds__(kCountingThreads)
    counting_fill_kernel(const uint32_t* counts, int64_t length, uint8_t flip, uint8_t* out) {
  __shared__ CountingShared s;
  grid_prologue();
  scan_counts(counts[threadIdx.x], s);
  __syncthreads();
  const int64_t begin = int64_t{blockIdx.x} * kCountingTile;
  const int64_t end = begin + kCountingTile < length ? begin + kCountingTile : length;
  fill_segment(out, begin, end, flip, s);
}

// The counting path of a sort (see the top) with the one-byte keys' Traits (U8Key; the kernels
// are templates so that every translation unit may include this header). `workspace` /
// `workspace_elements`: the call's int32 workspace; the tiled shape needs kCountingBins of it.
// *taken = false (nothing enqueued) where tuning/radix.h counting_shape declines: the caller
// merge-sorts.
template <typename Traits>
cudaError_t counting_sort(const SortCall& call, int32_t* workspace, int64_t workspace_elements,
                          cudaStream_t stream, bool* taken) {
  static_assert(sizeof(typename Traits::Bits) == 1 && Traits::kind == KeyKind::kUnsigned);
  const CountingShape shape = counting_shape(call.rows, call.length, workspace_elements);
  *taken = shape != CountingShape::kDecline;
  if (!*taken) return cudaSuccess;
  const auto flip = order_mask<Traits>(call.key_type, call.descending);
  const auto* keys = static_cast<const uint8_t*>(call.keys);
  auto* out = static_cast<uint8_t*>(call.out_keys);
  if (shape == CountingShape::kRowBlocks) {
    const int64_t blocks = call.rows < kCountingMaxRowBlocks ? call.rows : kCountingMaxRowBlocks;
    return launch_kernel(counting_rows_kernel<Traits>, static_cast<unsigned>(blocks),
                         kCountingThreads, stream, keys, out, call.rows, call.length, flip);
  }
  const int64_t tiles = ceil_div(call.length, kCountingTile);
  auto* counts = reinterpret_cast<uint32_t*>(workspace);
  if (cudaError_t err =
          launch_kernel(counting_zero_kernel<Traits>, 1, kCountingThreads, stream, counts);
      err != cudaSuccess) {
    return err;
  }
  if (cudaError_t err = launch_kernel(counting_tile_kernel<Traits, false>,
                                      static_cast<unsigned>(tiles), kCountingThreads, stream, keys,
                                      call.length, kCountingTile, flip, counts);
      err != cudaSuccess) {
    return err;
  }
  return launch_kernel(counting_fill_kernel<Traits>, static_cast<unsigned>(tiles), kCountingThreads,
                       stream, static_cast<const uint32_t*>(counts), call.length, flip, out);
}

}  // namespace jax_mergepath
