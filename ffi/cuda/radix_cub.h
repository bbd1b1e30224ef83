// radix_cub.h: the radix path's one call into CUB (radix_sort.cuh): a stable LSD radix sort of
// n unsigned order keys, bits [0, end_bit), with 4-byte values alongside (kPairs) or none
// (buffers.values unused), ping-ponging
// between keys[0] / keys[1] (values[0] / values[1]); the sorted data ends in keys[*key_side]
// (values[*value_side]). With temp == nullptr it only writes CUB's temporary storage size to
// *temp_bytes (host arithmetic, no launch). Enqueued on `stream`; CUB allocates nothing here
// (the caller's temp) and syncs nothing (graph-safe). Instantiated per key width in
// ffi/cuda/instances/radix_*.cu (radix_cub.cuh) for the widths and kPairs that tuning.h
// cub_radix_possible admits (one-byte keys alone are the counting sort's: no instance).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace jax_mergepath {

template <typename Bits>
struct RadixBuffers {
  Bits* keys[2];
  uint32_t* values[2];
  int key_side = 0, value_side = 0;
};

template <typename Bits, bool kPairs>
cudaError_t cub_radix_sort(void* temp, size_t* temp_bytes, RadixBuffers<Bits>& buffers, int n,
                           int end_bit, cudaStream_t stream);

}  // namespace jax_mergepath
