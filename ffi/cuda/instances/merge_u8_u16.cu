// merge_u8_u16.cu (level: instances): the merge kernels of 8- and 16-bit integer keys (bool, int8,
// uint8, int16, uint16): explicit instances of merge_for_traits (launch/per_traits.h; its body
// launch/merge_launch.cuh), a few key traits a translation unit so they compile in parallel.
#include "../launch/merge_launch.cuh"

namespace jax_mergepath {

template cudaError_t merge_for_traits<U8Key>(const MergeCall&, int32_t*, cudaStream_t);
template cudaError_t merge_for_traits<U16Key>(const MergeCall&, int32_t*, cudaStream_t);

}  // namespace jax_mergepath
