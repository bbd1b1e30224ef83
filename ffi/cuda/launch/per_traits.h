// per_traits.h (level: launch): the launchers of one key traits, the interface between the entry
// points (entry/*.cu: the call's key type -> visit_key_type, key_types.h -> one of the kernel
// traits) and the launch level. Each enqueues one whole call for keys of `Traits` on `stream`,
// allocates nothing, syncs nothing, and returns the first CUDA error met. Declarations only:
// the bodies are launch/merge_launch.cuh, sort_launch.cuh and query_launch.cuh, explicitly
// instantiated for every traits in ffi/cuda/instances/, a few traits a translation unit, so the
// instances compile in parallel and a translation unit that calls a launcher of another family
// (the sort's passes call merge_for_traits) compiles no second copy of its kernels (a traits
// missing there is a link error).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "jax_mergepath/call_args.h"

namespace jax_mergepath {

// One batched merge (merge_launch.cuh); workspace: merge_workspace_elements int32.
template <typename Traits>
cudaError_t merge_for_traits(const MergeCall& call, int32_t* workspace, cudaStream_t stream);

// One sort (sort_launch.cuh); splits: splits_elements int32, at least sort_partition_elements.
template <typename Traits>
cudaError_t sort_for_traits(const SortCall& call, int32_t* splits, int64_t splits_elements,
                            cudaStream_t stream);

// The queries (query_launch.cuh); searchsorted's splits: the workspace of its ranks merge.
template <typename Traits>
cudaError_t co_rank_for_traits(const CoRankCall& call, cudaStream_t stream);

// The ragged merge of up to eight runs a row (kernels/ragged_merge.cuh); workspace:
// ragged_merge_workspace_elements int32.
template <typename Traits>
cudaError_t ragged_merge_for_traits(const RaggedMergeCall& call, int32_t* workspace,
                                    cudaStream_t stream);

template <typename Traits>
cudaError_t is_sorted_for_traits(const IsSortedCall& call, cudaStream_t stream);

template <typename Traits>
cudaError_t searchsorted_for_traits(const SearchCall& call, int32_t* splits,
                                    cudaStream_t stream);

}  // namespace jax_mergepath
