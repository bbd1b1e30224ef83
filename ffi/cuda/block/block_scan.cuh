// block_scan.cuh (level: block): a block's exclusive prefix sum of one integer a thread, and the
// block's total (warp shuffles, then every warp scans the warp totals). Every thread of the (1-D)
// block calls it; `storage` may be written again (the next call) only after a __syncthreads.
// Written here so the sort kernels include no CUB header: CUB's block scan header alone costs each
// translation unit that includes it ~5 s of nvcc (docs/performance.md, "Kernel instances").
#pragma once

namespace jax_mergepath {

template <typename T, int kThreads>
struct BlockScanStorage {
  static_assert(kThreads % 32 == 0 && kThreads <= 1024, "whole warps, at most 32 of them");
  T warp_totals[kThreads / 32];
};

// Lane l <- the sum of x over lanes 0..l of its warp (every lane of the warp calls it).
template <typename T>
__device__ inline T warp_inclusive_sum(T x) {
  const int lane = static_cast<int>(threadIdx.x & 31u);
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const T up = __shfl_up_sync(0xffffffffu, x, d);
    if (lane >= d) x += up;
  }
  return x;
}

// The sum of `value` over the block's threads before this one; `total` <- the sum over all.
template <typename T, int kThreads>
__device__ T block_exclusive_sum(T value, T& total, BlockScanStorage<T, kThreads>& storage) {
  constexpr int kWarps = kThreads / 32;
  const int lane = static_cast<int>(threadIdx.x & 31u);
  const int warp = static_cast<int>(threadIdx.x >> 5);
  const T inclusive = warp_inclusive_sum(value);
  if (lane == 31) storage.warp_totals[warp] = inclusive;
  __syncthreads();
  const T warp_total = lane < kWarps ? storage.warp_totals[lane] : T(0);
  const T warps_inclusive = warp_inclusive_sum(warp_total);
  total = __shfl_sync(0xffffffffu, warps_inclusive, kWarps - 1);
  const T warps_before = __shfl_sync(0xffffffffu, warps_inclusive - warp_total, warp);
  return warps_before + inclusive - value;
}

}  // namespace jax_mergepath
