// radix_u16.cu: CUB's radix sort of 16-bit order keys (radix_cub.h), its own translation unit
// (CUB's kernels compile slowly; the instances build in parallel).
#include "../radix_cub.cuh"

namespace jax_mergepath {

template cudaError_t cub_radix_sort<uint16_t, false>(void*, size_t*, RadixBuffers<uint16_t>&, int,
                                                       int, cudaStream_t);
template cudaError_t cub_radix_sort<uint16_t, true>(void*, size_t*, RadixBuffers<uint16_t>&, int,
                                                      int, cudaStream_t);

}  // namespace jax_mergepath
