// query_kernels.cuh (level: kernels): the GPU's query kernels on the shared core (merge_path.h),
// one thread a query, launched by launch/query_launch.cuh:
//   co_rank_kernel: reads stay inside each row; k is clamped to [0, m + n];
//   is_sorted_kernel: rows start true (the launcher's memset), a thread that finds an
//   out-of-order neighbour pair clears its row's flag, once a row (all writers store the same 0,
//   so the race is benign); a thread checks a chunk of kIsSortedChunk keys (16-byte loads),
//   chunks of rows already found unsorted are not read (check_sorted_chunk, which the sort's
//   row flags share: kernels/sorted_copy.cuh);
//   searchsorted_kernel: a binary search a query (merge_path.h insertion_point).
// Device code, and launch_row_flags, the host launcher that the row flags' kernels share: no
// allocation, no sync.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "../block/grid_launch.cuh"
#include "jax_mergepath/call_args.h"
#include "jax_mergepath/merge_path.h"
#include "jax_mergepath/tuning/merge.h"

namespace jax_mergepath {

template <typename Traits>
__global__ void co_rank_kernel(CoRankCall call, typename Traits::Bits flip) {
  grid_prologue();
  using Bits = typename Traits::Bits;
  const int64_t q = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (q >= call.rows * call.queries) return;
  const int64_t row = q / call.queries;
  const Bits* a = static_cast<const Bits*>(call.a) + row * call.m;
  const Bits* b = static_cast<const Bits*>(call.b) + row * call.n;
  auto key_a = [&](int64_t i) { return directed_key<Traits>(__ldg(a + i), flip); };
  auto key_b = [&](int64_t j) { return directed_key<Traits>(__ldg(b + j), flip); };
  const int64_t k = clamp_length(call.k[q], call.m + call.n);
  call.out[q] = static_cast<int32_t>(co_rank(k, call.m, call.n, call.m, call.n, key_a, key_b));
}

// One thread checks kIsSortedChunk consecutive keys of the flattened (rows, length) array and
// the pair that crosses into the next chunk, loading them with 16-byte loads when the array is
// 16-byte aligned: one row division and one flag read per chunk instead of per pair (a thread a
// pair was latency bound: docs/performance.md, "Row sorts"). Pairs that cross a row end are
// skipped; a chunk whose row is already known unsorted reads no keys.

// The check of thread `unit`'s chunk: clears the flag of each row in which it finds an
// out-of-order pair (once a row: all writers store the same 0, so the race is benign; flags only
// go from 1 to 0, and a chunk is skipped only once its row's flag reads 0, so a row whose flag
// ends 1 had every chunk checked and kept), then calls
// keep(in_row, key) (the chunk's first key's position in its row, and its keys: kIsSortedChunk
// of them, those past the array's end unspecified) where the chunk's keys may belong to a row that
// ends up sorted: the chunk crosses a row end, or lies in one row not known unsorted
// and has its pairs in order.
template <typename Traits, typename Keep>
__device__ __forceinline__ void check_sorted_chunk(const IsSortedCall& call,
                                                   typename Traits::Bits flip, int64_t unit,
                                                   const Keep& keep) {
  using Bits = typename Traits::Bits;
  const int64_t total = call.rows * call.length;
  const int64_t e0 = unit * kIsSortedChunk;
  if (e0 >= total) return;
  const Bits* x = static_cast<const Bits*>(call.x);
  const int64_t first_row = e0 / call.length;
  const int64_t first_in_row = e0 - first_row * call.length;
  const bool chunk_in_row = first_in_row + kIsSortedChunk < call.length;
  if (chunk_in_row && call.out[first_row] == 0) return;  // already known unsorted
  // Keys e0 .. e0 + kIsSortedChunk (the last one starts the next chunk's first pair).
  constexpr int kKeys = kIsSortedChunk + 1;
  Bits key[kKeys];
  const int64_t valid = total - e0 < kKeys ? total - e0 : kKeys;
  constexpr int kPer = 16 / int(sizeof(Bits));
  const bool vector = valid == kKeys && aligned16(x);
  if (vector) {  // e0 is a multiple of 16 keys, so x + e0 is 16-byte aligned too
#pragma unroll
    for (int v = 0; v < kIsSortedChunk / kPer; ++v) {
      const uint4 chunk = __ldg(reinterpret_cast<const uint4*>(x + e0) + v);
      const Bits* bits = reinterpret_cast<const Bits*>(&chunk);
#pragma unroll
      for (int c = 0; c < kPer; ++c) key[v * kPer + c] = bits[c];
    }
    key[kIsSortedChunk] = __ldg(x + e0 + kIsSortedChunk);
  } else {
#pragma unroll
    for (int c = 0; c < kKeys; ++c) key[c] = c < valid ? __ldg(x + e0 + c) : Bits(0);
  }
  // A thread clears a row's flag at most once, when it leaves the row and at the end: a store
  // for every out-of-order pair sent up to kIsSortedChunk stores a thread to one flag
  // (docs/performance.md, "is_sorted stores a row flag once a thread").
  bool unsorted = false;
  int64_t row = first_row, in_row = first_in_row;
#pragma unroll
  for (int c = 0; c + 1 < kKeys; ++c) {
    if (c + 1 >= valid) break;
    // The pair (c, c + 1) lies in one row unless key c ends its row.
    if (in_row + 1 < call.length) {
      unsorted |= !in_order<Traits>(key[c], key[c + 1], flip);
      ++in_row;
    } else {
      if (unsorted) call.out[row] = 0;
      unsorted = false;
      ++row;
      in_row = 0;
    }
  }
  if (unsorted) call.out[row] = 0;
  if (!chunk_in_row || !unsorted) keep(first_in_row, key);
}

// Enqueues a row flags' check of `call` (is_sorted_kernel, or the sort's sorted_copy_kernel):
// every row's flag set to 1, then `kernel` a thread a chunk (check_sorted_chunk's units), with
// `args`. Rows of fewer than two keys are sorted: no kernel.
template <typename... Params, typename... Args>
cudaError_t launch_row_flags(const IsSortedCall& call, void (*kernel)(Params...),
                             cudaStream_t stream, Args... args) {
  if (call.rows == 0) return cudaSuccess;
  if (cudaError_t err = cudaMemsetAsync(call.out, 1, call.rows, stream); err != cudaSuccess) {
    return err;
  }
  if (call.length < 2) return cudaSuccess;
  return launch_per_unit(kernel, ceil_div(call.rows * call.length, kIsSortedChunk), stream,
                         args...);
}

template <typename Traits>
__global__ void is_sorted_kernel(IsSortedCall call, typename Traits::Bits flip) {
  grid_prologue();
  const int64_t unit = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  check_sorted_chunk<Traits>(call, flip, unit, [](int64_t, const auto&) {});
}

template <typename Traits>
__global__ void searchsorted_kernel(SearchCall call) {
  grid_prologue();
  using Bits = typename Traits::Bits;
  const int64_t q = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (q >= call.rows * call.queries) return;
  const int64_t row = q / call.queries;
  const Bits* a = static_cast<const Bits*>(call.a) + row * call.length;
  const Bits mask = order_mask<Traits>(call.key_type, false);
  const Bits v = directed_key<Traits>(__ldg(static_cast<const Bits*>(call.v) + q), mask);
  call.out[q] = static_cast<int32_t>(insertion_point<Traits>(
      call.length, v, call.right, mask, [&](int64_t i) { return __ldg(a + i); }));
}

}  // namespace jax_mergepath
