// cuda_entry.h (level: entry): plain C++ entry points of the CUDA kernels (no XLA types, no kernels
// here). Each enqueues its work on `stream` and returns the first CUDA error met (cudaSuccess if
// none). Nothing allocates or synchronizes: workspaces are the caller's buffers, sized by
// tuning/workspace.h
// (merge_workspace_elements, sort_partition_elements), so the calls are safe in CUDA graphs.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "jax_mergepath/call_args.h"

namespace jax_mergepath {

cudaError_t merge_cuda(const MergeCall& call, int32_t* workspace, cudaStream_t stream);
// workspace: ragged_merge_workspace_elements int32 (tuning/workspace.h).
cudaError_t ragged_merge_cuda(const RaggedMergeCall& call, int32_t* workspace,
                              cudaStream_t stream);
// splits: the partition workspace of splits_elements int32 (tuning/workspace.h
// sort_partition_elements).
cudaError_t sort_cuda(const SortCall& call, int32_t* splits, int64_t splits_elements,
                      cudaStream_t stream);
// CUB's temporary storage bytes for the radix path's sort of rows x n order keys of key_bytes,
// with a 4-byte payload or none, or direct (integer keys, out of place) (host arithmetic for
// the current device; a test hook of tuning/workspace.h's bound).
cudaError_t radix_temp_bytes(int key_bytes, bool payload, bool direct, int64_t rows, int64_t n,
                             size_t* bytes);
// Whether CUB sorts 2-byte keys by onesweep on every architecture built (sm_90 and newer): only
// then does tuning/workspace.h's bound hold their direct radix sort's temporary storage (below,
// CUB's older passes add a spine that grows with the SM count).
bool short_keys_onesweep();
cudaError_t co_rank_cuda(const CoRankCall& call, cudaStream_t stream);
cudaError_t is_sorted_cuda(const IsSortedCall& call, cudaStream_t stream);
// Sorted queries: a merge of (v, a) or (a, v) with a ranks payload (splits: its workspace).
cudaError_t searchsorted_cuda(const SearchCall& call, int32_t* splits, cudaStream_t stream);

}  // namespace jax_mergepath
