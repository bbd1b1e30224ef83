// decode.h (level: FFI handlers): how the CPU and CUDA FFI handlers decode every call: the DataType
// -> KeyType table, the targets' FFI signatures (bind_*), and the decoding + validation of each
// call's buffers and attributes into the plain call structs of call_args.h (decode_*). Shapes are
// (rows..., length): every leading dimension is a batch row. Handlers return ffi::Error, never
// throw.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "jax_mergepath/call_args.h"
#include "xla/ffi/api/ffi.h"

namespace jax_mergepath {

namespace ffi = xla::ffi;

// The one DataType table of the handlers.
inline KeyType key_type_of(ffi::DataType t) {
  switch (t) {
    case ffi::DataType::PRED: return KeyType::kBool;
    case ffi::DataType::U8: return KeyType::kU8;
    case ffi::DataType::U16: return KeyType::kU16;
    case ffi::DataType::U32: return KeyType::kU32;
    case ffi::DataType::U64: return KeyType::kU64;
    case ffi::DataType::S8: return KeyType::kS8;
    case ffi::DataType::S16: return KeyType::kS16;
    case ffi::DataType::S32: return KeyType::kS32;
    case ffi::DataType::S64: return KeyType::kS64;
    case ffi::DataType::F16: return KeyType::kF16;
    case ffi::DataType::BF16: return KeyType::kBF16;
    case ffi::DataType::F32: return KeyType::kF32;
    case ffi::DataType::F64: return KeyType::kF64;
    default: return KeyType::kInvalid;
  }
}

// Types XLA packs several to a byte (their ByteWidth of 1 is not their element size).
inline bool is_sub_byte(ffi::DataType t) {
  switch (t) {
    case ffi::DataType::S1:
    case ffi::DataType::S2:
    case ffi::DataType::S4:
    case ffi::DataType::U1:
    case ffi::DataType::U2:
    case ffi::DataType::U4:
    case ffi::DataType::F4E2M1FN:
      return true;
    default:
      return false;
  }
}

struct RowShape {
  int64_t rows = 1;
  int64_t length = 0;
};

// Rows = product of all but the last dimension; length = the last dimension.
inline ffi::ErrorOr<RowShape> row_shape(const ffi::AnyBuffer& buf, const char* name) {
  const auto dims = buf.dimensions();
  if (dims.size() < 1) {
    return ffi::Unexpected(ffi::Error::InvalidArgument(std::string(name) + " must be >= 1-d"));
  }
  RowShape s;
  for (size_t d = 0; d + 1 < dims.size(); ++d) s.rows *= dims[d];
  s.length = dims.back();
  return s;
}

inline ffi::Error invalid(const std::string& op, const std::string& what) {
  return ffi::Error::InvalidArgument("jax_mergepath." + op + ": " + what);
}

// The FFI signatures of the targets, shared by both platforms (the CUDA handlers bind the
// stream first): every primitive parameter is an attribute of the same name (_primitives.py).
template <typename Binding>
auto bind_merge(Binding binding) {
  return std::move(binding)
      .template Arg<ffi::AnyBuffer>()  // a (runs: x)
      .template Arg<ffi::AnyBuffer>()  // b (runs: x again, unread)
      .template Arg<ffi::AnyBuffer>()  // a_valid (runs: split), int32 per row
      .template Arg<ffi::AnyBuffer>()  // b_valid, int32 per row
      .RemainingArgs()                 // values (payload 2)
      .template Ret<ffi::AnyBuffer>()  // merged keys
      .RemainingRets()                 // payload output, then (CUDA) the workspace
      .template Attr<bool>("descending")
      .template Attr<int64_t>("payload")
      .template Attr<bool>("runs")
      .template Attr<bool>("full_rows");
}

template <typename Binding>
auto bind_co_rank(Binding binding) {
  return std::move(binding)
      .template Arg<ffi::AnyBuffer>()  // k
      .template Arg<ffi::AnyBuffer>()  // a
      .template Arg<ffi::AnyBuffer>()  // b
      .template Ret<ffi::AnyBuffer>()
      .template Attr<bool>("descending");
}

template <typename Binding>
auto bind_is_sorted(Binding binding) {
  return std::move(binding)
      .template Arg<ffi::AnyBuffer>()  // x
      .template Ret<ffi::AnyBuffer>()
      .template Attr<bool>("descending");
}

// Decodes a merge call. Operands: a, b, a_valid (int32 rows), b_valid (int32 rows), then the
// values (payload 2: two arrays). Results: out, then the payload output (payload 1 or 2).
// runs=true: a holds rows of [A | B], a_valid holds the split; b / b_valid are ignored.
// full_rows=true (not runs): the lengths are every row's full m and n, known when the call was
// traced, so the layout has none (the kernels' full-row paths) and the length buffers are not
// read: empty ones ((*B, 0), what the Python side passes: nothing is materialized for them) or
// one a row (programs exported before it).
inline ffi::ErrorOr<MergeCall> decode_merge(ffi::AnyBuffer a, ffi::AnyBuffer b,
                                            ffi::AnyBuffer a_valid, ffi::AnyBuffer b_valid,
                                            const ffi::RemainingArgs& values,
                                            ffi::Result<ffi::AnyBuffer> out,
                                            const ffi::RemainingRets& extra, bool descending,
                                            int64_t payload, bool runs, bool full_rows) {
  MergeCall call{};
  const std::string op = runs ? "merge_runs" : "merge";
  call.key_type = key_type_of(a.element_type());
  if (call.key_type == KeyType::kInvalid) {
    return ffi::Unexpected(invalid(op, "unsupported key dtype"));
  }
  if (!runs && b.element_type() != a.element_type()) {
    return ffi::Unexpected(invalid(op, "a and b must have the same dtype"));
  }
  if (a_valid.element_type() != ffi::DataType::S32 ||
      b_valid.element_type() != ffi::DataType::S32) {
    return ffi::Unexpected(invalid(op, "lengths must be int32"));
  }
  auto as = row_shape(a, "a");
  auto bs = row_shape(b, "b");
  auto os = row_shape(*out, "out");
  if (!as.has_value()) return ffi::Unexpected(as.error());
  if (!bs.has_value()) return ffi::Unexpected(bs.error());
  if (!os.has_value()) return ffi::Unexpected(os.error());
  call.descending = descending;
  call.a = a.untyped_data();
  call.b = b.untyped_data();
  call.out = out->untyped_data();
  call.layout.rows = as->rows;
  call.layout.a_valid = a_valid.typed_data<int32_t>();
  if (runs) {
    call.layout.mode = RowMode::kRuns;
    call.layout.m = as->length;
    call.layout.n = 0;
    call.layout.b_valid = nullptr;
  } else {
    call.layout.mode = RowMode::kSeparate;
    call.layout.m = as->length;
    call.layout.n = bs->length;
    call.layout.b_valid = b_valid.typed_data<int32_t>();
    if (full_rows) call.layout.a_valid = call.layout.b_valid = nullptr;
    if (bs->rows != as->rows) return ffi::Unexpected(invalid(op, "a and b batch rows differ"));
    const bool b_unread = full_rows && b_valid.element_count() == 0;
    if (!b_unread && static_cast<int64_t>(b_valid.element_count()) != as->rows) {
      return ffi::Unexpected(invalid(op, "b_length must have one entry per row"));
    }
  }
  const bool a_unread = !runs && full_rows && a_valid.element_count() == 0;
  if (!a_unread && static_cast<int64_t>(a_valid.element_count()) != as->rows) {
    return ffi::Unexpected(invalid(op, "a_length/split must have one entry per row"));
  }
  if (os->rows != as->rows || os->length != call.layout.row_length() ||
      out->element_type() != a.element_type()) {
    return ffi::Unexpected(invalid(op, "output shape or dtype mismatch"));
  }
  if (call.layout.row_length() >= (int64_t{1} << 31)) {
    return ffi::Unexpected(invalid(op, "merged axis too long for int32 indices"));
  }
  call.payload = static_cast<PayloadKind>(payload);
  const size_t want_values = call.payload == PayloadKind::kValue ? (runs ? 1 : 2) : 0;
  const size_t want_extra = call.payload == PayloadKind::kNone ? 0 : 1;
  if (payload < 0 || payload > 2 || values.size() != want_values || extra.size() < want_extra) {
    return ffi::Unexpected(invalid(op, "payload operands do not match the payload kind"));
  }
  if (want_extra) {
    auto p = extra.get<ffi::AnyBuffer>(0);
    if (!p.has_value()) return ffi::Unexpected(p.error());
    call.out_payload = (*p)->untyped_data();
    if ((*p)->element_count() != out->element_count()) {
      return ffi::Unexpected(invalid(op, "payload output shape mismatch"));
    }
    if (call.payload == PayloadKind::kIndex && (*p)->element_type() != ffi::DataType::S32) {
      return ffi::Unexpected(invalid(op, "indices must be int32"));
    }
  }
  if (call.payload == PayloadKind::kValue) {
    auto va = values.get<ffi::AnyBuffer>(0);
    if (!va.has_value()) return ffi::Unexpected(va.error());
    call.a_values = va->untyped_data();
    call.value_bytes = static_cast<int>(ffi::ByteWidth(va->element_type()));
    if (va->element_count() != a.element_count()) {
      return ffi::Unexpected(invalid(op, "values must have the shape of their keys"));
    }
    if (!runs) {
      auto vb = values.get<ffi::AnyBuffer>(1);
      if (!vb.has_value()) return ffi::Unexpected(vb.error());
      call.b_values = vb->untyped_data();
      if (vb->element_count() != b.element_count() ||
          vb->element_type() != va->element_type()) {
        return ffi::Unexpected(invalid(op, "b_values must match b's shape and a_values' dtype"));
      }
    }
    const int vb_bytes = call.value_bytes;
    if ((vb_bytes != 1 && vb_bytes != 2 && vb_bytes != 4 && vb_bytes != 8) ||
        is_sub_byte(va->element_type())) {
      return ffi::Unexpected(invalid(op, "values must be 1, 2, 4 or 8 whole bytes wide"));
    }
  }
  return call;
}

template <typename Binding>
auto bind_ragged_merge(Binding binding) {
  return std::move(binding)
      .template Arg<ffi::AnyBuffer>()  // x (rows..., span)
      .template Arg<ffi::AnyBuffer>()  // starts, int32 (rows..., runs)
      .template Arg<ffi::AnyBuffer>()  // lengths, int32 (rows..., runs)
      .RemainingArgs()                 // values, shaped as x (or none)
      .template Ret<ffi::AnyBuffer>()  // merged keys (rows..., out_length)
      .RemainingRets()                 // the values' output, then (CUDA) the workspace
      .template Attr<bool>("descending");
}

// Decodes a ragged merge (call_args.h RaggedMergeCall). Operands: x (rows..., span), starts and
// lengths int32 (rows..., runs), then optional values shaped like x (4 or 8 bytes). Results:
// out (rows..., out_length) of x's dtype, then the values' output when there are values.
inline ffi::ErrorOr<RaggedMergeCall> decode_ragged_merge(ffi::AnyBuffer x, ffi::AnyBuffer starts,
                                                         ffi::AnyBuffer lengths,
                                                         const ffi::RemainingArgs& values,
                                                         ffi::Result<ffi::AnyBuffer> out,
                                                         const ffi::RemainingRets& extra,
                                                         bool descending) {
  const std::string op = "merge_ragged";
  RaggedMergeCall call{};
  call.key_type = key_type_of(x.element_type());
  if (call.key_type == KeyType::kInvalid) {
    return ffi::Unexpected(invalid(op, "unsupported key dtype"));
  }
  auto xs = row_shape(x, "x");
  auto ss = row_shape(starts, "starts");
  auto ls = row_shape(lengths, "lengths");
  auto os = row_shape(*out, "out");
  if (!xs.has_value() || !ss.has_value() || !ls.has_value() || !os.has_value() ||
      ss->rows != xs->rows || ls->rows != xs->rows || os->rows != xs->rows ||
      ls->length != ss->length || starts.element_type() != ffi::DataType::S32 ||
      lengths.element_type() != ffi::DataType::S32 || out->element_type() != x.element_type()) {
    return ffi::Unexpected(invalid(op, "x (rows..., span), starts and lengths int32 (rows..., "
                                       "runs), out (rows..., out_length) of x's dtype"));
  }
  call.rows = xs->rows;
  call.span = xs->length;
  call.runs = ss->length;
  call.out_length = os->length;
  if (call.runs < 1 || call.runs > kRaggedRuns) {
    return ffi::Unexpected(invalid(op, "1 to 8 runs a row"));
  }
  if (call.span >= (int64_t{1} << 31) || call.out_length >= (int64_t{1} << 31)) {
    return ffi::Unexpected(invalid(op, "rows too long for int32 positions"));
  }
  call.descending = descending;
  call.x = x.untyped_data();
  call.starts = starts.typed_data<int32_t>();
  call.lengths = lengths.typed_data<int32_t>();
  call.out = out->untyped_data();
  if (values.size() > 1 || extra.size() < values.size()) {
    return ffi::Unexpected(invalid(op, "one values operand and its output, or none"));
  }
  if (values.size() == 1) {
    auto v = values.get<ffi::AnyBuffer>(0);
    auto v_out = extra.get<ffi::AnyBuffer>(0);
    if (!v.has_value()) return ffi::Unexpected(v.error());
    if (!v_out.has_value()) return ffi::Unexpected(v_out.error());
    call.value_bytes = static_cast<int>(ffi::ByteWidth(v->element_type()));
    if ((call.value_bytes != 4 && call.value_bytes != 8) ||
        v->element_count() != x.element_count() ||
        (*v_out)->element_type() != v->element_type() ||
        (*v_out)->element_count() != out->element_count()) {
      return ffi::Unexpected(invalid(op, "values must be 4 or 8 bytes, shaped as x, and their "
                                         "output as out"));
    }
    call.values = v->untyped_data();
    call.out_values = (*v_out)->untyped_data();
  }
  return call;
}

// Decodes a co_rank call: k (rows..., q) int32, a (rows..., m), b (rows..., n) -> out like k.
inline ffi::ErrorOr<CoRankCall> decode_co_rank(ffi::AnyBuffer k, ffi::AnyBuffer a,
                                               ffi::AnyBuffer b, ffi::Result<ffi::AnyBuffer> out,
                                               bool descending) {
  CoRankCall call{};
  call.key_type = key_type_of(a.element_type());
  if (call.key_type == KeyType::kInvalid || b.element_type() != a.element_type()) {
    return ffi::Unexpected(invalid("co_rank", "unsupported or mismatched key dtypes"));
  }
  if (k.element_type() != ffi::DataType::S32 || out->element_type() != ffi::DataType::S32) {
    return ffi::Unexpected(invalid("co_rank", "k and the result must be int32"));
  }
  auto ks = row_shape(k, "k");
  auto as = row_shape(a, "a");
  auto bs = row_shape(b, "b");
  if (!ks.has_value() || !as.has_value() || !bs.has_value()) {
    return ffi::Unexpected(invalid("co_rank", "inputs must be >= 1-d"));
  }
  if (ks->rows != as->rows || bs->rows != as->rows ||
      out->element_count() != k.element_count()) {
    return ffi::Unexpected(invalid("co_rank", "batch rows differ"));
  }
  call.descending = descending;
  call.rows = as->rows;
  call.queries = ks->length;
  call.m = as->length;
  call.n = bs->length;
  call.k = k.typed_data<int32_t>();
  call.a = a.untyped_data();
  call.b = b.untyped_data();
  call.out = out->typed_data<int32_t>();
  return call;
}

template <typename Binding>
auto bind_sort(Binding binding) {
  return std::move(binding)
      .template Arg<ffi::AnyBuffer>()  // keys
      .RemainingArgs()                 // values (payload 2)
      .template Ret<ffi::AnyBuffer>()  // sorted keys
      .RemainingRets()  // payload output, spare keys, spare payload, row flags, (CUDA) splits
      .template Attr<bool>("descending")
      .template Attr<int64_t>("payload")
      .template Attr<int64_t>("method")  // call_args.h SortMethod, resolved by the lowering
      .template Attr<bool>("keys_needed");
}

template <typename Binding>
auto bind_searchsorted(Binding binding) {
  return std::move(binding)
      .template Arg<ffi::AnyBuffer>()  // a (sorted)
      .template Arg<ffi::AnyBuffer>()  // v (queries)
      .template Ret<ffi::AnyBuffer>()  // int32 positions, shaped like v
      .RemainingRets()                 // (CUDA, sorted queries) splits
      .template Attr<bool>("right")
      .template Attr<bool>("sorted_v");
}

// The i-th of the remaining results, checked to hold `count` elements of `type`.
inline ffi::ErrorOr<void*> extra_buffer(const ffi::RemainingRets& extra, size_t i,
                                        int64_t count, ffi::DataType type, const char* op,
                                        const char* what) {
  if (i >= extra.size()) return ffi::Unexpected(invalid(op, std::string("missing ") + what));
  auto buf = extra.get<ffi::AnyBuffer>(i);
  if (!buf.has_value()) return ffi::Unexpected(buf.error());
  if ((*buf)->element_type() != type || static_cast<int64_t>((*buf)->element_count()) < count) {
    return ffi::Unexpected(invalid(op, std::string(what) + " has the wrong dtype or size"));
  }
  return (*buf)->untyped_data();
}

// Decodes a sort call. Operands: keys (rows..., length), then the values (payload 2: one array
// shaped like the keys). Results: sorted keys, the payload output (payload 1: int32; 2: values),
// spare keys, spare payload (payload 1, 2), both empty (no elements) exactly for the method
// kRadixDirect, one uint8 flag a row; the CUDA handler's partition workspace follows.
// next_extra: the index of the first result after these.
inline ffi::ErrorOr<SortCall> decode_sort(ffi::AnyBuffer keys, const ffi::RemainingArgs& values,
                                          ffi::Result<ffi::AnyBuffer> out,
                                          const ffi::RemainingRets& extra, bool descending,
                                          int64_t payload, int64_t method, bool keys_needed,
                                          size_t& next_extra) {
  const char* op = "sort";
  SortCall call{};
  if (method < 0 || method > 3) return ffi::Unexpected(invalid(op, "unknown sort method"));
  call.method = static_cast<SortMethod>(method);
  call.keys_needed = keys_needed;
  call.key_type = key_type_of(keys.element_type());
  if (call.key_type == KeyType::kInvalid) {
    return ffi::Unexpected(invalid(op, "unsupported key dtype"));
  }
  auto ks = row_shape(keys, "keys");
  if (!ks.has_value()) return ffi::Unexpected(ks.error());
  if (out->element_type() != keys.element_type() ||
      out->element_count() != keys.element_count()) {
    return ffi::Unexpected(invalid(op, "output shape or dtype mismatch"));
  }
  if (ks->length >= (int64_t{1} << 31)) {
    return ffi::Unexpected(invalid(op, "sorted axis too long for int32 indices"));
  }
  if (payload < 0 || payload > 2) return ffi::Unexpected(invalid(op, "unknown payload kind"));
  call.descending = descending;
  call.payload = static_cast<PayloadKind>(payload);
  call.rows = ks->rows;
  call.length = ks->length;
  call.keys = keys.untyped_data();
  call.out_keys = out->untyped_data();
  const int64_t count = static_cast<int64_t>(keys.element_count());
  ffi::DataType payload_type = ffi::DataType::S32;
  if (call.payload == PayloadKind::kValue) {
    if (values.size() != 1) return ffi::Unexpected(invalid(op, "expected one value array"));
    auto v = values.get<ffi::AnyBuffer>(0);
    if (!v.has_value()) return ffi::Unexpected(v.error());
    payload_type = v->element_type();
    call.values = v->untyped_data();
    call.value_bytes = static_cast<int>(ffi::ByteWidth(payload_type));
    if (static_cast<int64_t>(v->element_count()) != count) {
      return ffi::Unexpected(invalid(op, "values must have the shape of their keys"));
    }
    const int bytes = call.value_bytes;
    if ((bytes != 1 && bytes != 2 && bytes != 4 && bytes != 8) || is_sub_byte(payload_type)) {
      return ffi::Unexpected(invalid(op, "values must be 1, 2, 4 or 8 whole bytes wide"));
    }
  } else if (values.size() != 0) {
    return ffi::Unexpected(invalid(op, "values given without a value payload"));
  }
  size_t i = 0;
  const bool carry = call.payload != PayloadKind::kNone;
  if (carry) {
    auto p = extra_buffer(extra, i++, count, payload_type, op, "payload output");
    if (!p.has_value()) return ffi::Unexpected(p.error());
    call.out_payload = *p;
  }
  // Spare buffers: empty for kRadixDirect, whose spares the lowering put in the workspace
  // (spare_keys / spare_payload nullptr; the CUDA handler checks the workspace holds them).
  const bool spares_empty = call.method == SortMethod::kRadixDirect;
  auto spare_buffer = [&](int64_t elements, ffi::DataType type,
                          const char* what) -> ffi::ErrorOr<void*> {
    auto buffer = extra_buffer(extra, i, spares_empty ? 0 : elements, type, op, what);
    if (!buffer.has_value() || !spares_empty) {
      ++i;
      return buffer;
    }
    if (extra.get<ffi::AnyBuffer>(i++).value()->element_count() != 0) {
      return ffi::Unexpected(invalid(op, std::string(what) + ": the method kRadixDirect takes "
                                     "them in the workspace; expected an empty buffer"));
    }
    return static_cast<void*>(nullptr);
  };
  auto spare = spare_buffer(count, keys.element_type(), "spare keys");
  if (!spare.has_value()) return ffi::Unexpected(spare.error());
  call.spare_keys = *spare;
  if (carry) {
    auto p = spare_buffer(count, payload_type, "spare payload");
    if (!p.has_value()) return ffi::Unexpected(p.error());
    call.spare_payload = *p;
  }
  auto flags = extra_buffer(extra, i++, call.rows, ffi::DataType::U8, op, "row flags");
  if (!flags.has_value()) return ffi::Unexpected(flags.error());
  call.row_sorted = static_cast<uint8_t*>(*flags);
  next_extra = i;
  return call;
}

// Decodes a searchsorted call: a (rows..., length) sorted, v (rows..., queries), out int32 like v.
inline ffi::ErrorOr<SearchCall> decode_search(ffi::AnyBuffer a, ffi::AnyBuffer v,
                                              ffi::Result<ffi::AnyBuffer> out, bool right,
                                              bool sorted_v) {
  const char* op = "searchsorted";
  SearchCall call{};
  call.key_type = key_type_of(a.element_type());
  if (call.key_type == KeyType::kInvalid || v.element_type() != a.element_type()) {
    return ffi::Unexpected(invalid(op, "unsupported or mismatched key dtypes"));
  }
  auto as = row_shape(a, "a");
  auto vs = row_shape(v, "v");
  if (!as.has_value() || !vs.has_value()) return ffi::Unexpected(invalid(op, "inputs must be >= 1-d"));
  if (as->rows != vs->rows || out->element_type() != ffi::DataType::S32 ||
      out->element_count() != v.element_count()) {
    return ffi::Unexpected(invalid(op, "batch rows or the result's shape differ"));
  }
  // Positions are int32; a merge path (sorted queries) also needs its merged length to fit.
  if (as->length >= (int64_t{1} << 31) ||
      (sorted_v && as->length + vs->length >= (int64_t{1} << 31))) {
    return ffi::Unexpected(invalid(op, "inputs too long for int32 positions"));
  }
  call.right = right;
  call.sorted_queries = sorted_v;
  call.rows = as->rows;
  call.length = as->length;
  call.queries = vs->length;
  call.a = a.untyped_data();
  call.v = v.untyped_data();
  call.out = out->typed_data<int32_t>();
  return call;
}

// Decodes an is_sorted call: x (rows..., length) -> out (rows...) bool.
inline ffi::ErrorOr<IsSortedCall> decode_is_sorted(ffi::AnyBuffer x,
                                                   ffi::Result<ffi::AnyBuffer> out,
                                                   bool descending) {
  IsSortedCall call{};
  call.key_type = key_type_of(x.element_type());
  if (call.key_type == KeyType::kInvalid) {
    return ffi::Unexpected(invalid("is_sorted", "unsupported key dtype"));
  }
  auto xs = row_shape(x, "x");
  if (!xs.has_value()) return ffi::Unexpected(xs.error());
  if (out->element_type() != ffi::DataType::PRED ||
      static_cast<int64_t>(out->element_count()) != xs->rows) {
    return ffi::Unexpected(invalid("is_sorted", "the result must be bool, one per row"));
  }
  call.descending = descending;
  call.rows = xs->rows;
  call.length = xs->length;
  call.x = x.untyped_data();
  call.out = static_cast<uint8_t*>(out->untyped_data());
  return call;
}

}  // namespace jax_mergepath
