// cpu_module.cc (level: FFI handlers): XLA FFI handlers for the CPU backend and the nanobind module
// `_cpu` that hands their capsules to Python (registered for platform "cpu" by
// jax_mergepath/_ffi.py).
#include <nanobind/nanobind.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "../cpu/cpu_entry.h"
#include "decode.h"
#include "topk_ffi.h"
#include "topk_hooks.h"
#include "jax_mergepath/merge_path.h"
#include "jax_mergepath/sort_method.h"
#include "jax_mergepath/tuning/merge.h"
#include "jax_mergepath/tuning/radix.h"
#include "jax_mergepath/tuning/sort.h"
#include "jax_mergepath/tuning/workspace.h"

namespace jax_mergepath {
namespace {

ffi::Error MergeCpuImpl(ffi::AnyBuffer a, ffi::AnyBuffer b, ffi::AnyBuffer a_valid,
                        ffi::AnyBuffer b_valid, ffi::RemainingArgs values,
                        ffi::Result<ffi::AnyBuffer> out, ffi::RemainingRets extra,
                        bool descending, int64_t payload, bool runs, bool full_rows) {
  auto call = decode_merge(a, b, a_valid, b_valid, values, out, extra, descending, payload, runs,
                           full_rows);
  if (!call.has_value()) return call.error();
  merge_cpu(*call);
  return ffi::Error::Success();
}

ffi::Error RaggedMergeCpuImpl(ffi::AnyBuffer x, ffi::AnyBuffer starts, ffi::AnyBuffer lengths,
                              ffi::RemainingArgs values, ffi::Result<ffi::AnyBuffer> out,
                              ffi::RemainingRets extra, bool descending) {
  auto call = decode_ragged_merge(x, starts, lengths, values, out, extra, descending);
  if (!call.has_value()) return call.error();
  if (extra.size() != values.size()) return invalid("merge_ragged", "unexpected extra results");
  ragged_merge_cpu(*call);
  return ffi::Error::Success();
}

ffi::Error CoRankCpuImpl(ffi::AnyBuffer k, ffi::AnyBuffer a, ffi::AnyBuffer b,
                         ffi::Result<ffi::AnyBuffer> out, bool descending) {
  auto call = decode_co_rank(k, a, b, out, descending);
  if (!call.has_value()) return call.error();
  co_rank_cpu(*call);
  return ffi::Error::Success();
}

ffi::Error IsSortedCpuImpl(ffi::AnyBuffer x, ffi::Result<ffi::AnyBuffer> out, bool descending) {
  auto call = decode_is_sorted(x, out, descending);
  if (!call.has_value()) return call.error();
  is_sorted_cpu(*call);
  return ffi::Error::Success();
}

ffi::Error SortCpuImpl(ffi::AnyBuffer keys, ffi::RemainingArgs values,
                       ffi::Result<ffi::AnyBuffer> out, ffi::RemainingRets extra, bool descending,
                       int64_t payload, int64_t method, bool keys_needed) {
  if (method == static_cast<int64_t>(SortMethod::kRadixDirect)) {
    return invalid("sort", "the method kRadixDirect is the CUDA sort's (the CPU sort takes its "
                           "spare buffers)");
  }
  size_t used = 0;
  auto call = decode_sort(keys, values, out, extra, descending, payload, method, keys_needed, used);
  if (!call.has_value()) return call.error();
  if (used != extra.size()) return invalid("sort", "unexpected extra results");
  sort_cpu(*call);
  return ffi::Error::Success();
}

ffi::Error SearchsortedCpuImpl(ffi::AnyBuffer a, ffi::AnyBuffer v, ffi::Result<ffi::AnyBuffer> out,
                               ffi::RemainingRets extra, bool right, bool sorted_v) {
  auto call = decode_search(a, v, out, right, sorted_v);
  if (!call.has_value()) return call.error();
  if (!extra.empty()) return invalid("searchsorted", "unexpected extra results");
  searchsorted_cpu(*call);
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(jmp_sort_cpu, SortCpuImpl, bind_sort(ffi::Ffi::Bind()));
XLA_FFI_DEFINE_HANDLER_SYMBOL(jmp_searchsorted_cpu, SearchsortedCpuImpl,
                              bind_searchsorted(ffi::Ffi::Bind()));
XLA_FFI_DEFINE_HANDLER_SYMBOL(jmp_merge_cpu, MergeCpuImpl, bind_merge(ffi::Ffi::Bind()));
XLA_FFI_DEFINE_HANDLER_SYMBOL(jmp_merge_ragged_cpu, RaggedMergeCpuImpl,
                              bind_ragged_merge(ffi::Ffi::Bind()));
XLA_FFI_DEFINE_HANDLER_SYMBOL(jmp_co_rank_cpu, CoRankCpuImpl,
                              bind_co_rank(ffi::Ffi::Bind()));
XLA_FFI_DEFINE_HANDLER_SYMBOL(jmp_is_sorted_cpu, IsSortedCpuImpl,
                              bind_is_sorted(ffi::Ffi::Bind()));

}  // namespace jax_mergepath

namespace nb = nanobind;

template <typename Fn>
static nb::capsule capsule_of(Fn* fn) {
  return nb::capsule(reinterpret_cast<void*>(fn));
}

static nb::list bound_terms(const jax_mergepath::WorkspaceBound& bound) {
  nb::list terms;
  for (int i = 0; i < bound.count; ++i) {
    const jax_mergepath::WorkspaceTerm& term = bound.terms[i];
    terms.append(nb::make_tuple(term.multiplier, term.divisor, term.at_most_one));
  }
  return terms;
}

NB_MODULE(_cpu, m) {
  m.def("registrations", []() {
    nb::dict d;
    d["jmp_merge"] = capsule_of(jax_mergepath::jmp_merge_cpu);
    d["jmp_merge_ragged"] = capsule_of(jax_mergepath::jmp_merge_ragged_cpu);
    d["jmp_co_rank"] = capsule_of(jax_mergepath::jmp_co_rank_cpu);
    d["jmp_is_sorted"] = capsule_of(jax_mergepath::jmp_is_sorted_cpu);
    d["jmp_sort"] = capsule_of(jax_mergepath::jmp_sort_cpu);
    d["jmp_searchsorted"] = capsule_of(jax_mergepath::jmp_searchsorted_cpu);
    d["jmp_top_k"] = capsule_of(jax_mergepath::jmp_top_k_cpu);
    return d;
  });
  add_topk_hooks(m);
  // The tuning table (tuning/*.h, sort_method.h): the workspace bounds that shape the CUDA
  // workspaces (_ffi.py), and what the tests check the kernels' arithmetic with.
  m.def(
      "merge_workspace_bound",
      [](int key_bytes, int payload, int value_bytes) {
        return bound_terms(jax_mergepath::merge_workspace_bound(
            key_bytes, static_cast<jax_mergepath::PayloadKind>(payload), value_bytes));
      },
      "[(multiplier, divisor, at_most_one), ...]: the CUDA merge's int32 workspace a row of L "
      "outputs is at most the sum of multiplier * q, q = L // divisor (at_most_one: min(q, 1)), "
      "for any number of rows (tuning/workspace.h merge_workspace_bound)");
  m.def(
      "sort_workspace_bound",
      [](int key_bytes, int payload, int value_bytes) {
        return bound_terms(jax_mergepath::sort_workspace_bound(
            key_bytes, static_cast<jax_mergepath::PayloadKind>(payload), value_bytes));
      },
      "[(multiplier, divisor, at_most_one), ...]: the same for the CUDA sort of rows of L keys "
      "(tuning/workspace.h sort_workspace_bound)");
  m.def("merge_tile", &jax_mergepath::merge_tile, "outputs per merge tile");
  m.def("ragged_merge_workspace_elements", &jax_mergepath::ragged_merge_workspace_elements,
        "int32 elements of the CUDA ragged merge's workspace: (key_bytes, value_bytes, rows, "
        "out_length) (tuning/workspace.h)");
  m.def(
      "merge_shape_for",
      [](int key_bytes, int payload, int value_bytes) {
        const jax_mergepath::MergeShape shape = jax_mergepath::merge_shape_for(
            key_bytes, static_cast<jax_mergepath::PayloadKind>(payload), value_bytes);
        return nb::make_tuple(shape.threads, shape.items, shape.min_blocks);
      },
      "(threads, items, min_blocks) of the CUDA merge of a key width and payload kind");
  m.def("sort_tile", &jax_mergepath::sort_tile, "keys per block-sort tile");
  m.def(
      "merge_workspace_elements",
      [](int key_bytes, int payload, int value_bytes, int64_t rows, int64_t m, int64_t n,
         bool ragged, bool runs) {
        namespace jmp = jax_mergepath;
        // The layout's valid lengths are only tested for null here (never read): any pointer.
        static const int32_t some_lengths[1] = {0};
        jmp::MergeLayout layout = jmp::rows_layout(rows, m, n);
        if (runs) {
          layout = {jmp::RowMode::kRuns, rows, m + n, 0, some_lengths, nullptr, nullptr};
        } else if (ragged) {
          layout.a_valid = layout.b_valid = some_lengths;
        }
        return jmp::merge_workspace_elements(
            key_bytes, static_cast<jmp::PayloadKind>(payload), value_bytes, layout);
      },
      "int32 elements of the CUDA merge's partition workspace (rows merging m with n: full "
      "rows, ragged rows, or merge_runs rows of m + n); test hook of the exact size");
  m.def(
      "merge_rows_shape",
      [](int key_bytes, int threads, int tile_items, int64_t row_length) {
        const int items =
            jax_mergepath::merge_rows_items(key_bytes, threads, tile_items, row_length);
        const jax_mergepath::RowsShape rows =
            jax_mergepath::merge_rows_shape(threads, items, row_length);
        return nb::make_tuple(items, rows.rows_per_block, rows.threads_per_row);
      },
      "(items, rows_per_block, threads_per_row) of the CUDA rows kernel of a merge shape "
      "(key_bytes; threads, tile_items: merge_shape_for) for full rows of row_length outputs "
      "(items: merge_rows_items; rows_per_block 0: the rows do not fit)");
  m.def(
      "quad_split",
      [](const std::vector<int64_t>& a, const std::vector<int64_t>& b,
         const std::vector<int64_t>& c, const std::vector<int64_t>& e, int64_t diag,
         int64_t tile) {
        // The quad pass's split search (merge_path.h quad_co_rank, which the CUDA partition
        // runs) on four sorted runs of int64 keys, from their pairs' co_rank samples.
        namespace jmp = jax_mergepath;
        const int64_t total = int64_t(a.size() + b.size() + c.size() + e.size());
        if (tile < 1 || diag < 0 || diag > total || (diag % tile != 0 && diag != total)) {
          throw std::invalid_argument("quad_split: diag must be a multiple of tile, or the end");
        }
        for (const auto* run : {&a, &b, &c, &e}) {
          if (!std::is_sorted(run->begin(), run->end())) {
            throw std::invalid_argument("quad_split: every run must be sorted");
          }
        }
        auto reader = [](const std::vector<int64_t>& v) {
          return [&v](int64_t i) { return v[static_cast<size_t>(i)]; };
        };
        const auto ka = reader(a), kb = reader(b), kc = reader(c), kd = reader(e);
        auto samples = [tile](int64_t lp, int64_t lq, const auto& kp, const auto& kq) {
          std::vector<int64_t> s;
          for (int64_t k = 0; k <= jmp::ceil_div(lp + lq, tile); ++k) {
            const int64_t at = k * tile < lp + lq ? k * tile : lp + lq;
            s.push_back(jmp::co_rank<int64_t>(at, lp, lq, lp, lq, kp, kq));
          }
          return s;
        };
        const int64_t la = int64_t(a.size()), lb = int64_t(b.size());
        const int64_t lc = int64_t(c.size()), ld = int64_t(e.size());
        const std::vector<int64_t> xs = samples(la, lb, ka, kb), ys = samples(lc, ld, kc, kd);
        const jmp::QuadSplit s = jmp::quad_co_rank(
            diag, tile, la, lb, lc, ld, [&](int64_t k) { return xs.at(size_t(k)); },
            [&](int64_t k) { return ys.at(size_t(k)); }, ka, kb, kc, kd, jmp::KeysAsRead{});
        return nb::make_tuple(s.x, s.a, s.c);
      },
      "(x, a, c) of a quad pass's split at diagonal diag (a multiple of tile, or the end) of "
      "the four sorted runs a, b, c, e: test hook of merge_path.h quad_co_rank");
  m.def(
      "cuda_sort_shape",
      [](int key_bytes, int payload_bytes, int64_t rows, int64_t length) {
        const jax_mergepath::SortShape shape =
            jax_mergepath::cuda_sort_shape(key_bytes, payload_bytes, rows, length);
        return nb::make_tuple(shape.threads, shape.items);
      },
      "(threads, items) of the CUDA sort's block sort for rows x length keys");
  m.def(
      "sort_partition_elements",
      [](int key_bytes, int payload, int value_bytes, int64_t rows, int64_t length) {
        return jax_mergepath::sort_partition_elements(
            key_bytes, static_cast<jax_mergepath::PayloadKind>(payload), value_bytes, rows,
            length);
      },
      "int32 elements of the CUDA sort's partition workspace; test hook of the exact size");
  m.def("radix_workspace_elements", &jax_mergepath::radix_workspace_elements,
        "int32 elements of the radix path's workspace for rows x n keys of key_bytes with a "
        "payload of payload_bytes, direct or not (tuning/workspace.h: the counting sort's counts, "
        "or the class counts, then CUB's temporary storage, with its spare buffers for the "
        "direct sort)");
  m.def("radix_workspace_per_row", &jax_mergepath::radix_workspace_per_row,
        "int32 elements a row of a batched call's radix path workspace, for rows of n keys "
        "(tuning/workspace.h)");
  m.def("radix_count_elements", &jax_mergepath::radix_count_elements,
        "int32 elements of the radix path's class counts for rows x n keys (sort_method.h)");
  m.def(
      "sort_takes_radix",
      [](int method, int key_bytes, int payload_bytes, int64_t rows, int64_t length,
         bool integer_keys) {
        return jax_mergepath::sort_takes_radix(static_cast<jax_mergepath::SortMethod>(method),
                                               key_bytes, payload_bytes, rows, length,
                                               integer_keys);
      },
      "whether the CUDA sort of rows x length keys (integer keys or not) takes the radix path "
      "under a method (call_args.h SortMethod; sort_method.h)");
  m.def(
      "resolve_sort_method",
      [](int knob, int key_bytes, int payload, int value_bytes, bool integer_keys,
         bool descending, int64_t rows, int64_t length, bool short_keys_onesweep) {
        return static_cast<int>(jax_mergepath::resolve_sort_method(
            static_cast<jax_mergepath::SortMethod>(knob), key_bytes,
            static_cast<jax_mergepath::PayloadKind>(payload), value_bytes, integer_keys,
            descending, rows, length, short_keys_onesweep));
      },
      "the method (call_args.h SortMethod) the CUDA lowering passes for a sort of rows x length "
      "keys (-1: a symbolic extent) under the user's knob (0 auto, 1 merge, 2 radix) "
      "(sort_method.h)");
  m.def("resolve_cpu_sort_method",
        [](int key_bytes, bool integer_keys, int64_t length) {
          return static_cast<int>(
              jax_mergepath::resolve_cpu_sort_method(key_bytes, integer_keys, length));
        },
        "the method the CPU lowering passes for rows of length keys (-1: symbolic) "
        "(sort_method.h)");
  m.def(
      "sort_radix_workspace_per_row",
      [](int method, int key_bytes, int payload_bytes, int64_t rows, int64_t length) {
        return jax_mergepath::sort_radix_workspace_per_row(
            static_cast<jax_mergepath::SortMethod>(method), key_bytes, payload_bytes, rows,
            length);
      },
      "int32 elements a row the radix path adds to the CUDA sort's workspace of a call lowered "
      "with a method, for rows (1, or any other: a bound a row) of a static length "
      "(tuning/workspace.h)");
}
