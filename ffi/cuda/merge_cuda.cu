// merge_cuda.cu: merge_cuda, the CUDA batched merge's entry point (cuda_entry.h): the key
// type of the call -> merge_for_traits of its kernel traits (kernel_traits.h; the kernels are
// compiled in ffi/cuda/instances/).
#include <cuda_runtime.h>

#include "cuda_entry.h"
#include "kernel_traits.h"

namespace jax_mergepath {

cudaError_t merge_cuda(const MergeCall& call, int32_t* workspace, cudaStream_t stream) {
  return visit_key_type(call.key_type, [&](auto traits) -> cudaError_t {
    return merge_for_traits<decltype(traits)>(call, workspace, stream);
  });
}

}  // namespace jax_mergepath
