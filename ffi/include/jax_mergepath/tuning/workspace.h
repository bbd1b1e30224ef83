// tuning/workspace.h (level: shared core, tuning): every CUDA workspace size: the exact int32
// elements a call needs (merge_workspace_elements, sort_partition_elements,
// radix_workspace_elements), which the handlers check the buffers against, and the per-row
// bounds the lowering sizes them with (merge_workspace_bound, sort_workspace_bound,
// radix_workspace_per_row; top_k's topk_layout, topk_workspace_per_row and
// topk_workspace_bound), exported to Python by _cpu (ffi/handlers/cpu_module.cc,
// topk_cpu_handler.cc). Sizes follow
// the tiles of tuning/merge.h and tuning/sort.h and the radix path of tuning/radix.h; nothing here
// is a knob but the CUB bound's two constants.
#pragma once

#include <cstdint>

#include "jax_mergepath/batch_geometry.h"
#include "jax_mergepath/call_args.h"
#include "jax_mergepath/key_types.h"
#include "jax_mergepath/tuning/merge.h"
#include "jax_mergepath/tuning/radix.h"
#include "jax_mergepath/tuning/sort.h"
#include "jax_mergepath/tuning/topk.h"

namespace jax_mergepath {

// ------------------------------------------------------------------ exact sizes
// int32 elements of the CUDA merge's partition workspace: the splits, (tiles + 1) per merge,
// then (merge_checks_order) the partition blocks' chain flags and masks
// (partition_flag_elements); 0 where no partition runs (packed rows, no merges).
constexpr int64_t merge_workspace_elements(int key_bytes, PayloadKind payload, int value_bytes,
                                           const MergeLayout& layout) {
  const int64_t tile = merge_tile_for(key_bytes, payload, value_bytes);
  if (merge_is_packed(tile, layout, payload) || layout.merges() == 0) return 0;
  const int64_t boundaries = tile_map(layout, tile).boundaries();
  if (!merge_checks_order(layout, payload)) return boundaries;
  return boundaries + partition_flag_elements(boundaries);
}

// int32 elements of a quad pass's workspace: the splits of its pairs (A, B), (C, D) every quad
// tile (the two-way partition of run width `width`), then three a boundary of its quad tiles
// (quad_co_rank: x, a, c).
constexpr int64_t quad_workspace_elements(int64_t quad_tile, const MergeLayout& pairs) {
  return tile_map(pairs, quad_tile).boundaries() +
         3 * tile_map(multiway_layout(pairs, 4), quad_tile).boundaries();
}

// int32 elements of an eight-way pass's workspace: a count a run at every boundary of its tiles.
constexpr int64_t eight_way_workspace_elements(int64_t eight_way_tile, const MergeLayout& pairs) {
  return kEightWayRuns *
         tile_map(multiway_layout(pairs, kEightWayRuns), eight_way_tile).boundaries();
}

// int32 elements of the CUDA ragged merge's workspace (kernels/ragged_merge.cuh): kRaggedRuns
// counts at every tile boundary, tiles + 1 a row.
constexpr int64_t ragged_merge_workspace_elements(int key_bytes, int value_bytes, int64_t rows,
                                                  int64_t out_length) {
  const int64_t tile = ragged_merge_shape(key_bytes, value_bytes).tile;
  return kRaggedRuns * rows * (ceil_div(out_length, tile) + 1);
}

// int32 elements of the CUDA sort's workspace for partitions after a block sort of `tile`: the
// largest pass's (a pass carries the payload as a value: kIndex positions are 4-byte values);
// 0 without passes.
constexpr int64_t sort_partition_elements_from(int64_t tile, int key_bytes, PayloadKind payload,
                                               int value_bytes, int64_t rows, int64_t length) {
  const PayloadKind carried = payload == PayloadKind::kNone ? payload : PayloadKind::kValue;
  const int carried_bytes = payload_bytes(payload, value_bytes);
  const bool quads = sort_uses_quads(key_bytes, carried_bytes, rows, length);
  const bool eights = sort_uses_eights(key_bytes, carried_bytes, rows, length);
  int64_t most = 0;
  for (int64_t width = tile; width < length;) {
    const MergeLayout pass{RowMode::kRunPairs, rows, length, width, nullptr, nullptr, nullptr};
    const int factor = sort_pass_factor(quads, eights, width, length);
    const int64_t need =
        factor == 8 ? eight_way_workspace_elements(eight_way_shape(key_bytes, carried_bytes).tile,
                                                   pass)
        : factor == 4 ? quad_workspace_elements(quad_shape(key_bytes, carried_bytes).tile, pass)
                      : merge_workspace_elements(key_bytes, carried, carried_bytes, pass);
    most = need > most ? need : most;
    width *= factor;
  }
  return most;
}

// ... after the block sort the CUDA sort takes (cuda_sort_shape; the CPU sort needs none). The
// radix path's workspace (radix_workspace_elements, below) is optional: the lowering adds it only
// to a call that may take that path (jax_mergepath/_ffi.py sort_workspace_per_row), and the path
// declines, for the merge sort, a workspace too small for it.
constexpr int64_t sort_partition_elements(int key_bytes, PayloadKind payload, int value_bytes,
                                          int64_t rows, int64_t length) {
  const SortShape shape =
      cuda_sort_shape(key_bytes, payload_bytes(payload, value_bytes), rows, length);
  return sort_partition_elements_from(int64_t{shape.threads} * shape.items, key_bytes, payload,
                                      value_bytes, rows, length);
}

// int32 elements of the counting scatter's workspace (kernels/counting_scatter.cuh): the tiles'
// counts (a bin's tiles consecutive), then the bins' totals.
constexpr int64_t scatter_workspace_elements(int64_t n) {
  return kCountingBins * ((n + kScatterTile - 1) / kScatterTile) + kCountingBins;
}

// A bound on CUB's onesweep temporary storage for n keys of key_bytes (cub/device/dispatch/
// dispatch_radix_sort.cuh InvokeOnesweep; with DoubleBuffers no extra key or value buffer, the
// direct sort's key and value buffers of n on top): bins (portions x passes x 256 offsets of <= 8
// bytes), lookback (256 int32 a tile of one portion, <= 2^28 keys), counters, each rounded up to
// 256 bytes, plus 255 of alignment.
// Portions hold >= 2^27 keys; passes <= key_bytes (8 radix bits); onesweep tiles hold >=
// kRadixMinOnesweepTile keys (CUB 3.0.1's sm_90 / sm_100 policies for keys of up to 4 bytes:
// 7296 to 9728 keys; sm_80's 4-byte keys 8064). sm_80 builds run 1- and 2-byte keys through
// CUB's older passes, whose spine grows with the SM count: there the bound may fall short. The
// handler asks CUB for the exact size and takes the merge sort if the workspace falls short, so
// a short bound costs speed, never results (the direct sort, whose lowering leaves the sort's
// spares empty, could not fall back: the lowering sends 2-byte keys direct only where every
// architecture built is sm_90 or newer, _cuda.short_keys_onesweep);
// tests/test_sort_radix.py checks it against CUB's answer on the GPU (with this 3840, about
// half the smallest tile).
inline constexpr int64_t kRadixMinOnesweepTile = 3840;
inline constexpr int64_t kRadixPortionAtLeast = int64_t{1} << 27;

// int32 elements of the radix path's workspace for rows x length keys: the counting sort's counts,
// or the encode blocks' class counts (3 a block; blocks never span two rows) and the 4 totals, then
// CUB's temporary storage (a bound in bytes / 4); the direct sort (radix_direct) needs CUB's spare
// keys and values, and one row the counts too (float keys' NaN fix-up). CUB's segmented sort (rows)
// asks for its allocations each rounded up to 256 bytes plus 255: none with DoubleBuffers, the
// spare keys direct.
constexpr int64_t radix_count_elements(int64_t rows, int64_t length) {
  return 3 * rows * ((length + kRadixEncodeTile - 1) / kRadixEncodeTile) + 4;
}

inline constexpr int64_t kSegmentedCubBytes = 2 * 256;  // (beside the spare keys, direct)

constexpr int64_t radix_workspace_elements(int key_bytes, int payload_bytes, int64_t rows,
                                           int64_t length, bool direct) {
  const int64_t n = length;
  if (counting_possible(key_bytes, payload_bytes, n)) return n > kCountingTile ? kCountingBins : 0;
  if (key_bytes == 1) {
    return scatter_possible(1, payload_bytes, 1, n) ? scatter_workspace_elements(n) : 0;
  }
  if (rows > 1) {
    if (direct) return (rows * length * key_bytes + kSegmentedCubBytes + 3) / 4;
    return radix_count_elements(rows, length) + kSegmentedCubBytes / 4;
  }
  const int64_t portions = n / kRadixPortionAtLeast + 1;
  const int64_t portion_keys = n < (int64_t{1} << 28) ? n : (int64_t{1} << 28);
  const int64_t tiles = portion_keys / kRadixMinOnesweepTile + 1;
  const int64_t bins_bytes = portions * key_bytes * 256 * 8 + 255;
  const int64_t lookback_bytes = tiles * 256 * 4 + 255;
  const int64_t counters_bytes = portions * key_bytes * 4 + 255;
  const int64_t cub_bytes = bins_bytes + lookback_bytes + counters_bytes + 255 + 2 * 256;
  // (direct: CUB's spare keys and values too; the counts then hold float keys' NaN fix-up)
  const int64_t spares_bytes = direct ? n * (key_bytes + payload_bytes) + 2 * 255 : 0;
  return radix_count_elements(1, n) + (cub_bytes + spares_bytes + 3) / 4;
}

// The radix path's workspace a row of a batched call (rows >= 1 unknown at lowering: a shard of
// a batch-sharded call holds some): for CUB's segmented sort at least radix_workspace_elements /
// rows for rows >= 2, and, direct, one row's whole need (a kRadixDirect call takes the direct
// sort at whatever count of rows its shard has); none for other keys (rows of one-byte keys are
// counted a block a row, without workspace). A one-row shard of a batched call that is not direct
// finds too little for the one-row radix sort and merge-sorts (sort_method.h
// resolve_sort_method).
constexpr int64_t radix_workspace_per_row(int key_bytes, int payload_bytes, int64_t length,
                                          bool direct) {
  if (!segmented_radix_possible(key_bytes, payload_bytes, 2, length)) return 0;
  if (direct) return radix_workspace_elements(key_bytes, payload_bytes, 1, length, true);
  return radix_count_elements(1, length) + kSegmentedCubBytes / 4;
}

// int32 elements a row that the radix path adds to the CUDA sort's workspace of a call lowered
// with `method` (sort_method.h resolve_sort_method) for rows of a static `length`: for kRadix and
// kRadixDirect, a call of one row (rows == 1) gets the path's exact need, any other (rows >= 2,
// or kUnknownExtent: a symbolic batch) its bound a row for any count of rows; kMerge and
// kAdaptive none (the lowering gives the merge sort's bound; where the launcher takes the radix
// path anyway, it finds what it finds: the counting sort of short rows needs none). The lowering
// takes the larger of this and sort_workspace_bound's per_row.
constexpr int64_t sort_radix_workspace_per_row(SortMethod method, int key_bytes,
                                               int payload_bytes, int64_t rows, int64_t length) {
  if (method != SortMethod::kRadix && method != SortMethod::kRadixDirect) return 0;
  const bool direct = method == SortMethod::kRadixDirect;
  if (rows == 1) return radix_workspace_elements(key_bytes, payload_bytes, 1, length, direct);
  return radix_workspace_per_row(key_bytes, payload_bytes, length, direct);
}

// ------------------------------------------------------------------ workspace bounds
// The CUDA workspaces are shaped (*batch, per_row) when a call is lowered, where the row length
// L is known (symbolic under jax.export) but no device and, under batch sharding, not how many
// rows a shard holds. per_row is a bound written as data, which the _cpu module exports and
// Python evaluates for concrete and symbolic lengths alike:
//   per_row(L) = sum over the terms of multiplier * q, q = floor(L / divisor), or min(q, 1)
//   for a term `at_most_one`,
// such that rows * per_row(L) >= the exact size (merge_workspace_elements,
// sort_partition_elements, which the handlers check the buffer against) for EVERY rows >= 0.
// A term min(floor(L / (p + 1)), 1) is 1 exactly where L > p: it carries the per-row constants
// of a workspace that only rows longer than p need, so rows that need none get none. The
// derivations below use ceil(x / d) <= floor(x / d) + 1 and, for integers x >= 0, d >= 1,
// ceil((x + 2) / d) <= floor(x / d) + 2. tests/test_tuning.py checks the bounds against the
// exact sizes over a grid of shapes.
struct WorkspaceTerm {
  int64_t multiplier, divisor;
  bool at_most_one;
};

struct WorkspaceBound {
  static constexpr int kMaxTerms = 8;  // (the merge's bound has at most 4, the sort's 6)
  WorkspaceTerm terms[kMaxTerms] = {};
  int count = 0;

