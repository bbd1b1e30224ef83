// topk_cuda_handler.cc (level: FFI handlers): the CUDA handler of jmp_top_k (topk_ffi.h): decode
// and validate, the device's SM count, the workspace (the call's last result) checked against
// tuning/workspace.h's layout, then topk_cuda on XLA's stream. No allocation, no sync:
// kCmdBufferCompatible.
#include <string>

#include "../cuda/entry/device_sms.h"
#include "../cuda/entry/topk_entry.h"
#include "jax_mergepath/tuning/workspace.h"
#include "topk_ffi.h"

namespace jax_mergepath {
namespace {

ffi::Error TopkCudaImpl(cudaStream_t stream, ffi::AnyBuffer keys,
                        ffi::Result<ffi::AnyBuffer> values, ffi::Result<ffi::AnyBuffer> indices,
                        ffi::RemainingRets extra, int64_t k, bool largest, int64_t key_class,
                        int64_t strategy) {
  auto call = decode_top_k(keys, values, indices, k, largest, key_class, strategy);
  if (!call.has_value()) return call.error();
  if (cudaError_t err = current_device_sms(&call->sms); err != cudaSuccess) {
    return ffi::Error::Internal(std::string("jax_mergepath.top_k: CUDA error: ") +
                                cudaGetErrorString(err));
  }
  if (extra.size() != 1) return invalid("top_k", "expected one workspace result");
  auto ws = extra.get<ffi::AnyBuffer>(0);
  if (!ws.has_value()) return ws.error();
  const TopkLayout layout =
      topk_layout(call->key_bytes, call->k, call->rows, call->length, call->strategy);
  if (layout.strategy == TopkStrategy::kInvalid) {
    return invalid("top_k", "the forced strategy cannot run rows of this length at this k");
  }
  const auto have = static_cast<int64_t>((*ws)->element_count()) * 4;
  if ((*ws)->element_type() != ffi::DataType::S32 || have < layout.bytes) {
    return invalid("top_k", "workspace too small or of the wrong dtype");
  }
  if (cudaError_t err = topk_cuda(*call, (*ws)->untyped_data(), have, stream);
      err != cudaSuccess) {
    return ffi::Error::Internal(std::string("jax_mergepath.top_k: CUDA error: ") +
                                cudaGetErrorString(err));
  }
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(jmp_top_k_cuda, TopkCudaImpl,
                              bind_top_k(ffi::Ffi::Bind().Ctx<ffi::PlatformStream<cudaStream_t>>()),
                              {ffi::Traits::kCmdBufferCompatible});

}  // namespace jax_mergepath
