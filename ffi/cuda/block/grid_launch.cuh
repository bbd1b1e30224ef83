// grid_launch.cuh (level: block: every kernel's prologue, every launch): how every kernel of the
// package is launched: with programmatic dependent launch (Hopper), so a kernel's blocks are made
// resident while the kernel before it in the stream finishes (the launch gap between two kernels of
// one call, ~2 us on an H100, goes; docs/performance.md). Every kernel starts with grid_prologue(),
// which waits until the previous kernel has completed and its writes are visible before the kernel
// touches memory. One exception: a partition pass followed by a tiled merge with early tiles
// (merge_kernels.cuh) starts with grid_prologue_waiting_first(), and those tiles, which read only
// what was written before the partition, never wait: they start only after every kernel before the
// partition has completed (its writes flushed, as at any kernel's end), so they read what plain
// stream order gives them. (The PTX text promises visibility to a grid that executes
// griddepcontrol.wait; that a grid launched after a completed kernel sees its writes without one is
// how completion works, not a sentence of that text. Measured: GPU suite, memcheck;
// docs/performance.md.) Without programmatic launch (older GPUs, a graph without the edge) the
// kernels simply run one after the other. A build for an architecture below sm_90 (CMakeLists.txt
// defines JMP_NO_PROGRAMMATIC_LAUNCH then) launches plainly: such code has no prologue
// (griddepcontrol needs sm_90), and PTX of it compiled for a Hopper GPU at load time must not
// overlap the kernel before it.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <utility>

#include "jax_mergepath/batch_geometry.h"
#include "jax_mergepath/tuning/merge.h"

namespace jax_mergepath {

// Lets the next kernel of the stream be scheduled: its blocks may start once every block of this
// one has called this (or exited).
__device__ __forceinline__ void grid_let_next_start() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Waits until the previous kernel of the stream has completed and its writes are visible.
__device__ __forceinline__ void grid_wait_for_previous() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// First statement of every kernel: lets the next kernel of the stream be scheduled once every
// block of this one has started, then waits for the previous kernel to complete.
__device__ __forceinline__ void grid_prologue() {
  grid_let_next_start();
  grid_wait_for_previous();
}

// The other first statement, for a kernel whose successor has blocks that skip the wait (the
// tiled merge's early tiles, merge_kernels.cuh): waits first, so by the time the successor's
// blocks start, every kernel before this one has completed and its writes are visible. Only
// this kernel's own writes are not: blocks that read them must wait for it.
__device__ __forceinline__ void grid_prologue_waiting_first() {
  grid_wait_for_previous();
  grid_let_next_start();
}

// Enqueues kernel<<<grid, block, shared_bytes, stream>>>(args...) with programmatic stream
// serialization (the kernel must start with grid_prologue() or grid_prologue_waiting_first(), or
// be a merge kernel's early tile). Dynamic shared memory over 48 KB needs the kernel's
// cudaFuncAttributeMaxDynamicSharedMemorySize set first. Returns the launch's error.
template <typename... Params, typename... Args>
cudaError_t launch_kernel_shared(void (*kernel)(Params...), unsigned grid, unsigned block,
                                 size_t shared_bytes, cudaStream_t stream, Args&&... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(grid);
  config.blockDim = dim3(block);
  config.dynamicSmemBytes = shared_bytes;
  config.stream = stream;
#ifndef JMP_NO_PROGRAMMATIC_LAUNCH
  cudaLaunchAttribute overlap{};
  overlap.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  overlap.val.programmaticStreamSerializationAllowed = 1;
  config.attrs = &overlap;
  config.numAttrs = 1;
#endif
  return cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
}

// ... without dynamic shared memory.
template <typename... Params, typename... Args>
cudaError_t launch_kernel(void (*kernel)(Params...), unsigned grid, unsigned block,
                          cudaStream_t stream, Args&&... args) {
  return launch_kernel_shared(kernel, grid, block, 0, stream, std::forward<Args>(args)...);
}

// Enqueues `kernel` a thread a unit of `units`, kQueryThreads a block, with `args`.
template <typename... Params, typename... Args>
cudaError_t launch_per_unit(void (*kernel)(Params...), int64_t units, cudaStream_t stream,
                            Args... args) {
  const int64_t blocks = ceil_div(units, kQueryThreads);
  if (blocks >= (int64_t{1} << 31)) return cudaErrorInvalidConfiguration;
  return launch_kernel(kernel, static_cast<unsigned>(blocks), kQueryThreads, stream, args...);
}

}  // namespace jax_mergepath
