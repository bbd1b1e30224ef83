// sweep_timing.cuh: what the GPU sweep programs (tile_sweep.cu, sort_sweep.cu) share: CHECK_CUDA
// (every CUDA call checked; a failure prints the call and exits 1), time_ms (device time of
// f() between CUDA events recorded on `stream`: `warmups` untimed calls, then the median of
// `repeats` timed ones) and device_sms (the current device's SMs, as the FFI handlers pass them
// in MergeCall::sms).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "../../ffi/cuda/entry/device_sms.h"

#define CHECK_CUDA(expr)                                                              \
  do {                                                                                \
    cudaError_t err_ = (expr);                                                        \
    if (err_ != cudaSuccess) {                                                        \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #expr,              \
                   cudaGetErrorString(err_));                                         \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

template <typename F>
float time_ms(F&& f, int repeats, int warmups = 3, cudaStream_t stream = nullptr) {
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  for (int w = 0; w < warmups; ++w) f();
  std::vector<float> times;
  for (int r = 0; r < repeats; ++r) {
    CHECK_CUDA(cudaEventRecord(start, stream));
    f();
    CHECK_CUDA(cudaEventRecord(stop, stream));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    times.push_back(ms);
  }
  CHECK_CUDA(cudaEventDestroy(start));
  CHECK_CUDA(cudaEventDestroy(stop));
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

inline int device_sms() {
  int sms = 0;
  CHECK_CUDA(jax_mergepath::current_device_sms(&sms));
  return sms;
}
