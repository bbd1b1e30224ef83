// search_kernels.cu: the GPU's query kernels on the shared core (merge_path.h):
//   co_rank: one thread per query; reads stay inside each row; k is clamped to [0, m + n];
//   is_sorted: rows start true (a memset node), every out-of-order neighbour pair clears its
//   row's flag (all writers store the same 0, so the race is benign); pairs of rows already
//   found unsorted are not read;
//   searchsorted: one thread per query (a binary search, co_rank_search), or, for sorted
//   queries, one merge path (merge_cuda with a ranks payload).
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

// Index: uint32_t when every pair index fits it (a 32-bit division a pair, not a 64-bit one).
template <typename Traits, typename Index>
__global__ void is_sorted_kernel(IsSortedCall call, typename Traits::Bits flip) {
  using Bits = typename Traits::Bits;
  const Index pairs_per_row = static_cast<Index>(call.length - 1);
  const Index total = static_cast<Index>(call.rows) * pairs_per_row;
  const Bits* x = static_cast<const Bits*>(call.x);
  for (Index q = Index{blockIdx.x} * blockDim.x + threadIdx.x; q < total;
       q += Index{gridDim.x} * blockDim.x) {
    const Index row = q / pairs_per_row;
    if (call.out[row] == 0) continue;  // already known unsorted (a stale 1 only costs a read)
    const int64_t p = static_cast<int64_t>(row) * call.length + (q - row * pairs_per_row);
    if (!in_order<Traits>(__ldg(x + p), __ldg(x + p + 1), flip)) call.out[row] = 0;
  }
}

template <typename Traits>
__global__ void searchsorted_kernel(SearchCall call) {
  using Bits = typename Traits::Bits;
  const int64_t q = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (q >= call.rows * call.queries) return;
  const int64_t row = q / call.queries;
  const Bits* a = static_cast<const Bits*>(call.a) + row * call.length;
  const Bits v = Traits::order_key(__ldg(static_cast<const Bits*>(call.v) + q));
  call.out[q] = static_cast<int32_t>(
      insertion_point<Traits>(call.length, v, call.right, [&](int64_t i) { return __ldg(a + i); }));
}

}  // namespace

cudaError_t searchsorted_cuda(const SearchCall& call, int32_t* splits, cudaStream_t stream) {
  const int64_t total = call.rows * call.queries;
  if (total == 0) return cudaSuccess;
  if (call.sorted_queries) return merge_cuda(search_as_merge(call), splits, stream);
  constexpr int kThreads = 256;
  const int64_t blocks = (total + kThreads - 1) / kThreads;
  if (blocks >= (int64_t{1} << 31)) return cudaErrorInvalidConfiguration;
  return visit_key_type(call.key_type, [&](auto traits) {
    searchsorted_kernel<decltype(traits)>
        <<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(call);
    return cudaGetLastError();
  });
}

cudaError_t is_sorted_cuda(const IsSortedCall& call, cudaStream_t stream) {
  if (call.rows == 0) return cudaSuccess;
  if (cudaError_t err = cudaMemsetAsync(call.out, 1, call.rows, stream); err != cudaSuccess) {
    return err;
  }
  const int64_t total = call.rows * (call.length > 1 ? call.length - 1 : 0);
  if (total == 0) return cudaSuccess;
  constexpr int kThreads = 256;
  const int64_t want = (total + kThreads - 1) / kThreads;
  const unsigned blocks = static_cast<unsigned>(want < 65536 ? want : 65536);
  return visit_key_type(call.key_type, [&](auto traits) {
    using Traits = decltype(traits);
    const auto flip = direction_mask<Traits>(call.descending);
    // 32-bit indices only when no thread's grid-stride step can wrap past 2^32.
    if (total + int64_t{blocks} * kThreads <= (int64_t{1} << 32)) {
      is_sorted_kernel<Traits, uint32_t><<<blocks, kThreads, 0, stream>>>(call, flip);
    } else {
      is_sorted_kernel<Traits, uint64_t><<<blocks, kThreads, 0, stream>>>(call, flip);
    }
    return cudaGetLastError();
  });
}

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
