// host_device.h (level: shared core): JMP_HD marks functions compiled for both host (g++) and
// device (nvcc); JMP_UNROLL asks nvcc to unroll the next loop (ignored by the host compiler);
// pick(c, x, y) is `c ? x : y` for integers, computed with masks on the host (g++ turns a merge
// step's `?:` into branches that a random merge mispredicts half the time) and as a plain select on
// the device; aligned16(p): whether p may be read or written with 16-byte accesses. Contract:
// every header under include/jax_mergepath/ is plain C++17 + these macros, no XLA, no CUDA
// runtime calls, so the CPU backend and the CUDA kernels share one implementation.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define JMP_HD __host__ __device__ __forceinline__
#define JMP_UNROLL _Pragma("unroll")
#else
#define JMP_HD inline
#define JMP_UNROLL
#endif

namespace jax_mergepath {

template <typename T>
JMP_HD T pick(bool c, T x, T y) {
#if defined(__CUDA_ARCH__)
  return c ? x : y;
#else
  const T mask = static_cast<T>(T(0) - static_cast<T>(c));
  return static_cast<T>((x & mask) | (y & static_cast<T>(~mask)));
#endif
}

JMP_HD bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

}  // namespace jax_mergepath
