// merge_u32_f32.cu: the merge kernels of 32-bit keys (int32, uint32, float32): explicit instances
// of merge_for_traits (kernel_traits.h), a few key traits a translation unit so they compile in
// parallel.
#include "../merge_dispatch.cuh"

namespace jax_mergepath {

template cudaError_t merge_for_traits<U32Key>(const MergeCall&, int32_t*, cudaStream_t);
template cudaError_t merge_for_traits<F32Key>(const MergeCall&, int32_t*, cudaStream_t);

}  // namespace jax_mergepath
