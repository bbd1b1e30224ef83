// query_launch.cuh (level: launch): the CUDA queries of one key traits (declared in
// per_traits.h, instantiated in instances/queries.cu): co_rank and searchsorted's binary
// searches a thread a query, is_sorted a memset of the row flags then a thread a chunk
// (kernels/query_kernels.cuh); searchsorted of sorted queries is one merge path with a ranks
// payload (merge_for_traits: launch/merge_launch.cuh). All on `stream`, no allocation, no host
// sync (graph-safe); each returns the first CUDA error met.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "../block/grid_launch.cuh"
#include "../kernels/query_kernels.cuh"
#include "jax_mergepath/call_args.h"
#include "jax_mergepath/tuning/merge.h"
#include "per_traits.h"

namespace jax_mergepath {

template <typename Traits>
cudaError_t co_rank_for_traits(const CoRankCall& call, cudaStream_t stream) {
  const int64_t total = call.rows * call.queries;
  if (total == 0) return cudaSuccess;
  return launch_per_unit(co_rank_kernel<Traits>, total, stream, call,
                         order_mask<Traits>(call.key_type, call.descending));
}

// The row flags start at 1 (a memset); a thread checks a chunk of kIsSortedChunk keys.
template <typename Traits>
cudaError_t is_sorted_for_traits(const IsSortedCall& call, cudaStream_t stream) {
  return launch_row_flags(call, is_sorted_kernel<Traits>, stream, call,
                          order_mask<Traits>(call.key_type, call.descending));
}

template <typename Traits>
cudaError_t searchsorted_for_traits(const SearchCall& call, int32_t* splits,
                                    cudaStream_t stream) {
  const int64_t total = call.rows * call.queries;
  if (total == 0) return cudaSuccess;
  if (call.sorted_queries) return merge_for_traits<Traits>(search_as_merge(call), splits, stream);
  return launch_per_unit(searchsorted_kernel<Traits>, total, stream, call);
}

}  // namespace jax_mergepath
