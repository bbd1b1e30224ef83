// call_args.h (level: shared core): the plain-C++ call interfaces of the batched operations, shared
// by the CPU backend and the CUDA launch functions (no XLA types). Buffers are raw device or host
// pointers.
#pragma once

#include <cstdint>

#include "jax_mergepath/batch_geometry.h"
#include "jax_mergepath/key_types.h"

namespace jax_mergepath {

// How a sort runs (SortCall::method, the FFI attribute `method`), resolved once, when the call
// is lowered (sort_method.h resolve_sort_method, resolve_cpu_sort_method), and carried down as
// data: the handlers check it against the buffers, the launchers follow it.
//   kMerge: the merge sort.
//   kRadix: the radix path (CUDA: the counting sort or scatter of one-byte keys, CUB's onesweep or
//     segmented sort of order keys, ffi/cuda/kernels/; CPU: ffi/cpu/radix_cpu.h) where it can
//     run the call's rows (a shard's, under batch partitioning) with its workspace, else the
//     merge sort. Bit-identical to the merge sort.
//   kRadixDirect (CUDA): the direct radix sort (CUB from the inputs, its spare buffers in the
//     workspace, the sort's own spare buffers empty): no fallback.
//   kAdaptive: the lowering could not decide (a symbolic length under jax.export): the launcher
//     decides from the run-time shape with the same function (sort_method.h sort_takes_radix).
// The user's knob (jax_mergepath/_ffi.py SORT_METHODS: auto, merge, radix) is kAdaptive, kMerge
// or kRadix before the resolution, which takes it as an input.
enum class SortMethod : int { kAdaptive = 0, kMerge = 1, kRadix = 2, kRadixDirect = 3 };

struct MergeCall {
  KeyType key_type;
  bool descending;
  PayloadKind payload;
  int value_bytes;  // kValue only: 1, 2, 4 or 8
  MergeLayout layout;
  const void* a;  // kRuns, kRunPairs: the x array (b is ignored)
  const void* b;
  void* out;
  const void* a_values;  // kValue: values of a (kRuns, kRunPairs: of x)
  const void* b_values;
  void* out_payload;  // kIndex: int32 indices; kValue: values; kRanks*: int32 ranks
  // The device's SMs (the CUDA handlers read them: tuning/merge.h merge_searching_tiles_most); 0 on
  // the CPU, which never reads it.
  int sms;
};

inline int payload_bytes(const MergeCall& call) {
  return payload_bytes(call.payload, call.value_bytes);
}

// co_rank queries: for each of q queries per row, the number of A elements among the first k
// outputs of merge(A_row, B_row). k is clamped to [0, m + n].
struct CoRankCall {
  KeyType key_type;
  bool descending;
  int64_t rows, queries, m, n;
  const int32_t* k;
  const void* a;
  const void* b;
  int32_t* out;
};

// is_sorted: out[row] = 1 iff row is sorted in the key order (directed), else 0.
struct IsSortedCall {
  KeyType key_type;
  bool descending;
  int64_t rows, length;
  const void* x;
  uint8_t* out;
};

// A stable sort of every row of keys (rows, length): out_keys gets the sorted keys and, by
// payload, out_payload nothing (kNone), the int32 source positions (kIndex: argsort) or the
// values moved with their keys (kValue). spare_keys / spare_payload are workspace shaped like
// the outputs (nullptr for a kRadixDirect call, whose spares are in its workspace: tuning/radix.h
// radix_direct): the merge passes ping-pong between them and the outputs.
// Rows already sorted are stored to the outputs as they are checked and skipped after
// (row_sorted), so presorted input costs one read and one write.
struct SortCall {
  KeyType key_type;
  bool descending;
  PayloadKind payload;  // kNone, kIndex or kValue
  int value_bytes;      // kValue only: 1, 2, 4 or 8
  int64_t rows, length;
  const void* keys;
  const void* values;
  void* out_keys;
  void* out_payload;
  void* spare_keys;
  void* spare_payload;
  uint8_t* row_sorted;  // workspace, one byte a row: rows found already sorted
  int sms;              // the device's SMs, for the passes (MergeCall::sms)
  SortMethod method;    // merge sort or radix path (above), resolved when the call was lowered
  bool keys_needed;     // false: the caller drops out_keys (argsort), which the CUDA radix path
                        // then leaves unwritten (unspecified)
};

// One merge pass of a mergesort: the run pairs of width `width` of every row of `keys` (and the
// carried payload `values`, value_bytes wide, or none) merged into `out_keys` / `out_values`;
// rows flagged in call.row_sorted are left alone.
inline MergeCall sort_pass(const SortCall& call, int64_t width, const void* keys, void* out_keys,
                           const void* values, void* out_values, int value_bytes) {
  MergeCall pass{};
  pass.key_type = call.key_type;
  pass.descending = call.descending;
  pass.payload = value_bytes > 0 ? PayloadKind::kValue : PayloadKind::kNone;
  pass.value_bytes = value_bytes;
  pass.layout = {RowMode::kRunPairs, call.rows, call.length, width, nullptr, nullptr,
                 call.row_sorted};
  pass.a = pass.b = keys;
  pass.out = out_keys;
  pass.a_values = pass.b_values = values;
  pass.out_payload = out_values;
  pass.sms = call.sms;
  return pass;
}

// The multiway pass (quad: runs = 4, eight-way: 8) over the runs of width w of the two-way sort
// pass `pairs` of that width: batch_geometry.h multiway_layout, with the pairs' inputs and
// outputs.
inline MergeCall multiway_call(const MergeCall& pairs, int runs) {
  MergeCall call = pairs;
  call.layout = multiway_layout(pairs.layout, runs);
  return call;
}

// The merge of up to kRaggedRuns sorted runs of every row, anywhere in it and of any lengths (a
// sharded sort's received pieces, in chunks or placed one after another): x is (rows, span);
// run r of a row is x[row, start : start + length], start = starts[row, r] clamped to [0, span]
// and length = lengths[row, r] clamped to [0, span - start]. out (rows, out_length) gets their
// stable merge (ties: the earlier run first, whatever the runs' places in the row) and
// out_values the values (value_bytes 4 or 8, laid out as x; 0: none) moved with their keys.
// Preconditions (the callers' runs are slices of sorted shards): each run sorted in the
// directed order, the runs disjoint, a row's lengths summing to out_length (past a shorter sum
// the outputs are left unwritten, past a longer one the merge is cut).
inline constexpr int kRaggedRuns = 8;

struct RaggedMergeCall {
  KeyType key_type;
  bool descending;
  int value_bytes;
  int64_t rows, runs, span, out_length;
  const void* x;
  const int32_t* starts;
  const int32_t* lengths;
  const void* values;
  void* out;
  void* out_values;
};

// Run r of a ragged merge's row: where it starts in the row and its length, clamped into it.
struct RaggedRun {
  int64_t start, length;
};

JMP_HD RaggedRun ragged_run(const RaggedMergeCall& call, int64_t row, int r) {
  if (r >= call.runs) return {0, 0};
  const int64_t start = clamp_length(call.starts[row * call.runs + r], call.span);
  return {start, clamp_length(call.lengths[row * call.runs + r], call.span - start)};
}

// searchsorted: for every query v[row, q], the number of a[row, :] elements that precede it
// ("left": a[i] < v) or that do not follow it ("right": a[i] <= v), in the key order.
// sorted_queries: every row of v is sorted (ascending), so the search is one merge path.
struct SearchCall {
  KeyType key_type;
  bool right;
  bool sorted_queries;
  int64_t rows, length, queries;  // a is (rows, length), v and out are (rows, queries)
  const void* a;
  const void* v;
  int32_t* out;
  int sms;  // the device's SMs, for the merge of sorted queries (MergeCall::sms)
};

// The merge of a searchsorted with sorted queries: queries first on ties for "left" (A = v,
// B = a, ranks of A), after them for "right" (A = a, B = v, ranks of B).
inline MergeCall search_as_merge(const SearchCall& s) {
  MergeCall call{};
  call.key_type = s.key_type;
  call.descending = false;
  call.payload = s.right ? PayloadKind::kRanksOfB : PayloadKind::kRanksOfA;
  call.layout = s.right ? rows_layout(s.rows, s.length, s.queries)
                        : rows_layout(s.rows, s.queries, s.length);
  call.a = s.right ? s.a : s.v;
  call.b = s.right ? s.v : s.a;
  call.out = nullptr;
  call.out_payload = s.out;
  call.sms = s.sms;
  return call;
}

}  // namespace jax_mergepath
