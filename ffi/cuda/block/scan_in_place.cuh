// scan_in_place.cuh (level: block): one block's exclusive prefix sum of a long array in global
// memory, in rounds of kThreads x kItems elements (a thread kItems consecutive ones), each round's
// carry into the next. Shared by the radix path's class counts (radix_sort.cuh) and the counting
// scatter's tile counts (counting_scatter.cuh).
#pragma once

#include <cstdint>

#include "block_scan.cuh"

namespace jax_mergepath {

// a[0, n) <- its exclusive prefix sums; returns the total (in every thread). Every thread of the
// block calls it; `storage` is free again when it returns.
template <typename T, int kThreads, int kItems>
__device__ T scan_in_place(T* a, int64_t n,
                           BlockScanStorage<T, kThreads>& storage) {
  T carry = 0;
  for (int64_t start = 0; start < n; start += int64_t{kThreads} * kItems) {
    const int64_t first = start + int64_t{threadIdx.x} * kItems;
    T own[kItems];
    T sum = 0;
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      own[j] = first + j < n ? a[first + j] : T(0);
      sum += own[j];
    }
    T round_total;
    T before = block_exclusive_sum(sum, round_total, storage);
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      if (first + j < n) a[first + j] = carry + before;
      before += own[j];
    }
    carry += round_total;
    __syncthreads();  // (storage is reused)
  }
  return carry;
}

}  // namespace jax_mergepath
