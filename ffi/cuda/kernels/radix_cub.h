// radix_cub.h (level: kernels): the radix path's calls into CUB (radix_sort.cuh), stable LSD radix
// sorts of one row of n keys, enqueued on `stream`; CUB allocates nothing here (the caller's temp)
// and syncs nothing (graph-safe). With temp == nullptr each only writes CUB's temporary storage
// size to *temp_bytes (host arithmetic, no launch).
//   cub_radix_sort: n unsigned order keys, bits [0, end_bit), with 4-byte values alongside
//     (kPairs) or none (buffers.values unused), ping-ponging between keys[0] / keys[1]
//     (values[0] / values[1]); the sorted data ends in keys[*key_side] (values[*value_side]).
//   cub_radix_sort_direct: n keys of their own type Key (signed or unsigned integers; floats,
//     CubFloat: CUB's float order, -0.0 tied with +0.0, NaNs by their bits at both ends),
//     ascending, from keys_in (never written) into keys_out, with 4-byte values from values_in
//     into values_out (kPairs) or none (both unused), CUB's spare buffers inside temp.
//   cub_segmented_radix_sort, cub_segmented_radix_sort_keys_direct: the same over rows x length
//     keys (rows > 1, each row sorted on its own; CUB's segmented sort, a block a row), the
//     direct one for keys alone.
// Keys alone run with 64-bit offsets, pairs with 32-bit ones: CUB 3.0.1's sm_90 tiles for those
// measured fastest (docs/performance.md, "Radix dispatch"); both forms of one key type and
// kPairs share its kernels. Instantiated in ffi/cuda/instances/radix.cu (radix_cub.cuh) for the
// widths and kPairs that tuning/radix.h cub_radix_possible and radix_direct admit (one-byte keys
// are the counting sorts': no instance; 8-byte keys only direct, alone; rows only 2-byte keys;
// floats of 2 and 4 bytes direct alone).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "jax_mergepath/ordering.h"

namespace jax_mergepath {

// The CUB key type of a float key dtype's traits (ordering.h): CUB sorts it as that float.
template <typename Traits>
struct CubFloat;
template <>
struct CubFloat<F16Key> {
  using type = __half;
};
template <>
struct CubFloat<BF16Key> {
  using type = __nv_bfloat16;
};
template <>
struct CubFloat<F32Key> {
  using type = float;
};

template <typename Bits>
struct RadixBuffers {
  Bits* keys[2];
  uint32_t* values[2];
  int key_side = 0, value_side = 0;
};

template <typename Bits, bool kPairs>
cudaError_t cub_radix_sort(void* temp, size_t* temp_bytes, RadixBuffers<Bits>& buffers, int64_t n,
                           int end_bit, cudaStream_t stream);

template <typename Key, bool kPairs>
cudaError_t cub_radix_sort_direct(void* temp, size_t* temp_bytes, const Key* keys_in,
                                  Key* keys_out, const uint32_t* values_in, uint32_t* values_out,
                                  int64_t n, cudaStream_t stream);

template <typename Bits, bool kPairs>
cudaError_t cub_segmented_radix_sort(void* temp, size_t* temp_bytes, RadixBuffers<Bits>& buffers,
                                     int64_t rows, int64_t length, int end_bit,
                                     cudaStream_t stream);

template <typename Key>
cudaError_t cub_segmented_radix_sort_keys_direct(void* temp, size_t* temp_bytes,
                                                 const Key* keys_in, Key* keys_out, int64_t rows,
                                                 int64_t length, cudaStream_t stream);

}  // namespace jax_mergepath
