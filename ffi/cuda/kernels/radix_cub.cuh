// radix_cub.cuh (level: kernels): the definitions of radix_cub.h's calls over cub::DeviceRadixSort
// and cub::DeviceSegmentedRadixSort: DoubleBuffers (no extra key or value buffer in the temporary
// storage) or, direct, out of place (an extra key and value buffer); tuning/workspace.h
// radix_workspace_elements bounds either. Included only by ffi/cuda/instances/radix.cu.
#pragma once

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>

#include "radix_cub.h"

namespace jax_mergepath {

template <typename Bits, bool kPairs>
cudaError_t cub_radix_sort(void* temp, size_t* temp_bytes, RadixBuffers<Bits>& buffers, int64_t n,
                           int end_bit, cudaStream_t stream) {
  cub::DoubleBuffer<Bits> keys(buffers.keys[0], buffers.keys[1]);
  cudaError_t err;
  if constexpr (!kPairs) {
    err = cub::DeviceRadixSort::SortKeys(temp, *temp_bytes, keys, n, 0, end_bit, stream);
  } else {
    cub::DoubleBuffer<uint32_t> values(buffers.values[0], buffers.values[1]);
    err = cub::DeviceRadixSort::SortPairs(temp, *temp_bytes, keys, values, static_cast<int>(n), 0,
                                          end_bit, stream);
    buffers.value_side = values.selector;
  }
  buffers.key_side = keys.selector;
  return err;
}

template <typename Key, bool kPairs>
cudaError_t cub_radix_sort_direct(void* temp, size_t* temp_bytes, const Key* keys_in,
                                  Key* keys_out, const uint32_t* values_in, uint32_t* values_out,
                                  int64_t n, cudaStream_t stream) {
  constexpr int kEndBit = 8 * int(sizeof(Key));
  if constexpr (!kPairs) {
    return cub::DeviceRadixSort::SortKeys(temp, *temp_bytes, keys_in, keys_out, n, 0, kEndBit,
                                          stream);
  } else {
    return cub::DeviceRadixSort::SortPairs(temp, *temp_bytes, keys_in, keys_out, values_in,
                                           values_out, static_cast<int>(n), 0, kEndBit, stream);
  }
}

// CUB's segment offsets of rows of `length` keys: where row r starts (shift 0) or ends (shift 1).
struct RowBounds {
  int length, shift;
  __host__ __device__ int operator[](int row) const { return (row + shift) * length; }
};

// rows x length keys as CUB's segmented sort takes them (rows * length < 2^31: tuning/radix.h
// segmented_radix_possible).
struct RowSegments {
  int items, segments;
  RowBounds starts, ends;
};

inline RowSegments row_segments(int64_t rows, int64_t length) {
  const int l = static_cast<int>(length);
  return {static_cast<int>(rows * length), static_cast<int>(rows), {l, 0}, {l, 1}};
}

template <typename Bits, bool kPairs>
cudaError_t cub_segmented_radix_sort(void* temp, size_t* temp_bytes, RadixBuffers<Bits>& buffers,
                                     int64_t rows, int64_t length, int end_bit,
                                     cudaStream_t stream) {
  cub::DoubleBuffer<Bits> keys(buffers.keys[0], buffers.keys[1]);
  const RowSegments s = row_segments(rows, length);
  cudaError_t err;
  if constexpr (!kPairs) {
    err = cub::DeviceSegmentedRadixSort::SortKeys(temp, *temp_bytes, keys, s.items, s.segments,
                                                  s.starts, s.ends, 0, end_bit, stream);
  } else {
    cub::DoubleBuffer<uint32_t> values(buffers.values[0], buffers.values[1]);
    err = cub::DeviceSegmentedRadixSort::SortPairs(temp, *temp_bytes, keys, values, s.items,
                                                   s.segments, s.starts, s.ends, 0, end_bit,
                                                   stream);
    buffers.value_side = values.selector;
  }
  buffers.key_side = keys.selector;
  return err;
}

template <typename Key>
cudaError_t cub_segmented_radix_sort_keys_direct(void* temp, size_t* temp_bytes,
                                                 const Key* keys_in, Key* keys_out, int64_t rows,
                                                 int64_t length, cudaStream_t stream) {
  const RowSegments s = row_segments(rows, length);
  return cub::DeviceSegmentedRadixSort::SortKeys(temp, *temp_bytes, keys_in, keys_out, s.items,
                                                 s.segments, s.starts, s.ends, 0,
                                                 8 * int(sizeof(Key)), stream);
}

}  // namespace jax_mergepath
