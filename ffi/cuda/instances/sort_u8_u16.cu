// sort_u8_u16.cu (level: instances): the sort kernels of 8- and 16-bit integer keys (bool, int8,
// uint8, int16, uint16): explicit instances of sort_for_traits (launch/per_traits.h; its body
// launch/sort_launch.cuh), a few key traits a translation unit so they compile in parallel.
#include "../kernels/ragged_merge.cuh"
#include "../launch/sort_launch.cuh"

namespace jax_mergepath {

template cudaError_t sort_for_traits<U8Key>(const SortCall&, int32_t*, int64_t, cudaStream_t);
template cudaError_t sort_for_traits<U16Key>(const SortCall&, int32_t*, int64_t, cudaStream_t);
template cudaError_t ragged_merge_for_traits<U8Key>(const RaggedMergeCall&, int32_t*,
                                                      cudaStream_t);
template cudaError_t ragged_merge_for_traits<U16Key>(const RaggedMergeCall&, int32_t*,
                                                      cudaStream_t);

}  // namespace jax_mergepath
