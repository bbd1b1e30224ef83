// query_cuda.cu (level: entry): co_rank_cuda, is_sorted_cuda and searchsorted_cuda, the CUDA
// queries' entry points (cuda_entry.h): the key type of the call -> the query launcher of its
// kernel traits (launch/per_traits.h; the launchers are launch/query_launch.cuh, compiled in
// instances/queries.cu). Dispatch only: no kernel code here.
#include <cuda_runtime.h>

#include "../launch/per_traits.h"
#include "cuda_entry.h"

namespace jax_mergepath {

cudaError_t co_rank_cuda(const CoRankCall& call, cudaStream_t stream) {
  return visit_key_type(call.key_type, [&](auto traits) -> cudaError_t {
    return co_rank_for_traits<decltype(traits)>(call, stream);
  });
}

cudaError_t is_sorted_cuda(const IsSortedCall& call, cudaStream_t stream) {
  return visit_key_type(call.key_type, [&](auto traits) -> cudaError_t {
    return is_sorted_for_traits<decltype(traits)>(call, stream);
  });
}

cudaError_t searchsorted_cuda(const SearchCall& call, int32_t* splits, cudaStream_t stream) {
  return visit_key_type(call.key_type, [&](auto traits) -> cudaError_t {
    return searchsorted_for_traits<decltype(traits)>(call, splits, stream);
  });
}

}  // namespace jax_mergepath
