// sort_cuda.cu: sort_cuda, the CUDA mergesort's entry point (cuda_entry.h): the key type of the
// call -> sort_for_traits of its kernel traits (kernel_traits.h; the sort is sort_dispatch.cuh,
// compiled in ffi/cuda/instances/).
#include <cuda_runtime.h>

#include "cuda_entry.h"
#include "kernel_traits.h"

namespace jax_mergepath {

cudaError_t sort_cuda(const SortCall& call, int32_t* splits, cudaStream_t stream) {
  return visit_key_type(call.key_type, [&](auto traits) -> cudaError_t {
    return sort_for_traits<decltype(traits)>(call, splits, stream);
  });
}

}  // namespace jax_mergepath
