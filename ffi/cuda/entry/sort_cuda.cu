// sort_cuda.cu (level: entry): sort_cuda, the CUDA sort's entry point (cuda_entry.h): the key type
// of the call -> sort_for_traits of its kernel traits (launch/per_traits.h; the sort is
// launch/sort_launch.cuh, compiled in ffi/cuda/instances/sort_*.cu); short_keys_onesweep, what
// the build's architectures give CUB's 2-byte sorts; radix_temp_bytes, the test hook of the radix
// path's bound (host arithmetic of CUB's, instantiated in instances/radix.cu).
#include <cuda_runtime.h>

#include <type_traits>

#include "../kernels/radix_cub.h"
#include "../launch/per_traits.h"
#include "cuda_entry.h"
#include "jax_mergepath/tuning/radix.h"

namespace jax_mergepath {

cudaError_t sort_cuda(const SortCall& call, int32_t* splits, int64_t splits_elements,
                      cudaStream_t stream) {
  return visit_key_type(call.key_type, [&](auto traits) -> cudaError_t {
    return sort_for_traits<decltype(traits)>(call, splits, splits_elements, stream);
  });
}

bool short_keys_onesweep() {
#ifdef JMP_ARCH_BELOW_SM90  // (CMakeLists.txt: an architecture below sm_90 is built)
  return false;
#else
  return true;
#endif
}

cudaError_t radix_temp_bytes(int key_bytes, bool payload, bool direct, int64_t rows, int64_t n,
                             size_t* bytes) {
  if (n <= 0 || n >= kRadixRowLimit || rows <= 0) return cudaErrorInvalidValue;
  alignas(16) static uint32_t placeholder[4];  // a non-null payload CUB never touches here
  auto query = [&](auto bits) {
    using Bits = decltype(bits);
    using Signed = std::make_signed_t<Bits>;
    if (rows > 1) {  // (CUB's segmented sort: 2-byte keys; direct, alone)
      if (!segmented_radix_possible(int(sizeof(Bits)), payload ? 4 : 0, rows, n) ||
          (direct && payload)) {
        return cudaErrorInvalidValue;
      }
      if constexpr (sizeof(Bits) == 2) {
        if (direct) {
          return cub_segmented_radix_sort_keys_direct<Signed>(nullptr, bytes, nullptr, nullptr,
                                                              rows, n, nullptr);
        }
        RadixBuffers<Bits> buffers{};
        if (payload) buffers.values[0] = buffers.values[1] = placeholder;
        return payload ? cub_segmented_radix_sort<Bits, true>(nullptr, bytes, buffers, rows, n,
                                                              16, nullptr)
                       : cub_segmented_radix_sort<Bits, false>(nullptr, bytes, buffers, rows, n,
                                                               16, nullptr);
      }
      return cudaErrorInvalidValue;
    }
    if constexpr (sizeof(Bits) == 8) {  // (only direct, alone: radix.cu)
      if (!direct || payload) return cudaErrorInvalidValue;
      return cub_radix_sort_direct<Signed, false>(nullptr, bytes, nullptr, nullptr, nullptr,
                                                  nullptr, n, nullptr);
    } else {
      if (direct) {  // (the signed instance: its temporary storage is the unsigned one's)
        return payload ? cub_radix_sort_direct<Signed, true>(nullptr, bytes, nullptr, nullptr,
                                                             placeholder, placeholder, n, nullptr)
                       : cub_radix_sort_direct<Signed, false>(nullptr, bytes, nullptr, nullptr,
                                                              nullptr, nullptr, n, nullptr);
      }
      RadixBuffers<Bits> buffers{};
      const int end_bit = 8 * int(sizeof(Bits));
      if (!payload) {
        return cub_radix_sort<Bits, false>(nullptr, bytes, buffers, n, end_bit, nullptr);
      }
      buffers.values[0] = buffers.values[1] = placeholder;
      return cub_radix_sort<Bits, true>(nullptr, bytes, buffers, n, end_bit, nullptr);
    }
  };
  switch (key_bytes) {
    case 2: return query(uint16_t{});
    case 4: return query(uint32_t{});
    case 8: return query(uint64_t{});
    default: return cudaErrorInvalidValue;  // (one-byte keys are counted: no CUB instance)
  }
}

}  // namespace jax_mergepath
