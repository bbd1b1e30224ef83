// host_device.h: JMP_HD marks functions compiled for both host (g++) and device (nvcc).
// Contract: every header under include/jax_mergepath/ is plain C++17 + this macro, no XLA, no CUDA
// runtime calls, so the CPU backend and the CUDA kernels share one implementation.
#pragma once

#if defined(__CUDACC__)
#define JMP_HD __host__ __device__ __forceinline__
#else
#define JMP_HD inline
#endif
