// radix_16.cu: CUB's radix sorts of 16-bit keys (radix_cub.h): unsigned order keys alone and with
// a 4-byte payload, and integer keys direct, alone and with 4-byte values, unsigned (sharing the
// first two's kernels) and signed (CUB orders them by their own sign); one translation unit a
// width (CUB's headers take most of its compile time; the widths build in parallel).
#include "../radix_cub.cuh"

namespace jax_mergepath {

template cudaError_t cub_radix_sort<uint16_t, false>(void*, size_t*, RadixBuffers<uint16_t>&,
                                                       int64_t, int, cudaStream_t);
template cudaError_t cub_radix_sort<uint16_t, true>(void*, size_t*, RadixBuffers<uint16_t>&,
                                                      int64_t, int, cudaStream_t);
template cudaError_t cub_radix_sort_direct<uint16_t, false>(void*, size_t*, const uint16_t*,
                                                             uint16_t*, const uint32_t*,
                                                             uint32_t*, int64_t, cudaStream_t);
template cudaError_t cub_radix_sort_direct<uint16_t, true>(void*, size_t*, const uint16_t*,
                                                            uint16_t*, const uint32_t*,
                                                            uint32_t*, int64_t, cudaStream_t);
template cudaError_t cub_radix_sort_direct<int16_t, false>(void*, size_t*, const int16_t*,
                                                            int16_t*, const uint32_t*, uint32_t*,
                                                            int64_t, cudaStream_t);
template cudaError_t cub_radix_sort_direct<int16_t, true>(void*, size_t*, const int16_t*,
                                                           int16_t*, const uint32_t*, uint32_t*,
                                                           int64_t, cudaStream_t);

}  // namespace jax_mergepath
