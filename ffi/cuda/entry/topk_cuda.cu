// topk_cuda.cu (level: entry): topk_cuda (topk_entry.h), the CUDA top_k's entry point:
// launch/topk_launch.cuh's launches, compiled once, with the library's sort launchers
// (instances/sort_*.cu) for the candidates of larger k.
#include "../launch/topk_launch.cuh"
#include "topk_entry.h"

namespace jax_mergepath {

cudaError_t topk_cuda(const TopkCall& call, void* workspace, int64_t workspace_bytes,
                      cudaStream_t stream) {
  return topk::topk_launch(call, workspace, workspace_bytes, stream);
}

}  // namespace jax_mergepath
