// merge_cuda.cu: merge_cuda, the CUDA batched merge's entry point (cuda_entry.h): the key
// type of the call -> launch_merge (merge_dispatch.cuh).
#include <cuda_runtime.h>

#include "merge_dispatch.cuh"
#include "cuda_entry.h"

namespace jax_mergepath {

cudaError_t merge_cuda(const MergeCall& call, int32_t* workspace, cudaStream_t stream) {
  return visit_key_type(call.key_type, [&](auto traits) -> cudaError_t {
    return launch_merge_for_payload<decltype(traits)>(call, workspace, stream);
  });
}

}  // namespace jax_mergepath
