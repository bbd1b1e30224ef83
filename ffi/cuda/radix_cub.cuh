// radix_cub.cuh: the definition of cub_radix_sort (radix_cub.h) over cub::DeviceRadixSort with
// DoubleBuffers (no extra key or value buffer in the temporary storage: tuning.h
// radix_workspace_elements bounds the rest). Included only by ffi/cuda/instances/radix_*.cu.
#pragma once

#include <cub/device/device_radix_sort.cuh>

#include "radix_cub.h"

namespace jax_mergepath {

template <typename Bits, bool kPairs>
cudaError_t cub_radix_sort(void* temp, size_t* temp_bytes, RadixBuffers<Bits>& buffers, int n,
                           int end_bit, cudaStream_t stream) {
  cub::DoubleBuffer<Bits> keys(buffers.keys[0], buffers.keys[1]);
  cudaError_t err;
  if constexpr (!kPairs) {
    err = cub::DeviceRadixSort::SortKeys(temp, *temp_bytes, keys, n, 0, end_bit, stream);
  } else {
    cub::DoubleBuffer<uint32_t> values(buffers.values[0], buffers.values[1]);
    err = cub::DeviceRadixSort::SortPairs(temp, *temp_bytes, keys, values, n, 0, end_bit, stream);
    buffers.value_side = values.selector;
  }
  buffers.key_side = keys.selector;
  return err;
}

}  // namespace jax_mergepath
