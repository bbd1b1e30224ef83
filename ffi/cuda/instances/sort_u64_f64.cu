// sort_u64_f64.cu (level: instances): the sort kernels of 64-bit keys (int64, uint64, float64):
// explicit instances of sort_for_traits (launch/per_traits.h; its body launch/sort_launch.cuh) and
// of ragged_merge_for_traits (kernels/ragged_merge.cuh, the eight-way pass's kin), a
// few key traits a translation unit so they compile in parallel.
#include "../kernels/ragged_merge.cuh"
#include "../launch/sort_launch.cuh"

namespace jax_mergepath {

template cudaError_t sort_for_traits<U64Key>(const SortCall&, int32_t*, int64_t, cudaStream_t);
template cudaError_t sort_for_traits<F64Key>(const SortCall&, int32_t*, int64_t, cudaStream_t);
template cudaError_t ragged_merge_for_traits<U64Key>(const RaggedMergeCall&, int32_t*,
                                                      cudaStream_t);
template cudaError_t ragged_merge_for_traits<F64Key>(const RaggedMergeCall&, int32_t*,
                                                      cudaStream_t);

}  // namespace jax_mergepath
