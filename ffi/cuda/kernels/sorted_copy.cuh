// sorted_copy.cuh (level: kernels): a merge sort's row flags (SortCall::row_sorted) with its sorted
// rows already in the outputs. A thread checks a chunk of kIsSortedChunk keys as is_sorted_kernel
// does (query_kernels.cuh check_sorted_chunk) and every chunk that may belong to a sorted row (in
// order inside one row, or crossing a row end) is stored to out_keys with its payload (argsort's
// positions, or the values), a block's kept chunks copied together in coalesced pieces. So a
// sorted row costs one read and one write: the block sort leaves it alone (block_sort.cuh) and its
// passes are empty (row_done). The chunks of rows found unsorted later were stored for nothing
// (the passes write every output of such a row): at most one write more, where chunks of an
// unsorted row are in order (nearly sorted rows); random rows' chunks are out of order at once,
// or skipped once their row is known unsorted.
// Sort passes only (rows of two keys or more); device code and its launcher: no allocation, no
// sync.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "../block/grid_launch.cuh"
#include "jax_mergepath/call_args.h"
#include "query_kernels.cuh"

namespace jax_mergepath {

// Copies the elements [0, n) of a block's span (its kQueryThreads chunks of keys or payload,
// element j made by make(j)) to `out` where kept_chunk[j / kIsSortedChunk]: 16-byte pieces a
// thread at a time across the block (coalesced), each piece whole, or element by element at the
// span's end or where `out` is not 16-byte aligned.
template <typename T, typename Make>
__device__ __forceinline__ void copy_kept(T* out, int64_t n, const bool* kept_chunk,
                                          bool aligned, const Make& make) {
  constexpr int kPer = 16 / int(sizeof(T));
  constexpr int kPieces = kQueryThreads * kIsSortedChunk / kPer;
  for (int q = static_cast<int>(threadIdx.x); q < kPieces; q += kQueryThreads) {
    const int j0 = q * kPer;
    if (j0 >= n || !kept_chunk[j0 / kIsSortedChunk]) continue;
    if (aligned && j0 + kPer <= n) {
      uint4 piece;
      T* items = reinterpret_cast<T*>(&piece);
#pragma unroll
      for (int c = 0; c < kPer; ++c) items[c] = make(j0 + c);
      reinterpret_cast<uint4*>(out + j0)[0] = piece;
    } else {
      for (int j = j0; j < n && j < j0 + kPer; ++j) out[j] = make(j);
    }
  }
}

// order: the call's keys and row flags (the launcher set the flags first); Value: the payload's
// element (argsort's int32 positions, the values' bits, or unused). A thread checks a chunk;
// then the block copies its span's kept chunks (check_sorted_chunk's keep) in coalesced 16-byte
// pieces: the keys again from the input (the block's span was just read: cached), the positions
// from each chunk's place in its row, the values from the input.
template <typename Traits, PayloadKind kPayload, typename Value>
__global__ void __launch_bounds__(kQueryThreads)
    sorted_copy_kernel(SortCall call, IsSortedCall order, typename Traits::Bits flip) {
  grid_prologue();
  using Bits = typename Traits::Bits;
  __shared__ bool kept_chunk[kQueryThreads];
  __shared__ int64_t chunk_start[kPayload == PayloadKind::kIndex ? kQueryThreads : 1];
  const int64_t unit = int64_t{blockIdx.x} * kQueryThreads + threadIdx.x;
  bool kept = false;
  check_sorted_chunk<Traits>(order, flip, unit, [&](int64_t in_row) {
    kept = true;
    if constexpr (kPayload == PayloadKind::kIndex) chunk_start[threadIdx.x] = in_row;
  });
  kept_chunk[threadIdx.x] = kept;
  if (__syncthreads_or(kept) == 0) return;  // (random rows: no chunk kept)
  const int64_t base = int64_t{blockIdx.x} * kQueryThreads * kIsSortedChunk;
  const int64_t total = order.rows * order.length;
  const int64_t n = total - base < int64_t{kQueryThreads} * kIsSortedChunk
                        ? total - base
                        : int64_t{kQueryThreads} * kIsSortedChunk;
  const Bits* keys = static_cast<const Bits*>(call.keys) + base;
  Bits* out_keys = static_cast<Bits*>(call.out_keys) + base;
  copy_kept(out_keys, n, kept_chunk, aligned16(out_keys), [&](int j) { return __ldg(keys + j); });
  if constexpr (kPayload == PayloadKind::kIndex) {
    Value* out = static_cast<Value*>(call.out_payload) + base;
    // positions in the row, from zero again where a chunk crosses a row end
    const int64_t length = call.length;
    copy_kept(out, n, kept_chunk, aligned16(out), [&](int j) {
      const int64_t start = chunk_start[j / kIsSortedChunk];
      const int64_t p = start + j % kIsSortedChunk;
      return static_cast<Value>(start + kIsSortedChunk <= length ? p : p % length);
    });
  } else if constexpr (kPayload == PayloadKind::kValue) {
    Value* out = static_cast<Value*>(call.out_payload) + base;
    const Value* values = static_cast<const Value*>(call.values) + base;
    copy_kept(out, n, kept_chunk, aligned16(out), [&](int j) { return __ldg(values + j); });
  }
}

// Enqueues the row flags of `call` (every row's flag set, then the check and the sorted chunks'
// stores): the sort's first launches where it has passes (call.length > 1: shorter rows would get
// flags that say sorted and no copy).
template <typename Traits, PayloadKind kPayload, typename Value>
cudaError_t launch_sorted_copy(const SortCall& call, cudaStream_t stream) {
  const IsSortedCall order{call.key_type, call.descending, call.rows, call.length, call.keys,
                           call.row_sorted};
  return launch_row_flags(order, sorted_copy_kernel<Traits, kPayload, Value>, stream, call, order,
                          order_mask<Traits>(call.key_type, call.descending));
}

}  // namespace jax_mergepath
