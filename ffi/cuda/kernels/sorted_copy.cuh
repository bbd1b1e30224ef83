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

// Copies the elements [0, n) of a block's span (its kQueryThreads chunks: keys or payload) to
// `out` where kept_chunk[j / kIsSortedChunk], in 16-byte pieces a thread at a time across the
// block (coalesced): piece(q) gives piece q whole (where `aligned` and it lies before n), one(j)
// element j (at the span's end, or where `out` or the source is not 16-byte aligned).
template <typename T, typename Piece, typename One>
__device__ __forceinline__ void copy_kept(T* out, int64_t n, const bool* kept_chunk,
                                          bool aligned, const Piece& piece, const One& one) {
  constexpr int kPer = 16 / int(sizeof(T));
  constexpr int kPieces = kQueryThreads * kIsSortedChunk / kPer;
  for (int q = static_cast<int>(threadIdx.x); q < kPieces; q += kQueryThreads) {
    const int j0 = q * kPer;
    if (j0 >= n || !kept_chunk[j0 / kIsSortedChunk]) continue;
    if (aligned && j0 + kPer <= n) {
      reinterpret_cast<uint4*>(out)[q] = piece(q);
    } else {
      for (int j = j0; j < n && j < j0 + kPer; ++j) out[j] = one(j);
    }
  }
}

// A 16-byte piece of T made element by element: make(j) for its elements from j0.
template <typename T, typename Make>
__device__ __forceinline__ uint4 make_piece(int j0, const Make& make) {
  uint4 piece;
  T* items = reinterpret_cast<T*>(&piece);
#pragma unroll
  for (int c = 0; c < 16 / int(sizeof(T)); ++c) items[c] = make(j0 + c);
  return piece;
}

// Where a block stages its chunks' keys: piece v of chunk t (kVecs pieces of 16 bytes a chunk)
// at slot t * kVecs + (v + t / kSpread) % kVecs, so the eight threads of a 16-byte store's phase
// write eight distinct bank groups, and consecutive pieces (the copy's reads) stay distinct too.
template <int kVecs>
__device__ __forceinline__ int stage_slot(int chunk, int v) {
  constexpr int kSpread = kVecs >= 8 ? 1 : 8 / kVecs;
  return chunk * kVecs + (v + chunk / kSpread) % kVecs;
}

// order: the call's keys and row flags (the launcher set the flags first); Value: the payload's
// element (argsort's int32 positions, the values' bits, or unused). A thread checks a chunk;
// then the block copies its span's kept chunks (check_sorted_chunk's keep) in coalesced 16-byte
// pieces: the keys as the check loaded them (staged in shared memory), the positions from each
// chunk's place in its row, the values from the input.
template <typename Traits, PayloadKind kPayload, typename Value>
__global__ void __launch_bounds__(kQueryThreads)
    sorted_copy_kernel(SortCall call, IsSortedCall order, typename Traits::Bits flip) {
  grid_prologue();
  using Bits = typename Traits::Bits;
  __shared__ bool kept_chunk[kQueryThreads];
  __shared__ int64_t chunk_start[kPayload == PayloadKind::kIndex ? kQueryThreads : 1];
  constexpr int kPer = 16 / int(sizeof(Bits)), kVecs = kIsSortedChunk / kPer;
  __shared__ uint4 stage[kQueryThreads * kVecs];
  const int64_t unit = int64_t{blockIdx.x} * kQueryThreads + threadIdx.x;
  bool kept = false;
  check_sorted_chunk<Traits>(order, flip, unit, [&](int64_t in_row, const auto& key) {
    kept = true;
    if constexpr (kPayload == PayloadKind::kIndex) chunk_start[threadIdx.x] = in_row;
#pragma unroll
    for (int v = 0; v < kVecs; ++v) {
      stage[stage_slot<kVecs>(threadIdx.x, v)] =
          make_piece<Bits>(v * kPer, [&](int c) { return key[c]; });
    }
  });
  kept_chunk[threadIdx.x] = kept;
  if (__syncthreads_or(kept) == 0) return;  // (random rows: no chunk kept)
  const int64_t base = int64_t{blockIdx.x} * kQueryThreads * kIsSortedChunk;
  const int64_t total = order.rows * order.length;
  const int64_t n = total - base < int64_t{kQueryThreads} * kIsSortedChunk
                        ? total - base
                        : int64_t{kQueryThreads} * kIsSortedChunk;
  Bits* out_keys = static_cast<Bits*>(call.out_keys) + base;
  const Bits* staged = reinterpret_cast<const Bits*>(stage);
  copy_kept(
      out_keys, n, kept_chunk, aligned16(out_keys),
      [&](int q) { return stage[stage_slot<kVecs>(q / kVecs, q % kVecs)]; },
      [&](int j) {
        const int q = j / kPer;
        return staged[stage_slot<kVecs>(q / kVecs, q % kVecs) * kPer + j % kPer];
      });
  if constexpr (kPayload == PayloadKind::kIndex) {
    Value* out = static_cast<Value*>(call.out_payload) + base;
    // positions in the row, from zero again where a chunk crosses a row end
    const int64_t length = call.length;
    auto position = [&](int j) {
      const int64_t start = chunk_start[j / kIsSortedChunk];
      const int64_t p = start + j % kIsSortedChunk;
      return static_cast<Value>(start + kIsSortedChunk <= length ? p : p % length);
    };
    copy_kept(
        out, n, kept_chunk, aligned16(out),
        [&](int q) { return make_piece<Value>(q * (16 / int(sizeof(Value))), position); },
        position);
  } else if constexpr (kPayload == PayloadKind::kValue) {
    Value* out = static_cast<Value*>(call.out_payload) + base;
    const Value* values = static_cast<const Value*>(call.values) + base;
    copy_kept(
        out, n, kept_chunk, aligned16(out),
        [&](int q) {
          return aligned16(values) ? __ldg(reinterpret_cast<const uint4*>(values) + q)
                                   : make_piece<Value>(q * (16 / int(sizeof(Value))),
                                                       [&](int j) { return __ldg(values + j); });
        },
        [&](int j) { return __ldg(values + j); });
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
