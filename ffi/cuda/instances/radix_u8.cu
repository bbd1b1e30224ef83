// radix_u8.cu: CUB's radix sort of 8-bit order keys with a payload (radix_cub.h; keys alone are
// the counting sort's), its own translation unit (CUB's kernels compile slowly; the instances
// build in parallel).
#include "../radix_cub.cuh"

namespace jax_mergepath {

template cudaError_t cub_radix_sort<uint8_t, true>(void*, size_t*, RadixBuffers<uint8_t>&, int,
                                                      int, cudaStream_t);

}  // namespace jax_mergepath
