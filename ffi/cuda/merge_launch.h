// merge_launch.h: plain C++ entry points of the CUDA kernels (no XLA types, no kernels here).
// Each enqueues its work on `stream` and returns the first CUDA error met (cudaSuccess if none).
// Nothing allocates or synchronizes: the merge's partition workspace is the caller's buffer of
// merge_workspace_elements() int32 (tuning.h), so the calls are safe inside CUDA graphs.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "jax_mergepath/merge_args.h"

namespace jax_mergepath {

cudaError_t merge_cuda(const MergeCall& call, int32_t* workspace, cudaStream_t stream);
cudaError_t co_rank_cuda(const CoRankCall& call, cudaStream_t stream);
cudaError_t is_sorted_cuda(const IsSortedCall& call, cudaStream_t stream);

}  // namespace jax_mergepath
