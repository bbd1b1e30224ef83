// co_rank_kernel.cu: batched co_rank queries on the GPU, one thread per query, on the shared
// merge-path search (merge_path.h). Reads stay inside each row; k is clamped to [0, m + n].
#include <cuda_runtime.h>

#include "jax_mergepath/merge_path.h"
#include "merge_launch.h"

namespace jax_mergepath {
namespace {

template <typename Traits>
__global__ void co_rank_kernel(CoRankCall call, typename Traits::Bits flip) {
  using Bits = typename Traits::Bits;
  const int64_t q = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (q >= call.rows * call.queries) return;
  const int64_t row = q / call.queries;
  const Bits* a = static_cast<const Bits*>(call.a) + row * call.m;
  const Bits* b = static_cast<const Bits*>(call.b) + row * call.n;
  auto key_a = [&](int64_t i) { return directed_key<Traits>(__ldg(a + i), flip); };
  auto key_b = [&](int64_t j) { return directed_key<Traits>(__ldg(b + j), flip); };
  const int64_t k = clamp_length(call.k[q], call.m + call.n);
  call.out[q] = static_cast<int32_t>(co_rank(k, call.m, call.n, call.m, call.n, key_a, key_b));
}

}  // namespace

cudaError_t co_rank_cuda(const CoRankCall& call, cudaStream_t stream) {
  const int64_t total = call.rows * call.queries;
  if (total == 0) return cudaSuccess;
  constexpr int kThreads = 256;
  const unsigned blocks = static_cast<unsigned>((total + kThreads - 1) / kThreads);
  return visit_key_type(call.key_type, [&](auto traits) {
    using Traits = decltype(traits);
    co_rank_kernel<Traits><<<blocks, kThreads, 0, stream>>>(
        call, direction_mask<Traits>(call.descending));
    return cudaGetLastError();
  });
}

}  // namespace jax_mergepath
