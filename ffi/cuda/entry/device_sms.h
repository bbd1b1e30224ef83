// device_sms.h (level: entry): the streaming multiprocessors of the current CUDA device, read once
// a device and cached (MergeCall::sms; tuning/merge.h merge_searching_tiles_most). Host code, plain
// C++ on the CUDA runtime API (the FFI handlers, built by the host compiler, and the sweeps). It
// allocates nothing, synchronizes nothing and enqueues nothing, so a handler that calls it stays
// safe in CUDA graphs; it returns the first CUDA error met.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>

namespace jax_mergepath {

inline cudaError_t current_device_sms(int* sms) {
  constexpr int kCachedDevices = 64;  // devices past this are read every time
  static std::atomic<int> cached[kCachedDevices];  // zero-initialized: 0 is not read yet
  int device = 0;
  if (cudaError_t err = cudaGetDevice(&device); err != cudaSuccess) return err;
  const bool cacheable = device >= 0 && device < kCachedDevices;
  if (cacheable) {
    if (const int known = cached[device].load(std::memory_order_relaxed); known > 0) {
      *sms = known;
      return cudaSuccess;
    }
  }
  int count = 0;
  if (cudaError_t err = cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device);
      err != cudaSuccess) {
    return err;
  }
  if (cacheable) cached[device].store(count, std::memory_order_relaxed);
  *sms = count;
  return cudaSuccess;
}

}  // namespace jax_mergepath
