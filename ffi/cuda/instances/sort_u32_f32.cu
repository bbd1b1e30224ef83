// sort_u32_f32.cu (level: instances): the sort kernels of 32-bit keys (int32, uint32, float32):
// explicit instances of sort_for_traits (launch/per_traits.h; its body launch/sort_launch.cuh) and
// of ragged_merge_for_traits (kernels/ragged_merge.cuh, the eight-way pass's kin), a
// few key traits a translation unit so they compile in parallel.
#include "../kernels/ragged_merge.cuh"
#include "../launch/sort_launch.cuh"

namespace jax_mergepath {

template cudaError_t sort_for_traits<U32Key>(const SortCall&, int32_t*, int64_t, cudaStream_t);
template cudaError_t sort_for_traits<F32Key>(const SortCall&, int32_t*, int64_t, cudaStream_t);
template cudaError_t ragged_merge_for_traits<U32Key>(const RaggedMergeCall&, int32_t*,
                                                      cudaStream_t);
template cudaError_t ragged_merge_for_traits<F32Key>(const RaggedMergeCall&, int32_t*,
                                                      cudaStream_t);

}  // namespace jax_mergepath
