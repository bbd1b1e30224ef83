// cuda_entry.h: plain C++ entry points of the CUDA kernels (no XLA types, no kernels here).
// Each enqueues its work on `stream` and returns the first CUDA error met (cudaSuccess if none).
// Nothing allocates or synchronizes: workspaces are the caller's buffers, sized by tuning.h
// (merge_workspace_elements, sort_partition_elements), so the calls are safe in CUDA graphs.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "jax_mergepath/call_args.h"

namespace jax_mergepath {

cudaError_t merge_cuda(const MergeCall& call, int32_t* workspace, cudaStream_t stream);
cudaError_t sort_cuda(const SortCall& call, int32_t* splits, cudaStream_t stream);
cudaError_t co_rank_cuda(const CoRankCall& call, cudaStream_t stream);
cudaError_t is_sorted_cuda(const IsSortedCall& call, cudaStream_t stream);
// Sorted queries: a merge of (v, a) or (a, v) with a ranks payload (splits: its workspace).
cudaError_t searchsorted_cuda(const SearchCall& call, int32_t* splits, cudaStream_t stream);

}  // namespace jax_mergepath
