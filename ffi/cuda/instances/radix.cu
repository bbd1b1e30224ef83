// radix.cu (level: instances): CUB's radix sorts (radix_cub.h), every instance in one translation
// unit: most of its compile time is CUB's headers, paid once (docs/performance.md, "Kernel
// instances"). Order keys of 2 and 4 bytes alone and with a 4-byte payload; integer keys direct, as
// their own signed or unsigned type (the unsigned ones share the order keys' kernels): 2 and 4
// bytes alone and with 4-byte values, 8 bytes alone; float keys of 2 and 4 bytes alone direct, as
// CUB's floats (tuning/radix.h radix_direct); rows (CUB's segmented sort) of 2-byte order keys
// alone and with a 4-byte payload, and of 2-byte integer keys alone direct.
#include "../kernels/radix_cub.cuh"

namespace jax_mergepath {

#define JMP_RADIX_DIRECT(KEY, PAIRS)                                                          \
  template cudaError_t cub_radix_sort_direct<KEY, PAIRS>(void*, size_t*, const KEY*, KEY*,    \
                                                         const uint32_t*, uint32_t*, int64_t, \
                                                         cudaStream_t);
#define JMP_RADIX_ORDER_KEYS(BITS, PAIRS)                                                      \
  template cudaError_t cub_radix_sort<BITS, PAIRS>(void*, size_t*, RadixBuffers<BITS>&, int64_t, \
                                                   int, cudaStream_t);

JMP_RADIX_ORDER_KEYS(uint16_t, false)
JMP_RADIX_ORDER_KEYS(uint16_t, true)
JMP_RADIX_ORDER_KEYS(uint32_t, false)
JMP_RADIX_ORDER_KEYS(uint32_t, true)
JMP_RADIX_DIRECT(uint16_t, false)
JMP_RADIX_DIRECT(uint16_t, true)
JMP_RADIX_DIRECT(int16_t, false)
JMP_RADIX_DIRECT(int16_t, true)
JMP_RADIX_DIRECT(uint32_t, false)
JMP_RADIX_DIRECT(uint32_t, true)
JMP_RADIX_DIRECT(int32_t, false)
JMP_RADIX_DIRECT(int32_t, true)
JMP_RADIX_DIRECT(__half, false)
JMP_RADIX_DIRECT(__nv_bfloat16, false)
JMP_RADIX_DIRECT(float, false)
JMP_RADIX_DIRECT(uint64_t, false)
JMP_RADIX_DIRECT(int64_t, false)

template cudaError_t cub_segmented_radix_sort<uint16_t, false>(void*, size_t*,
                                                               RadixBuffers<uint16_t>&, int64_t,
                                                               int64_t, int, cudaStream_t);
template cudaError_t cub_segmented_radix_sort<uint16_t, true>(void*, size_t*,
                                                              RadixBuffers<uint16_t>&, int64_t,
                                                              int64_t, int, cudaStream_t);
template cudaError_t cub_segmented_radix_sort_keys_direct<uint16_t>(void*, size_t*,
                                                                    const uint16_t*, uint16_t*,
                                                                    int64_t, int64_t,
                                                                    cudaStream_t);
template cudaError_t cub_segmented_radix_sort_keys_direct<int16_t>(void*, size_t*,
                                                                   const int16_t*, int16_t*,
                                                                   int64_t, int64_t,
                                                                   cudaStream_t);

}  // namespace jax_mergepath
