// cuda_module.cc (level: FFI handlers): XLA FFI handlers for the CUDA backend and the nanobind
// module `_cuda` (registered for platform "CUDA" by jax_mergepath/_ffi.py). Handlers decode and
// validate buffers (decode.h) and call the plain entry points of ffi/cuda/entry/; the stream is
// XLA's, the partition workspace is the call's last result, nothing allocates or syncs
// (graph-safe). The device's SM count is read once a device (device_sms.h) and passed down in the
// call.
#include <nanobind/nanobind.h>

#include <stdexcept>
#include <string>

#include "../cuda/entry/cuda_entry.h"
#include "../cuda/entry/device_sms.h"
#include "decode.h"
#include "topk_ffi.h"
#include "jax_mergepath/tuning/radix.h"
#include "jax_mergepath/tuning/workspace.h"

namespace jax_mergepath {
namespace {

ffi::Error cuda_error(const char* op, cudaError_t err) {
  return ffi::Error::Internal(std::string("jax_mergepath.") + op +
                              ": CUDA error: " + cudaGetErrorString(err));
}

ffi::Error MergeCudaImpl(cudaStream_t stream, ffi::AnyBuffer a, ffi::AnyBuffer b,
                         ffi::AnyBuffer a_valid, ffi::AnyBuffer b_valid,
                         ffi::RemainingArgs values, ffi::Result<ffi::AnyBuffer> out,
                         ffi::RemainingRets extra, bool descending, int64_t payload, bool runs,
                         bool full_rows) {
  auto call = decode_merge(a, b, a_valid, b_valid, values, out, extra, descending, payload, runs,
                           full_rows);
  if (!call.has_value()) return call.error();
  if (cudaError_t err = current_device_sms(&call->sms); err != cudaSuccess) {
    return cuda_error(runs ? "merge_runs" : "merge", err);
  }
  // The workspace is the last result, after the payload output (if any).
  auto ws = extra.get<ffi::AnyBuffer>(extra.size() - 1);
  if (extra.empty() || !ws.has_value()) {
    return invalid(runs ? "merge_runs" : "merge", "missing the partition workspace");
  }
  const int64_t need = merge_workspace_elements(
      static_cast<int>(ffi::ByteWidth(a.element_type())), call->payload, call->value_bytes,
      call->layout);
  if ((*ws)->element_type() != ffi::DataType::S32 ||
      static_cast<int64_t>((*ws)->element_count()) < need ||
      extra.size() != (call->payload == PayloadKind::kNone ? 1u : 2u)) {
    return invalid(runs ? "merge_runs" : "merge", "workspace too small or misplaced");
  }
  if (cudaError_t err = merge_cuda(*call, (*ws)->typed_data<int32_t>(), stream);
      err != cudaSuccess) {
    return cuda_error(runs ? "merge_runs" : "merge", err);
  }
  return ffi::Error::Success();
}

ffi::Error RaggedMergeCudaImpl(cudaStream_t stream, ffi::AnyBuffer x, ffi::AnyBuffer starts,
                               ffi::AnyBuffer lengths, ffi::RemainingArgs values,
                               ffi::Result<ffi::AnyBuffer> out,
                               ffi::RemainingRets extra, bool descending) {
  auto call = decode_ragged_merge(x, starts, lengths, values, out, extra, descending);
  if (!call.has_value()) return call.error();
  const size_t used = values.size();
  const int64_t need = ragged_merge_workspace_elements(
      static_cast<int>(ffi::ByteWidth(x.element_type())), call->value_bytes, call->rows,
      call->out_length);
  auto ws = extra_buffer(extra, used, need, ffi::DataType::S32, "merge_ragged", "workspace");
  if (!ws.has_value()) return ws.error();
  if (extra.size() != used + 1) return invalid("merge_ragged", "unexpected extra results");
  if (cudaError_t err = ragged_merge_cuda(*call, static_cast<int32_t*>(*ws), stream);
      err != cudaSuccess) {
    return cuda_error("merge_ragged", err);
  }
  return ffi::Error::Success();
}

ffi::Error CoRankCudaImpl(cudaStream_t stream, ffi::AnyBuffer k, ffi::AnyBuffer a,
                          ffi::AnyBuffer b, ffi::Result<ffi::AnyBuffer> out, bool descending) {
  auto call = decode_co_rank(k, a, b, out, descending);
  if (!call.has_value()) return call.error();
  if (cudaError_t err = co_rank_cuda(*call, stream); err != cudaSuccess) {
    return cuda_error("co_rank", err);
  }
  return ffi::Error::Success();
}

ffi::Error IsSortedCudaImpl(cudaStream_t stream, ffi::AnyBuffer x,
                            ffi::Result<ffi::AnyBuffer> out, bool descending) {
  auto call = decode_is_sorted(x, out, descending);
  if (!call.has_value()) return call.error();
  if (cudaError_t err = is_sorted_cuda(*call, stream); err != cudaSuccess) {
    return cuda_error("is_sorted", err);
  }
  return ffi::Error::Success();
}

ffi::Error SortCudaImpl(cudaStream_t stream, ffi::AnyBuffer keys, ffi::RemainingArgs values,
                        ffi::Result<ffi::AnyBuffer> out, ffi::RemainingRets extra,
                        bool descending, int64_t payload, int64_t method, bool keys_needed) {
  size_t used = 0;
  auto call = decode_sort(keys, values, out, extra, descending, payload, method, keys_needed, used);
  if (!call.has_value()) return call.error();
  if (cudaError_t err = current_device_sms(&call->sms); err != cudaSuccess) {
    return cuda_error("sort", err);
  }
  const int key_bytes = static_cast<int>(ffi::ByteWidth(keys.element_type()));
  const int64_t need = sort_partition_elements(key_bytes, call->payload, call->value_bytes,
                                               call->rows, call->length);
  auto splits = extra_buffer(extra, used, need, ffi::DataType::S32, "sort", "partition workspace");
  if (!splits.has_value()) return splits.error();
  if (extra.size() != used + 1) return invalid("sort", "unexpected extra results");
  // (at least the merge sort's; the radix path checks for its own, optional, part)
  const auto have = static_cast<int64_t>(extra.get<ffi::AnyBuffer>(used).value()->element_count());
  // kRadixDirect runs the direct sort whatever this call's rows (a shard of a batch-sharded call
  // may hold one row): it cannot fall back (its spares are empty), so the shape and the
  // workspace must admit it.
  if (call->method == SortMethod::kRadixDirect && call->rows * call->length > 0) {
    const int carried = payload_bytes(call->payload, call->value_bytes);
    const bool integer = is_integer_key(call->key_type);
    if (!radix_direct(integer, key_bytes, call->payload, call->value_bytes, call->descending,
                      call->rows) ||
        !radix_possible(key_bytes, carried, call->rows, call->length, integer) ||
        have < radix_workspace_elements(key_bytes, carried, call->rows, call->length,
                                        /*direct=*/true)) {
      return invalid("sort", "the method kRadixDirect needs keys (and values) the direct radix "
                             "sort takes and its workspace");
    }
  }
  if (cudaError_t err = sort_cuda(*call, static_cast<int32_t*>(*splits), have, stream);
      err != cudaSuccess) {
    return cuda_error("sort", err);
  }
  return ffi::Error::Success();
}

ffi::Error SearchsortedCudaImpl(cudaStream_t stream, ffi::AnyBuffer a, ffi::AnyBuffer v,
                                ffi::Result<ffi::AnyBuffer> out, ffi::RemainingRets extra,
                                bool right, bool sorted_v) {
  auto call = decode_search(a, v, out, right, sorted_v);
  if (!call.has_value()) return call.error();
  if (cudaError_t err = current_device_sms(&call->sms); err != cudaSuccess) {
    return cuda_error("searchsorted", err);
  }
  const MergeCall merge = search_as_merge(*call);
  const int64_t need =
      sorted_v ? merge_workspace_elements(static_cast<int>(ffi::ByteWidth(a.element_type())),
                                          merge.payload, 0, merge.layout)
               : 1;
  auto splits =
      extra_buffer(extra, 0, need, ffi::DataType::S32, "searchsorted", "partition workspace");
  if (!splits.has_value()) return splits.error();
  if (cudaError_t err = searchsorted_cuda(*call, static_cast<int32_t*>(*splits), stream);
      err != cudaSuccess) {
    return cuda_error("searchsorted", err);
  }
  return ffi::Error::Success();
}

}  // namespace

// All of them are captured into CUDA graphs by XLA: they only enqueue work on XLA's stream.
XLA_FFI_DEFINE_HANDLER_SYMBOL(jmp_merge_cuda, MergeCudaImpl,
                              bind_merge(ffi::Ffi::Bind().Ctx<ffi::PlatformStream<cudaStream_t>>()),
                              {ffi::Traits::kCmdBufferCompatible});
XLA_FFI_DEFINE_HANDLER_SYMBOL(
    jmp_merge_ragged_cuda, RaggedMergeCudaImpl,
    bind_ragged_merge(ffi::Ffi::Bind().Ctx<ffi::PlatformStream<cudaStream_t>>()),
    {ffi::Traits::kCmdBufferCompatible});
XLA_FFI_DEFINE_HANDLER_SYMBOL(
    jmp_co_rank_cuda, CoRankCudaImpl,
    bind_co_rank(ffi::Ffi::Bind().Ctx<ffi::PlatformStream<cudaStream_t>>()),
    {ffi::Traits::kCmdBufferCompatible});
XLA_FFI_DEFINE_HANDLER_SYMBOL(
    jmp_is_sorted_cuda, IsSortedCudaImpl,
    bind_is_sorted(ffi::Ffi::Bind().Ctx<ffi::PlatformStream<cudaStream_t>>()),
    {ffi::Traits::kCmdBufferCompatible});
XLA_FFI_DEFINE_HANDLER_SYMBOL(jmp_sort_cuda, SortCudaImpl,
                              bind_sort(ffi::Ffi::Bind().Ctx<ffi::PlatformStream<cudaStream_t>>()),
                              {ffi::Traits::kCmdBufferCompatible});
XLA_FFI_DEFINE_HANDLER_SYMBOL(
    jmp_searchsorted_cuda, SearchsortedCudaImpl,
    bind_searchsorted(ffi::Ffi::Bind().Ctx<ffi::PlatformStream<cudaStream_t>>()),
    {ffi::Traits::kCmdBufferCompatible});

}  // namespace jax_mergepath

