// topk_ffi.h (level: FFI handlers): the FFI target jmp_top_k, what its CPU and CUDA handlers share:
// the signature (bind_top_k: every primitive parameter of _select_primitive.py an attribute) and
// the decoding of its buffers into the plain TopkCall (topk.h). Keys may be of any dtype of 1, 2, 4
// or 8 whole bytes: the attribute key_class says how their bits order (the lowering picks it from
// the dtype), so the handlers need no dtype table. Handlers return ffi::Error, never throw.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "decode.h"
#include "jax_mergepath/topk.h"

namespace jax_mergepath {

template <typename Binding>
auto bind_top_k(Binding binding) {
  return std::move(binding)
      .template Arg<ffi::AnyBuffer>()  // keys (rows..., length)
      .template Ret<ffi::AnyBuffer>()  // values (rows..., k), the keys' dtype
      .template Ret<ffi::AnyBuffer>()  // indices (rows..., k), int32
      .RemainingRets()                 // (CUDA) the workspace
      .template Attr<int64_t>("k")
      .template Attr<bool>("largest")
      .template Attr<int64_t>("key_class")
      .template Attr<int64_t>("strategy");  // -1, or a CUDA TopkStrategy forced (tuning/topk.h)
}

inline ffi::ErrorOr<TopkCall> decode_top_k(ffi::AnyBuffer keys, ffi::Result<ffi::AnyBuffer> values,
                                           ffi::Result<ffi::AnyBuffer> indices, int64_t k,
                                           bool largest, int64_t key_class, int64_t strategy) {
  const char* op = "top_k";
  TopkCall call{};
  const ffi::DataType type = keys.element_type();
  call.key_bytes = static_cast<int>(ffi::ByteWidth(type));
  const int bytes = call.key_bytes;
  if ((bytes != 1 && bytes != 2 && bytes != 4 && bytes != 8) || is_sub_byte(type) ||
      type == ffi::DataType::C64 || type == ffi::DataType::C128) {
    return ffi::Unexpected(invalid(op, "keys must be 1, 2, 4 or 8 whole bytes wide, not complex"));
  }
  if (key_class < 0 || key_class > 2) return ffi::Unexpected(invalid(op, "unknown key class"));
  auto ks = row_shape(keys, "keys");
  if (!ks.has_value()) return ffi::Unexpected(ks.error());
  if (k < 0 || k > ks->length) return ffi::Unexpected(invalid(op, "k out of [0, length]"));
  if (ks->length >= (int64_t{1} << 31)) {
    return ffi::Unexpected(invalid(op, "the axis is too long for int32 indices"));
  }
  const int64_t want = ks->rows * k;
  if (values->element_type() != type || static_cast<int64_t>(values->element_count()) != want ||
      indices->element_type() != ffi::DataType::S32 ||
      static_cast<int64_t>(indices->element_count()) != want) {
    return ffi::Unexpected(invalid(op, "results must be (rows..., k): the keys' dtype, int32"));
  }
  call.key_class = static_cast<TopkKeyClass>(key_class);
  call.largest = largest;
  call.rows = ks->rows;
  call.length = ks->length;
  call.k = k;
  call.strategy = strategy < 0 ? -1 : strategy;
  call.keys = keys.untyped_data();
  call.out_values = values->untyped_data();
  call.out_indices = indices->typed_data<int32_t>();
  return call;
}

// The handlers' symbols (topk_cpu_handler.cc, topk_cuda_handler.cc), registered as jmp_top_k.
XLA_FFI_DECLARE_HANDLER_SYMBOL(jmp_top_k_cpu);
XLA_FFI_DECLARE_HANDLER_SYMBOL(jmp_top_k_cuda);

}  // namespace jax_mergepath
