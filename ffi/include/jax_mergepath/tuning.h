// tuning.h: tile policies, as data. The CUDA partition, merge and block-sort kernels, the CPU
// backend and the Python workspace sizing all read these, so they agree on tile boundaries by
// construction.
#pragma once

#include <cstdint>

#include "jax_mergepath/batch_geometry.h"
#include "jax_mergepath/key_types.h"

namespace jax_mergepath {

inline constexpr int kPartitionThreads = 256;
// At most this many short rows are packed into one tile (their geometry lives in shared memory).
inline constexpr int kMaxRowsPerTile = 256;

// A CUDA merge block by key and payload bytes: `threads` threads, each merging `items`
// consecutive outputs (odd, so a warp's strided shared-memory accesses avoid bank conflicts),
// registers capped so `min_blocks` blocks fit an SM (the tiled kernel only; 1 = no cap). The
// kernel is bound by instruction issue as much as by DRAM: larger tiles spread each thread's
// search and the block's fixed costs over more outputs, and more resident blocks hide the load
// phase. The first three entries were measured on an H200 with tests/gpu/tile_sweep.cu
// (docs/performance.md); the rest keep the first design's shapes, uncapped up to 8 bytes (capping
// them spilled registers).
struct MergeShape {
  int threads, items, min_blocks;
};

constexpr MergeShape merge_shape(int key_bytes, int payload_bytes) {
  if (payload_bytes == 0 && key_bytes <= 4) return {256, 19, 8};
  if (payload_bytes == 0 && key_bytes == 8) return {256, 11, 6};
  if (key_bytes == 4 && payload_bytes == 4) return {256, 15, 6};
  // Over 8 bytes a key and value: capped at 4 blocks (64 registers, no spill). Uncapped, the
  // unsorted-input checks took int64 + int32 from 63 registers to 70 and int64 + int64 from 61
  // to 68: one block of the four an SM fewer, 13% slower (tile_sweep, H100).
  const int bytes = key_bytes + payload_bytes;
  return {256, bytes <= 4 ? 11 : (bytes <= 8 ? 9 : (bytes <= 12 ? 7 : 5)), bytes > 8 ? 4 : 1};
}

constexpr int64_t merge_tile(int key_bytes, int payload_bytes) {
  const MergeShape shape = merge_shape(key_bytes, payload_bytes);
  return int64_t{shape.threads} * shape.items;
}

// A kernel's tile policy as template constants: threads a block, items a thread, blocks an SM
// its registers are capped for, outputs a tile (the merge kernels, quad passes, test sweeps).
template <int kThreadsT, int kItemsT, int kMinBlocksT, int64_t kTileT>
struct TilePolicy {
  static constexpr int kThreads = kThreadsT;
  static constexpr int kItems = kItemsT;
  static constexpr int kMinBlocks = kMinBlocksT;
  static constexpr int64_t kTile = kTileT;
};

// searchsorted's ranks merges (payload kRanksOfA / kRanksOfB, keys of up to 4 bytes): 256 x 27
// at 4 blocks, 2-4% faster than the 4 + 4 byte shape they shared before (256 x 15 at 6) in
// tests/gpu/search_sweep.cu on an H100, and searchsorted 2^23 in 2^23 / 2^24 in 2^24 70.3 /
// 117.2 -> 68.0 / 111.9 us a call (wheel_ab.sh, docs/performance.md). Other merges: merge_shape.
constexpr MergeShape merge_shape_for(int key_bytes, PayloadKind payload, int value_bytes) {
  if (is_ranks(payload) && key_bytes <= 4) return {256, 27, 4};
  return merge_shape(key_bytes, payload_bytes(payload, value_bytes));
}

constexpr int64_t merge_tile_for(int key_bytes, PayloadKind payload, int value_bytes) {
  const MergeShape shape = merge_shape_for(key_bytes, payload, value_bytes);
  return int64_t{shape.threads} * shape.items;
}

template <int kKeyBytes, PayloadKind kPayload, int kValueBytes>
struct MergePolicy : TilePolicy<merge_shape_for(kKeyBytes, kPayload, kValueBytes).threads,
                                merge_shape_for(kKeyBytes, kPayload, kValueBytes).items,
                                merge_shape_for(kKeyBytes, kPayload, kValueBytes).min_blocks,
                                merge_tile_for(kKeyBytes, kPayload, kValueBytes)> {};

// The merge policy of a key type and payload (Value: the payload's element type).
template <typename Traits, PayloadKind kPayload, typename Value>
using MergePolicyFor = MergePolicy<int(sizeof(typename Traits::Bits)), kPayload,
                                   kPayload == PayloadKind::kValue ? int(sizeof(Value)) : 0>;

// Rows no longer than a tile are packed whole into tiles (no partition pass); longer merges are
// cut into tiles whose A/B splits the partition pass writes to the workspace, (tiles + 1) per
// merge. Run pairs (sort passes) are always tiled. Ranks payloads (searchsorted: full rows) are
// packed up to half a tile, where the rows kernel holds at least one row a block whatever its
// items (merge_rows_shape: room >= tile / 2, threads_per_row <= threads / 2 rounded up): a
// batch of short rows then fills its blocks (species_energy's 1024 + 65: six rows a block of
// 256 x 27, where the tiled kernel gave each its own 6912-slot tile).
constexpr bool merge_is_packed(int64_t tile, const MergeLayout& layout, PayloadKind payload) {
  if (layout.mode == RowMode::kRunPairs) return false;
  if (is_ranks(payload)) {
    return layout.mode == RowMode::kSeparate && layout.a_valid == nullptr &&
           layout.b_valid == nullptr && 2 * layout.row_length() <= tile;
  }
  return layout.row_length() <= tile;
}

// Full rows (every element valid) no longer than a tile, one row per thread group: each row gets
// threads_per_row = ceil(length / items) threads (each merging `items` outputs of that row only),
// and a block takes rows_per_block rows, leaving `items` slots of the tile free (a row's last
// thread may read that far past its row). rows_per_block == 0: the rows do not fit this way.
struct RowsShape {
  int64_t rows_per_block, threads_per_row;
};

constexpr RowsShape merge_rows_shape(int threads, int items, int64_t row_length) {
  const int64_t per_row = row_length > 0 ? ceil_div(row_length, items) : 1;
  const int64_t room = int64_t{threads} * items - items;
  int64_t rows = row_length > 0 ? room / row_length : kMaxRowsPerTile;
  rows = rows < threads / per_row ? rows : threads / per_row;
  return {rows < kMaxRowsPerTile ? rows : kMaxRowsPerTile, per_row};
}

// The rows kernel's items a thread for full rows of `row_length`: the tile policy's `items`, or
// items - cut for a cut in kRowsItemsCuts (odd too, at least kMinRowsItems, the rows still
// fitting) whose thread groups step through the fewest slots per row, when that is at least 5%
// fewer than with `items` (the merge is branch-free: a row's last thread steps through all its
// items, valid or not, and the kernel is bound by instruction issue). tile_sweep on an H200,
// int32 rows of 32+32: 19 items 255 us, 17 items 221 us, 13 items 197 us (65 slots a row
// against 76); rows of 512+512 and 2048+2048 keep 19 (2-3% ahead of 17).
inline constexpr int kRowsItemsCuts[] = {2, 4, 6};
inline constexpr int kMinRowsItems = 3;

constexpr int merge_rows_items(int threads, int items, int64_t row_length) {
  if (row_length <= 0) return items;
  auto slots_of = [row_length](int per_thread) {  // slots a row's thread group steps through
    return ceil_div(row_length, per_thread) * per_thread;
  };
  const int64_t wide_slots = slots_of(items);
  int best = items;
  int64_t best_slots = wide_slots;
  for (const int cut : kRowsItemsCuts) {
    const int fewer = items - cut;
    if (fewer < kMinRowsItems ||
        merge_rows_shape(threads, fewer, row_length).rows_per_block == 0) {
      break;  // fewer items hold less of a row: the next cut fits no better
    }
    const int64_t slots = slots_of(fewer);
    if (slots * 20 <= wide_slots * 19 && slots < best_slots) {
      best = fewer;
      best_slots = slots;
    }
  }
  return best;
}

// The same threads and register cap as Policy, `items - kCut` a thread (merge_rows_items).
template <typename Policy, int kCut>
struct RowsPolicy : TilePolicy<Policy::kThreads, Policy::kItems - kCut, Policy::kMinBlocks,
                               int64_t{Policy::kThreads} * (Policy::kItems - kCut)> {};

constexpr int64_t merge_rows_per_tile(int64_t tile, int64_t row_length) {
  const int64_t fit = row_length > 0 ? tile / row_length : 1;
  return fit < 1 ? 1 : (fit > kMaxRowsPerTile ? kMaxRowsPerTile : fit);
}

// The partition pass (ffi/cuda/partition.cuh) searches up to kWarpSearchMaxBoundaries tile
// boundaries with a warp each, more with a thread each; its blocks overlap by one boundary, so
// each block sees every pair of neighbouring boundaries it starts and can check their splits.
// Crossover measured on an H100 (partition times of tile_sweep / search_sweep, docs/performance.md,
// "The warp search on A's absolute grid"): warps win up to ~4000 boundaries (int32 2^24 merge,
// 3450: 11.6 vs 13.7 us), threads above (searchsorted 2^24, 4854: 17.5 vs 15.2 us; int32 2^25
// merge, 6900: 22.4 vs 15.4 us).
inline constexpr int64_t kWarpSearchMaxBoundaries = 4096;

constexpr int64_t partition_boundaries_per_block(int64_t boundaries) {
  return boundaries <= kWarpSearchMaxBoundaries ? kPartitionThreads / 32 : kPartitionThreads;
}

constexpr int64_t partition_blocks(int64_t boundaries) {
  const int64_t fresh = partition_boundaries_per_block(boundaries) - 1;  // the last is shared
  return boundaries <= 1 ? 1 : ceil_div(boundaries - 1, fresh);
}

// Merges whose input order is the caller's (merge, merge_by_key, merge_runs; not a sort pass's
// runs, which its block sort ordered, nor searchsorted's ranks) may get unsorted input: their
// kernels check that the splits chain up and fall back to a permutation when they do not. The
// partition then leaves, after the splits, one flag a partition block (some pair of its
// boundaries does not chain up) and, for the merges it shares with its neighbours, which pairs:
// a mask of partition_mask_words int32 a block (bit j: the block's j-th boundary pair).
// Words of the mask of a block of `pairs` boundary pairs (its fresh boundaries), 32 a word; any
// integer type (the merge kernel computes it in 32 bits).
template <typename Int>
constexpr Int partition_mask_words_of(Int pairs) {
  return (pairs + 31) / 32;
}

constexpr int64_t partition_mask_words(int64_t boundaries) {
  return partition_mask_words_of(partition_boundaries_per_block(boundaries) - 1);
}

constexpr int64_t partition_flag_elements(int64_t boundaries) {
  return partition_blocks(boundaries) * (1 + partition_mask_words(boundaries));
}

constexpr bool merge_checks_order(const MergeLayout& layout, PayloadKind payload) {
  return layout.mode != RowMode::kRunPairs && !is_ranks(payload);
}

// A tiled merge batch whose splits need no order check (a sort pass's run pairs, searchsorted's
// ranks) and whose grid is a few waves launches no partition pass: each tile's block searches
// its own two splits (two warps, partition.cuh warp_split) before its loads, and the call saves
// a kernel (its launch, its run, the gap after it): small sorts are bound by their count of
// kernels (docs/performance.md). Each wave of blocks pays the search's latency, so the bound is in
// waves: at most kSelfSplitMaxWaves waves of min_blocks blocks on kSelfSplitSms SMs (an H100 /
// H200), or kSelfSplitMaxTiles tiles whatever the shape. Measured on an H100 (docs/performance.md):
// int32 sort passes (8 blocks an SM) of 1725 and 3450 tiles (~3.3 waves) gained 2% and 5.7% over
// the partition pass; searchsorted's ranks (then 256 x 15 at 6 blocks) of 4369 tiles (~5.5 waves)
// lost 2-3%, of 8738 lost 17%. Checked merges need the partition's chain flags.
inline constexpr int64_t kSelfSplitMaxTiles = 1024;
inline constexpr int64_t kSelfSplitMaxWaves = 4;
inline constexpr int64_t kSelfSplitSms = 132;

// The most tiles that search their own splits: kSelfSplitMaxWaves waves, at least
// kSelfSplitMaxTiles.
constexpr int64_t merge_searching_tiles_most(int min_blocks) {
  const int64_t waves = kSelfSplitMaxWaves * kSelfSplitSms * (min_blocks > 1 ? min_blocks : 1);
  return waves > kSelfSplitMaxTiles ? waves : kSelfSplitMaxTiles;
}

constexpr bool merge_splits_in_tiles(const MergeLayout& layout, PayloadKind payload,
                                     const TileMap& map, int min_blocks) {
  return !merge_checks_order(layout, payload) &&
         map.tiles() <= merge_searching_tiles_most(min_blocks);
}

// Larger sort passes (run pairs) run the partition pass, and their first tiles ("early tiles":
// merge_searching_tiles_most of them) search their own splits too, while the pass runs: they
// need nothing from it, since the warp search and the pass agree on every split, sorted input or
// not (partition.cuh). So the pass's dependent reads no longer hold up the whole merge, only the
// tiles past the early ones, which by then have their splits (grid_launch.cuh has the launch
// order that makes this safe). Measured on an H100 (docs/performance.md): argsort of 2^24 int64
// -8%, sort of 2^25 int32 -4%.
// Not for searchsorted's ranks (2^23 in 2^23: 62 -> 74 us a call; 87% of its tiles early, each
// wave of its issue-bound merge paying the search) nor for checked merges (the caller's input:
// their tiles read the pass's chain flags after merging, so an early tile would hold its SM until
// the pass ends; the 2^27 merges lost 2%). The number of the merge kernel's early tiles (0: none,
// or no partition pass before it):
constexpr int64_t merge_early_tiles(const MergeLayout& layout, const TileMap& map,
                                    int min_blocks) {
  if (layout.mode != RowMode::kRunPairs) return 0;
  const int64_t most = merge_searching_tiles_most(min_blocks);
  return map.tiles() <= most ? 0 : most;
}

// int32 elements of the CUDA merge's partition workspace (>= 1, so the buffer is never empty):
// the splits, (tiles + 1) per merge, then (merge_checks_order) the partition blocks' chain flags
// and masks (partition_flag_elements).
constexpr int64_t merge_workspace_elements(int key_bytes, PayloadKind payload, int value_bytes,
                                           const MergeLayout& layout) {
  const int64_t tile = merge_tile_for(key_bytes, payload, value_bytes);
  if (merge_is_packed(tile, layout, payload) || layout.merges() == 0) return 1;
  const int64_t boundaries = tile_map(layout, tile).boundaries();
  if (!merge_checks_order(layout, payload)) return boundaries;
  return boundaries + partition_flag_elements(boundaries);
}

// ------------------------------------------------------------------ mergesort
// A block sort cuts every row into tiles of threads x items keys and sorts each (a stable
// in-register network of `items` keys per thread, then merge rounds of run pairs inside the
// tile); passes of run-pair merges (MergeLayout kRunPairs, merge tiles) follow, doubling the run
// width from the tile until it covers the row (on the GPU, large sorts merge four runs a pass:
// quad passes, below). `items` is odd (bank conflicts on the GPU).
// Keys of up to 4 bytes alone: 256 x 17, chosen with tests/gpu/sort_sweep.cu on an H100
// (benchmarks/h100_sort_sweep.txt, block sort of 2^26 int32 keys): against 256 x 15, rows of 64
// 345 vs 431 us, rows of 512 496 vs 547 us, rows of 2048 653 vs 897 us, the tiles of a long row
// 672 vs 674 us; and its 4352-key tile holds a row of 4096 whole (no merge pass). 256 x 19 was
// 4% faster on rows of 512 and slower on the others. The other shapes keep the first design's.
struct SortShape {
  int threads, items;
  int min_blocks = 0;  // __launch_bounds__'s blocks an SM, capping registers (0: no cap)
};

constexpr SortShape sort_shape(int key_bytes, int payload_bytes) {
  const int bytes = key_bytes + payload_bytes;
  return {256, bytes <= 4 ? 17 : (bytes <= 8 ? 11 : (bytes <= 12 ? 9 : 7))};
}

constexpr int64_t sort_tile(int key_bytes, int payload_bytes) {
  const SortShape shape = sort_shape(key_bytes, payload_bytes);
  return int64_t{shape.threads} * shape.items;
}

// The wide block sort: a tile of twice the keys or more, for the long rows of large sorts where it
// leaves fewer passes (sort_takes_wide_tile), measured with tests/gpu/sort_sweep.cu ("long" and
// "pairs") on an H100, 2^27 keys as the tiles of one row, where a two-way pass it saves takes
// ~400 us (keys alone) or ~800 us (pairs). Registers capped (min_blocks; a few bytes spill in
// some shapes): uncapped, ptxas gave these tiles 96-166 registers, 2 blocks of 256 an SM or 1 of
// 512 (benchmarks/h100_sort_sweep_capped.txt, two rounds):
// - 4-byte keys alone: 256 x 39 at 3 blocks, int32 1165 us (uncapped 1309-1310; the 4352-key
//   tile 1266-1268), float32 1212-1213 us (uncapped 1412; 4352 keys 1288-1296; tiles with a
//   NaN or a -0.0, which take the NaN-last order, 2090 against 2141 uncapped);
// - 4-byte keys with 4-byte positions or values (argsort, sort_by_key): 256 x 23 at 3 blocks,
//   float32 + index 1845 us (the 2816-key tile 1898-1905; uncapped 256 x 23 2200, 2 blocks),
//   int32 + index 1747-1755 us (1835-1840); float32 tiles with a NaN or a -0.0 2274 against
//   2252 us;
// - 8-byte keys (block_sort.cuh's shared memory is dynamic: these pass 48 KB) need a tile of 8192
//   keys or more to save a quad pass at 2^27 (benchmarks/h100_sort_sweep_int64.txt): alone 256 x
//   33 at 2 blocks (68 KB), int64 2189 us against 2100 for the 2816-key tile, float64 (the
//   stable network) 2519 against 2087 us; with 4-byte positions 512 x 17 at 2 blocks (105 KB),
//   int64 3163 against 2747 us (256 x 9), float64 3187 against 2724 us. The pass saved is the
//   first quad (the cheapest: a quad tile's four ranges lie side by side); the bench
//   (benchmarks/h100_sort_b96bacf.txt) against the 2816 / 2304-key tiles, 2^27: sort int64
//   10.03 -> 9.18 ms, float64 9.90 -> 9.40, argsort int64 14.29 -> 14.13, float64 14.83 ->
//   14.45; 2^24: sort int64 1.81 -> 1.65, argsort int64 2.24 -> 2.23, float64 2.34 -> 2.28.
// Other keys and payloads keep sort_shape's.
constexpr SortShape wide_sort_shape(int key_bytes, int payload_bytes) {
  if (key_bytes == 4 && payload_bytes == 0) return SortShape{256, 39, 3};
  if (key_bytes == 4 && payload_bytes == 4) return SortShape{256, 23, 3};
  if (key_bytes == 8 && payload_bytes == 0) return SortShape{256, 33, 2};
  if (key_bytes == 8 && payload_bytes == 4) return SortShape{512, 17, 2};
  return sort_shape(key_bytes, payload_bytes);
}

template <int kKeyBytes, int kPayloadBytes, bool kWide = false>
struct SortPolicy {
  static constexpr SortShape kShape =
      kWide ? wide_sort_shape(kKeyBytes, kPayloadBytes) : sort_shape(kKeyBytes, kPayloadBytes);
  static constexpr int kThreads = kShape.threads;
  static constexpr int kItems = kShape.items;
  static constexpr int kMinBlocks = kShape.min_blocks;
  static constexpr int64_t kTile = int64_t{kThreads} * kItems;
};

// Two-way merge levels after the block sort of rows of `length`: runs of width tile, 2 tile, ...
// until one run covers the row.
constexpr int sort_passes(int64_t tile, int64_t length) {
  int passes = 0;
  for (int64_t width = tile; width < length; width *= 2) ++passes;
  return passes;
}

// Quad passes (four-way merges, merge_path.h quad_co_rank; ffi/cuda/quad_merge.cuh): one pass
// does two merge levels with one read and one write of the keys. A quad block copies its four
// ranges into shared memory (cp.async, one element a copy), merges them pairwise there, then the
// two results, with (threads - 1) x items outputs (the first level pads X's outputs to whole
// threads). Its partition costs more than two two-way ones (the split of a quad tile boundary:
// ~60 key loads, ~60 dependent steps over two launches, one thread a boundary, about one wave
// whatever the size: ~75-85 us a pass at 2^25 keys, ~110 us at 2^27 on an H100, before
// four_way_split issued a step's loads together; ~50 / ~64 us since, benchmarks/
// h100_quad_split_loads_ab.txt), so quads pay only on large sorts. (The thresholds below were
// measured with the slower split; cheaper splits may move them down: not measured yet.)
// tests/gpu/quad_sweep.cu on an H100 (one quad pass against the two two-way passes it replaces;
// benchmarks/h100_quad_sweep_cp_async.txt), runs of 2^15: 2^27 int32 keys 694 vs 797 us (256 x
// 19, 4 blocks), float32 keys + int32 values 963 vs 1559 us (256 x 15, 3 blocks), 2^26 int64
// keys 539 vs 804 us (256 x 17, 3 blocks); at 256 MB a pass (runs of 2^14): int32 2^26 401 vs
// 412 us, float32 + int32 2^25 324 vs 418 us; at 128 MB (runs of 2^13): int64 2^24 224 vs 230
// us, int32 2^25 251 vs 217 us. So a sort takes quads when a pass moves at least
// quad_min_bytes: 2^28 for 4-byte elements, 2^27 for wider ones. Keys of 4 or 8 bytes, alone
// or with a 4-byte payload (argsort's int32 positions measured; sort_by_key's 4-byte values run
// the same kernel on uint32 bits); the other shapes (small keys, other payloads) keep two-way
// passes until measured. 4-byte keys alone then took 16-byte chunked loads (quad_merge.cuh,
// tile_io.cuh load_ranges_chunked), whose per-tile cost leaves larger tiles faster: int32 2^27,
// runs of 2^15, two rounds (benchmarks/h100_quad_sweep_chunked.txt): 256 x 19 658-666 us (packed
// loads 688-689), 256 x 21 636-638, 256 x 25 612-616, 256 x 29 591-595, 256 x 33 588-589 us (all
// 62-64 registers, no spill); runs of 2^13 256 x 33 582 us. So 256 x 33 (2 blocks by its
// register cap; 4 fit). quad_min_bytes measured again with it: at 128 MB a pass int32 quads
// still lose (225-231 against 212-216 us, benchmarks/h100_quad_threshold_chunked.txt).
// 8-byte keys with 4-byte positions (argsort of int64 / float64), half the keys of 2^27 in runs
// of 2^15 (benchmarks/h100_quad_sweep_wide.txt): the two-way shape's 256 x 7 740 us (float64
// 771), 256 x 9 726, 256 x 11 698-701 (float64 702), 256 x 13 733-738 us (at 2 or 3 blocks
// alike); 2^24 keys in runs of 2^11: 265 / 257 / 271 us. So 256 x 11 at 3 blocks (63 registers).
// 4-byte keys with 4-byte positions again once float32 tiles without NaN merged by plain
// compares (ordering.h PlainFloatCompare), float32 + int32 2^27 in runs of 2^15, two rounds
// (benchmarks/h100_h200_plain_float_ab.txt): 256 x 15 at 3 blocks 967-968 us on an H100, 934-940
// on an H200; 256 x 13 at 4 blocks 957-958 / 917 us (the NaN-last compares: 982-991 / 956-961).
// So 256 x 13 at 4 blocks.
struct QuadShape {
  int threads, items, min_blocks;
  int64_t tile;
};

constexpr int64_t quad_min_bytes(int element_bytes) {
  return element_bytes <= 4 ? int64_t{1} << 28 : int64_t{1} << 27;
}

constexpr QuadShape quad_shape(int key_bytes, int payload_bytes) {
  const bool keys_alone = payload_bytes == 0;
  const bool chunked = keys_alone && key_bytes <= 4;
  const bool pairs4 = key_bytes == 4 && payload_bytes == 4;
  const int items = chunked                        ? 33
                    : keys_alone && key_bytes == 8 ? 17
                    : pairs4                       ? 13
                    : key_bytes == 8 && payload_bytes == 4
                        ? 11
                        : merge_shape(key_bytes, payload_bytes).items;
  const int threads = 256;
  return {threads, items, chunked ? 2 : pairs4 ? 4 : 3, int64_t{threads - 1} * items};
}

template <int kKeyBytes, int kPayloadBytes>
struct QuadPolicy : TilePolicy<quad_shape(kKeyBytes, kPayloadBytes).threads,
                               quad_shape(kKeyBytes, kPayloadBytes).items,
                               quad_shape(kKeyBytes, kPayloadBytes).min_blocks,
                               quad_shape(kKeyBytes, kPayloadBytes).tile> {};

// Whether a sort of rows x length keys (key_bytes each, carrying payload_bytes) takes quads.
constexpr bool sort_uses_quads(int key_bytes, int payload_bytes, int64_t rows, int64_t length) {
  const bool measured = key_bytes >= 4 && (payload_bytes == 0 || payload_bytes == 4);
  const int element_bytes = key_bytes + payload_bytes;
  return measured && rows * length * element_bytes >= quad_min_bytes(element_bytes);
}

// A sort's pass at run width `width` (< length) is a quad pass iff quads are used and the
// two-way levels left are even (an odd count starts with one two-way pass).
constexpr bool sort_pass_is_quad(bool quads, int64_t width, int64_t length) {
  return quads && sort_passes(width, length) % 2 == 0;
}

// The passes (launches) of a sort after its block sort of `tile`.
constexpr int sort_pass_count(bool quads, int64_t tile, int64_t length) {
  int passes = 0;
  for (int64_t width = tile; width < length;
       width *= sort_pass_is_quad(quads, width, length) ? 4 : 2) {
    ++passes;
  }
  return passes;
}

// Whether a sort of rows x length keys takes the wide block sort (wide_sort_shape; the CUDA sort:
// the CPU sort has no quad passes and keeps sort_tile): where it has a wider tile for these keys,
// the sort takes quads (a grid of thousands of tiles, where the sweep measured), rows are longer
// than the wide tile (rows it would hold whole fill it by halves), and the wide tile leaves fewer
// passes: an odd count of merge levels after sort_tile (a two-way pass, then quads) that it
// makes even, or any count it cuts by two.
constexpr bool sort_takes_wide_tile(int key_bytes, int payload_bytes, int64_t rows,
                                    int64_t length) {
  const int64_t tile = sort_tile(key_bytes, payload_bytes);
  const SortShape wide_shape = wide_sort_shape(key_bytes, payload_bytes);
  const int64_t wide = int64_t{wide_shape.threads} * wide_shape.items;
  const bool quads = sort_uses_quads(key_bytes, payload_bytes, rows, length);
  return wide > tile && quads && length > wide &&
         sort_pass_count(true, wide, length) < sort_pass_count(true, tile, length);
}

// The block sort the CUDA sort takes.
constexpr SortShape cuda_sort_shape(int key_bytes, int payload_bytes, int64_t rows,
                                    int64_t length) {
  return sort_takes_wide_tile(key_bytes, payload_bytes, rows, length)
             ? wide_sort_shape(key_bytes, payload_bytes)
             : sort_shape(key_bytes, payload_bytes);
}

// int32 elements of a quad pass's workspace: the splits of its pairs (A, B), (C, D) every quad
// tile (the two-way partition of run width `width`), then three a boundary of its quad tiles
// (quad_co_rank: x, a, c).
constexpr int64_t quad_workspace_elements(int64_t quad_tile, const MergeLayout& pairs) {
  MergeLayout quads = pairs;
  quads.n = 2 * pairs.n;
  return tile_map(pairs, quad_tile).boundaries() + 3 * tile_map(quads, quad_tile).boundaries();
}

// int32 elements of the CUDA sort's workspace for partitions after a block sort of `tile`: the
// largest pass's (a pass carries the payload as a value: kIndex positions are 4-byte values).
constexpr int64_t sort_partition_elements_from(int64_t tile, int key_bytes, PayloadKind payload,
                                               int value_bytes, int64_t rows, int64_t length) {
  const PayloadKind carried = payload == PayloadKind::kNone ? payload : PayloadKind::kValue;
  const int carried_bytes = payload_bytes(payload, value_bytes);
  const bool quads = sort_uses_quads(key_bytes, carried_bytes, rows, length);
  int64_t most = 1;
  for (int64_t width = tile; width < length;) {
    const MergeLayout pass{RowMode::kRunPairs, rows, length, width, nullptr, nullptr, nullptr};
    const bool quad = sort_pass_is_quad(quads, width, length);
    const int64_t need =
        quad ? quad_workspace_elements(quad_shape(key_bytes, carried_bytes).tile, pass)
             : merge_workspace_elements(key_bytes, carried, carried_bytes, pass);
    most = need > most ? need : most;
    width *= quad ? 4 : 2;
  }
  return most;
}

// ... after the block sort the CUDA sort takes (cuda_sort_shape; the CPU sort needs none).
constexpr int64_t sort_partition_elements(int key_bytes, PayloadKind payload, int value_bytes,
                                          int64_t rows, int64_t length) {
  const SortShape shape =
      cuda_sort_shape(key_bytes, payload_bytes(payload, value_bytes), rows, length);
  return sort_partition_elements_from(int64_t{shape.threads} * shape.items, key_bytes, payload,
                                      value_bytes, rows, length);
}

}  // namespace jax_mergepath
