// sorted_copy.cuh (level: kernels): a merge sort's row flags (SortCall::row_sorted) with its sorted
// rows already in the outputs. A thread checks a chunk of kIsSortedChunk keys as is_sorted_kernel
// does (query_kernels.cuh check_sorted_chunk) and stores every chunk that may belong to a sorted
// row (in order inside one row, or crossing a row end) to out_keys, with its payload (argsort's
// positions, or the values). So a sorted row costs one read and one write: the block sort leaves
// it alone (block_sort.cuh) and its passes are empty (row_done). The chunks of rows found unsorted
// later were stored for nothing (the passes write every output of such a row): at most one
// write more, where chunks of an unsorted row are in order (nearly sorted rows); random rows'
// chunks are out of order at once, or skipped once their row is known unsorted.
// Sort passes only; device code only: no allocation, no host call.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "../block/grid_launch.cuh"
#include "jax_mergepath/call_args.h"
#include "query_kernels.cuh"

namespace jax_mergepath {

// count elements from `src` (or from the generator fill(c)) to dst, 16-byte stores where
// `vector` (count is kIsSortedChunk then) and dst is 16-byte aligned.
template <typename T, typename Fill>
__device__ __forceinline__ void store_chunk(T* dst, int count, bool vector, const Fill& fill) {
  constexpr int kPer = 16 / int(sizeof(T));
  if (vector && (reinterpret_cast<uintptr_t>(dst) & 15u) == 0) {
#pragma unroll
    for (int v = 0; v < kIsSortedChunk / kPer; ++v) {
      uint4 part;
      T* items = reinterpret_cast<T*>(&part);
#pragma unroll
      for (int c = 0; c < kPer; ++c) items[c] = fill(v * kPer + c);
      reinterpret_cast<uint4*>(dst)[v] = part;
    }
  } else {
#pragma unroll
    for (int c = 0; c < kIsSortedChunk; ++c) {
      if (c < count) dst[c] = fill(c);
    }
  }
}

// order: the call's keys and row flags (the launcher set the flags first); Value: the payload's
// element (argsort's int32 positions, the values' bits, or unused).
template <typename Traits, PayloadKind kPayload, typename Value>
__global__ void sorted_copy_kernel(SortCall call, IsSortedCall order, typename Traits::Bits flip) {
  grid_prologue();
  using Bits = typename Traits::Bits;
  const int64_t unit = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  check_sorted_chunk<Traits>(order, flip, unit, [&](const SortedChunk<Traits>& chunk) {
    const bool full = chunk.stored == kIsSortedChunk;
    store_chunk(static_cast<Bits*>(call.out_keys) + chunk.e0, chunk.stored, chunk.vector,
                [&](int c) { return chunk.key[c]; });
    Value* out = static_cast<Value*>(call.out_payload) + chunk.e0;
    if constexpr (kPayload == PayloadKind::kIndex) {
      // positions in the row, from zero again where the chunk crosses a row end
      int64_t position[kIsSortedChunk];
      int64_t p = chunk.in_row;
#pragma unroll
      for (int c = 0; c < kIsSortedChunk; ++c) {
        position[c] = p;
        p = p + 1 == call.length ? 0 : p + 1;
      }
      store_chunk(out, chunk.stored, full,
                  [&](int c) { return static_cast<Value>(position[c]); });
    } else if constexpr (kPayload == PayloadKind::kValue) {
      const Value* in = static_cast<const Value*>(call.values) + chunk.e0;
      constexpr int kPer = 16 / int(sizeof(Value));
      Value value[kIsSortedChunk];
      const bool vector = full && (reinterpret_cast<uintptr_t>(in) & 15u) == 0;
      if (vector) {
#pragma unroll
        for (int v = 0; v < kIsSortedChunk / kPer; ++v) {
          const uint4 part = __ldg(reinterpret_cast<const uint4*>(in) + v);
          const Value* items = reinterpret_cast<const Value*>(&part);
#pragma unroll
          for (int c = 0; c < kPer; ++c) value[v * kPer + c] = items[c];
        }
      } else {
#pragma unroll
        for (int c = 0; c < kIsSortedChunk; ++c) {
          value[c] = c < chunk.stored ? __ldg(in + c) : Value(0);
        }
      }
      store_chunk(out, chunk.stored, full, [&](int c) { return value[c]; });
    }
  });
}

// Enqueues the row flags of `call` (every row's flag set, then the check and the sorted chunks'
// stores): the sort's first launches where it has passes.
template <typename Traits, PayloadKind kPayload, typename Value>
cudaError_t launch_sorted_copy(const SortCall& call, cudaStream_t stream) {
  const IsSortedCall order{call.key_type, call.descending, call.rows, call.length, call.keys,
                           call.row_sorted};
  return launch_row_flags(order, sorted_copy_kernel<Traits, kPayload, Value>, stream, call, order,
                          order_mask<Traits>(call.key_type, call.descending));
}

}  // namespace jax_mergepath
