// kernel_traits.h: the key traits the CUDA kernels are instantiated for, and the per-traits
// entry points of the merge and the sort. visit_key_type (key_types.h) maps every key dtype to
// one of these traits; ffi/cuda/instances/ instantiates each entry point for each traits, a few
// traits a translation unit, so the instances compile in parallel (a traits missing there is a
// link error). merge_cuda.cu and sort_cuda.cu dispatch to them and see no kernel code.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "jax_mergepath/call_args.h"

namespace jax_mergepath {

// One batched merge (merge_dispatch.cuh), for keys of `Traits`.
template <typename Traits>
cudaError_t merge_for_traits(const MergeCall& call, int32_t* workspace, cudaStream_t stream);

// One sort (sort_dispatch.cuh), for keys of `Traits`.
template <typename Traits>
cudaError_t sort_for_traits(const SortCall& call, int32_t* splits, int64_t splits_elements,
                            cudaStream_t stream);

}  // namespace jax_mergepath
