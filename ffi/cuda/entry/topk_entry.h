// topk_entry.h (level: entry): the CUDA top_k's entry point (topk_cuda.cu): plain C++, no XLA
// types. It enqueues the call's kernels on `stream` and returns the first CUDA error met; nothing
// allocates or synchronizes (the workspace is the caller's: tuning/workspace.h topk_layout), so the
// call is safe in CUDA graphs.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "jax_mergepath/topk.h"

namespace jax_mergepath {

cudaError_t topk_cuda(const TopkCall& call, void* workspace, int64_t workspace_bytes,
                      cudaStream_t stream);

}  // namespace jax_mergepath
