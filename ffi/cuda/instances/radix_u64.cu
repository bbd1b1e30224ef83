// radix_u64.cu: CUB's radix sort of 64-bit order keys (radix_cub.h), its own translation unit
// (CUB's kernels compile slowly; the instances build in parallel).
#include "../radix_cub.cuh"

namespace jax_mergepath {

template cudaError_t cub_radix_sort<uint64_t>(void*, size_t*, RadixBuffers<uint64_t>&, int,
                                                int, cudaStream_t);

}  // namespace jax_mergepath