  // Adds multiplier * floor(L / divisor) (at_most_one: multiplier * min(floor(L / divisor), 1)),
  // into the term of the same kind if there is one.
  constexpr void add(int64_t multiplier, int64_t divisor, bool at_most_one = false) {
    for (int i = 0; i < count; ++i) {
      if (terms[i].divisor == divisor && terms[i].at_most_one == at_most_one) {
        terms[i].multiplier += multiplier;
        return;
      }
    }
    terms[count++] = {multiplier, divisor, at_most_one};
  }

  // Adds `multiplier` for rows longer than p.
  constexpr void add_past(int64_t multiplier, int64_t p) { add(multiplier, p + 1, true); }

  constexpr int64_t per_row(int64_t length) const {
    int64_t sum = 0;
    for (int i = 0; i < count; ++i) {
      const int64_t q = length / terms[i].divisor;
      sum += terms[i].multiplier * (terms[i].at_most_one && q > 1 ? 1 : q);
    }
    return sum;
  }
};

// The CUDA merge (kSeparate or kRuns rows of L outputs, or searchsorted's ranks merge): rows up
// to merge_packed_length (p) need nothing. A longer row has ceil(L / t) + 1 <= floor(L / t) + 2
// boundaries on tile t. A checked merge adds partition_flag_elements: (1 + mask words) a block
// of f fresh boundaries, ceil((boundaries - 1) / f) blocks <= rows * ceil((ceil(L / t) + 1) / f)
// <= rows * (floor(L / (t f)) + 2), for the warp and the thread search both (either may run).
constexpr WorkspaceBound merge_workspace_bound(int key_bytes, PayloadKind payload,
                                               int value_bytes) {
  const int64_t tile = merge_tile_for(key_bytes, payload, value_bytes);
  const int64_t packed = merge_packed_length(tile, payload);
  WorkspaceBound bound;
  bound.add(1, tile);
  bound.add_past(2, packed);
  if (!is_ranks(payload)) {  // the caller's order: checked (merge_checks_order)
    const int64_t per_blocks[] = {kPartitionThreads / 32, kPartitionThreads};  // warp, thread
    for (const int64_t per_block : per_blocks) {
      const int64_t fresh = per_block - 1;
      const int64_t words = partition_mask_words_of(fresh);
      bound.add(1 + words, tile * fresh);
      bound.add_past(2 * (1 + words), packed);
    }
  }
  return bound;
}

// The CUDA sort of rows of L keys: every pass's run width W is at least the narrow block tile s
// (the wide one is wider), so rows up to s need nothing. A run-pair map of width W on tile t has
// P = ceil(L / 2W) merges of T = ceil(min(L, 2W) / t) tiles, P (T + 1) < 2 L / t + L / W + 2
// boundaries a row (L <= 2W: P = 1; else P T < (L / 2W + 1)(2W / t + 1) with 2W < L). A two-way
// pass is one map on the merge tile; a quad pass one on the quad tile at W and three int32 a
// boundary of one at 2W; an eight-way pass eight int32 a boundary of one at 4W on its tile e
// (< 2 L / e + L / 4W + 2 boundaries, W >= s). The sum of the bounds bounds the largest pass.
constexpr WorkspaceBound sort_workspace_bound(int key_bytes, PayloadKind payload,
                                              int value_bytes) {
  const int carried_bytes = payload_bytes(payload, value_bytes);
  const int64_t block = sort_tile(key_bytes, carried_bytes);
  WorkspaceBound bound;
  // two-way: < 2 L / t + L / s + 2  <=  2 floor(L / t) + floor(L / s) + 4
  bound.add(2, merge_tile(key_bytes, carried_bytes));
  bound.add(1, block);
  bound.add_past(4, block);
  if (sort_may_use_quads(key_bytes, carried_bytes)) {
    // quad: < 8 L / q + L / s + 3 L / 2s + 8  <=  8 floor(L / q) + floor(L / s) +
    // 3 floor(L / 2s) + 19
    bound.add(8, quad_shape(key_bytes, carried_bytes).tile);
    bound.add(1, block);
    bound.add(3, 2 * block);
    bound.add_past(19, block);
  }
  if (sort_may_use_eights(key_bytes, carried_bytes)) {
    // eight-way: < 16 L / e + 2 L / s + 16  <=  16 floor(L / e) + 2 floor(L / s) + 34
    bound.add(16, eight_way_shape(key_bytes, carried_bytes).tile);
    bound.add(2, block);
    bound.add_past(34, block);
  }
  return bound;
}

// ------------------------------------------------------------------ top_k
// The CUDA call's workspace: one int32 array (*batch, per_row) sized at lowering; the handler
// lays it out as regions of `rows` entries each (byte offsets below, 8-byte aligned) and checks
// its size against `bytes`. The block strategy needs none. Sorted composites (kGridSort):
// six buffers of 8 bytes a candidate (keys, values, outputs and spares of the sorts), the sort's
// row flags and its partition workspace (tuning.h sort_partition_elements, the merge sort).
struct TopkLayout {
  TopkStrategy strategy;
  int64_t capacity, tiles;  // a grid row's candidates and tiles
  int64_t states, cand_keys, cand_indices, tile_ties;
  int64_t sort_buffers[6];
  int64_t row_flags, splits, splits_elements;
  int64_t bytes;
};

constexpr int64_t topk_align8(int64_t bytes) { return (bytes + 7) / 8 * 8; }

// The merge sorts of the candidates (kGridSort): keys and payload of each (key_bytes of the
// order key; 8: sorted by index, then by key).
constexpr int64_t topk_sort_splits(int key_bytes, int64_t rows, int64_t capacity) {
  if (key_bytes <= 4) return sort_partition_elements(8, PayloadKind::kNone, 0, rows, capacity);
  const int64_t by_index = sort_partition_elements(4, PayloadKind::kValue, 8, rows, capacity);
  const int64_t by_key = sort_partition_elements(8, PayloadKind::kValue, 4, rows, capacity);
  return by_index > by_key ? by_index : by_key;
}

// The layout of a call's strategy (topk_resolve_strategy of `forced`: -1, tuning's choice);
// kNone, kInvalid and the strategies of a block or a group a row lay out nothing. The grid's and
// the stream's strategies lay out the same.
inline TopkLayout topk_layout(int key_bytes, int64_t k, int64_t rows, int64_t length,
                              int64_t forced = -1) {
  TopkLayout l{};
  l.strategy = topk_resolve_strategy(forced, k, length);
  if (!topk_is_grid(l.strategy) || rows <= 0) return l;
  l.capacity = topk_grid_capacity(k, length);
  l.tiles = ceil_div(length, kTopkTile);
  int64_t at = 0;
  auto region = [&](int64_t bytes_a_row) {
    const int64_t start = at;
    at += topk_align8(rows * bytes_a_row);
    return start;
  };
  l.states = region(int64_t(sizeof(TopkRowState)));
  l.cand_keys = region(l.capacity * key_bytes);
  l.cand_indices = region(l.capacity * 4);
  l.tile_ties = region(l.tiles * 4);
  l.row_flags = l.splits = at;
  if (l.strategy == TopkStrategy::kGridSort || l.strategy == TopkStrategy::kStreamSort) {
    for (int64_t& buffer : l.sort_buffers) buffer = region(l.capacity * 8);
    l.row_flags = region(1);
    l.splits_elements = topk_sort_splits(key_bytes, rows, l.capacity);
    l.splits = at;
    at += topk_align8(4 * l.splits_elements);
  }
  l.bytes = at;
  return l;
}

// int32 elements a row of the workspace of rows of `length` keys, for any number of rows (a
// shard of a batch-sharded call has its rows' part): rows * this >= topk_layout(...).bytes / 4.
// Each region is rows x its bytes a row, 8-byte aligned (at most 8 bytes more, once a region:
// 2 elements a row), and the sort's partition workspace is within its bound a row.
inline int64_t topk_workspace_per_row(int key_bytes, int64_t k, int64_t length,
                                      int64_t forced = -1) {
  const TopkStrategy strategy = topk_resolve_strategy(forced, k, length);
  if (!topk_is_grid(strategy)) return 0;
  const int64_t capacity = topk_grid_capacity(k, length);
  int64_t bytes = int64_t(sizeof(TopkRowState)) + capacity * key_bytes + 8 + capacity * 4 + 8 +
                  ceil_div(length, kTopkTile) * 4 + 8;
  if (strategy == TopkStrategy::kGridSort || strategy == TopkStrategy::kStreamSort) {
    bytes += 6 * (capacity * 8 + 8) + 8 + 8;
    const int64_t splits =
        key_bytes <= 4
            ? sort_workspace_bound(8, PayloadKind::kNone, 0).per_row(capacity)
            : (sort_workspace_bound(4, PayloadKind::kValue, 8).per_row(capacity) >
                       sort_workspace_bound(8, PayloadKind::kValue, 4).per_row(capacity)
                   ? sort_workspace_bound(4, PayloadKind::kValue, 8).per_row(capacity)
                   : sort_workspace_bound(8, PayloadKind::kValue, 4).per_row(capacity));
    bytes += 4 * splits + 8;
  }
  return ceil_div(bytes, 4);
}

// A sort's workspace bound a row (tuning.h sort_workspace_bound) as `per_key` int32 a key plus
// `constant`: its floor terms sum to at most L * sum(multiplier / divisor) <= per_key * L, its
// at-most-one terms to at most the sum of their multipliers. (Fewer terms than the sort's own:
// a WorkspaceBound holds eight.)
struct TopkLinearBound {
  int64_t per_key, constant;
};

constexpr TopkLinearBound topk_linear_bound(const WorkspaceBound& sort) {
  int64_t constant = 0;
  double share = 0.0;
  for (int i = 0; i < sort.count; ++i) {
    if (sort.terms[i].at_most_one) {
      constant += sort.terms[i].multiplier;
    } else {
      share += double(sort.terms[i].multiplier) / double(sort.terms[i].divisor);
    }
  }
  const int64_t per_key = static_cast<int64_t>(share) + (share > double(int64_t(share)) ? 1 : 0);
  return {per_key, constant};
}

// The same as a bound for every length (a symbolic axis of jax.export): (multiplier, divisor,
// at_most_one) terms of the length L (tuning.h WorkspaceBound): the state and the regions'
// alignment (a constant for rows of at least one key), the candidates (at most L, of key_bytes
// + 4 bytes), the tiles' tie counts and, for k past kTopkFinalMaxK, the sorts' buffers, row flag
// and partition workspace (both sorts' for 8-byte keys).
inline WorkspaceBound topk_workspace_bound(int key_bytes, int64_t k) {
  WorkspaceBound bound;
  bound.add_past(ceil_div(int64_t(sizeof(TopkRowState)) + 16 * 8, 4), 0);
  bound.add(ceil_div(key_bytes + 4, 4), 1);
  bound.add(1, kTopkTile);  // ceil(L / tile) <= floor(L / tile) + 1
  bound.add_past(1, 0);
  if (k > kTopkFinalMaxK) {
    bound.add(12, 1);  // six buffers of 8 bytes a candidate
    bound.add_past(1, 0);  // the row flag
    const TopkLinearBound a = topk_linear_bound(
        key_bytes <= 4 ? sort_workspace_bound(8, PayloadKind::kNone, 0)
                       : sort_workspace_bound(4, PayloadKind::kValue, 8));
    const TopkLinearBound b = topk_linear_bound(
        key_bytes <= 4 ? sort_workspace_bound(8, PayloadKind::kNone, 0)
                       : sort_workspace_bound(8, PayloadKind::kValue, 4));
    bound.add(a.per_key > b.per_key ? a.per_key : b.per_key, 1);
    bound.add_past(a.constant > b.constant ? a.constant : b.constant, 0);
  }
  return bound;
}

}  // namespace jax_mergepath
