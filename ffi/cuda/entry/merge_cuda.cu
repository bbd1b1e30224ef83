// merge_cuda.cu (level: entry): merge_cuda, the CUDA batched merge's entry point (cuda_entry.h),
// and ragged_merge_cuda (its kernels compiled with the sorts'):
// the key type of the call -> merge_for_traits of its kernel traits (launch/per_traits.h; the
// kernels are compiled in ffi/cuda/instances/merge_*.cu). Dispatch only: no kernel code here.
#include <cuda_runtime.h>

#include "../launch/per_traits.h"
#include "cuda_entry.h"

namespace jax_mergepath {

cudaError_t merge_cuda(const MergeCall& call, int32_t* workspace, cudaStream_t stream) {
  return visit_key_type(call.key_type, [&](auto traits) -> cudaError_t {
    return merge_for_traits<decltype(traits)>(call, workspace, stream);
  });
}

cudaError_t ragged_merge_cuda(const RaggedMergeCall& call, int32_t* workspace,
                              cudaStream_t stream) {
  return visit_key_type(call.key_type, [&](auto traits) -> cudaError_t {
    return ragged_merge_for_traits<decltype(traits)>(call, workspace, stream);
  });
}

}  // namespace jax_mergepath