namespace nb = nanobind;

NB_MODULE(_cuda, m) {
  m.def("registrations", []() {
    nb::dict d;
    d["jmp_merge"] = nb::capsule(reinterpret_cast<void*>(jax_mergepath::jmp_merge_cuda));
    d["jmp_merge_ragged"] =
        nb::capsule(reinterpret_cast<void*>(jax_mergepath::jmp_merge_ragged_cuda));
    d["jmp_co_rank"] = nb::capsule(reinterpret_cast<void*>(jax_mergepath::jmp_co_rank_cuda));
    d["jmp_is_sorted"] = nb::capsule(reinterpret_cast<void*>(jax_mergepath::jmp_is_sorted_cuda));
    d["jmp_sort"] = nb::capsule(reinterpret_cast<void*>(jax_mergepath::jmp_sort_cuda));
    d["jmp_searchsorted"] =
        nb::capsule(reinterpret_cast<void*>(jax_mergepath::jmp_searchsorted_cuda));
    d["jmp_top_k"] = nb::capsule(reinterpret_cast<void*>(jax_mergepath::jmp_top_k_cuda));
    return d;
  });
  m.def("short_keys_onesweep", &jax_mergepath::short_keys_onesweep,
        "whether CUB sorts 2-byte keys by onesweep on every architecture built (sm_90 on): the "
        "lowering sends them to the direct radix sort only then (cuda_entry.h)");
  m.def(
      "radix_temp_bytes",
      [](int key_bytes, bool payload, bool direct, int64_t rows, int64_t n) {
        size_t bytes = 0;
        if (cudaError_t err =
                jax_mergepath::radix_temp_bytes(key_bytes, payload, direct, rows, n, &bytes);
            err != cudaSuccess) {
          throw std::runtime_error(cudaGetErrorString(err));
        }
        return bytes;
      },
      "CUB's temporary storage bytes for the radix path's sort of rows x n keys of key_bytes, "
      "with a 4-byte payload or none, or direct (integer keys), on the current device (a test "
      "hook of tuning/workspace.h's bound)");
}
