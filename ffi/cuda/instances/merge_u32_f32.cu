// merge_u32_f32.cu (level: instances): the merge kernels of 32-bit keys (int32, uint32, float32):
// explicit instances of merge_for_traits (launch/per_traits.h; its body launch/merge_launch.cuh), a
// few key traits a translation unit so they compile in parallel.
#include "../launch/merge_launch.cuh"

namespace jax_mergepath {

template cudaError_t merge_for_traits<U32Key>(const MergeCall&, int32_t*, cudaStream_t);
template cudaError_t merge_for_traits<F32Key>(const MergeCall&, int32_t*, cudaStream_t);

}  // namespace jax_mergepath
