// tuning.h (level: shared core): every tuning constant of the package and the tile policies built
// from them, as data. The CUDA kernels, the CPU backend and the workspace sizing (exported to
// Python by the _cpu module) all read these, so they agree on tile boundaries by construction.
// Comments state what a value must satisfy; the measurements that chose it are in
// docs/performance.md, made with the sweeps of perf/sweeps/. A knob a sweep varies has a `-D
// JMP_<NAME>=value` override, for the sweeps' own nvcc builds: the package's _cpu and _cuda modules
// are built with the defaults (the workspace bound that _cpu exports must match the kernels of
// _cuda).
#pragma once

#include <cstdint>

#include "jax_mergepath/batch_geometry.h"
#include "jax_mergepath/key_types.h"

namespace jax_mergepath {

// ------------------------------------------------------------------ launch knobs
// Threads a block of the two-way partition pass (partition.cuh): whole warps, at least two (its
// warp search gives each block kPartitionThreads / 32 boundaries, one shared with the next
// block). Measured with perf/sweeps/partition_threads_ab.sh (docs/performance.md).
#ifndef JMP_PARTITION_THREADS
#define JMP_PARTITION_THREADS 256
#endif
inline constexpr int kPartitionThreads = JMP_PARTITION_THREADS;
static_assert(kPartitionThreads % 32 == 0 && kPartitionThreads >= 64 && kPartitionThreads <= 1024,
              "kPartitionThreads: whole warps, 64 to 1024 threads");

// Threads a block of the quad split (quad_merge.cuh quad_partition_kernel, one thread a
// boundary): whole warps. Measured with perf/sweeps/partition_threads_ab.sh (docs/performance.md).
#ifndef JMP_QUAD_PARTITION_THREADS
#define JMP_QUAD_PARTITION_THREADS 64
#endif
inline constexpr int kQuadPartitionThreads = JMP_QUAD_PARTITION_THREADS;
static_assert(kQuadPartitionThreads % 32 == 0 && kQuadPartitionThreads >= 32 &&
                  kQuadPartitionThreads <= 1024,
              "kQuadPartitionThreads: whole warps, at most 1024 threads");

// Threads a block of the eight-way split (eight_way_merge.cuh eight_way_partition_kernel, eight
// lanes a boundary): 32 boundaries a block.
inline constexpr int kEightWayPartitionThreads = 256;

// The partition pass searches up to this many tile boundaries with a warp each, more with a
// thread each (partition_boundaries_per_block): the warp search's latency wins on small grids,
// the thread search's load throughput on large ones. Measured with perf/sweeps/tile_sweep.cu and
// search_sweep.cu (docs/performance.md).
#ifndef JMP_WARP_SEARCH_MAX_BOUNDARIES
#define JMP_WARP_SEARCH_MAX_BOUNDARIES 4096
#endif
inline constexpr int64_t kWarpSearchMaxBoundaries = JMP_WARP_SEARCH_MAX_BOUNDARIES;

// Chain flags one lane of a checked merge's tile loads at once (merge_kernels.cuh
// chain_broken_in_merge): >= 1; more loads in flight, more registers.
#ifndef JMP_FLAGS_A_LANE
#define JMP_FLAGS_A_LANE 8
#endif
inline constexpr int kFlagsALane = JMP_FLAGS_A_LANE;
static_assert(kFlagsALane >= 1, "kFlagsALane: at least one flag a lane");

// Keys one is_sorted thread checks (search_kernels.cu, 16-byte loads): a multiple of 16, so the
// chunks of 1-byte keys start 16-byte aligned too. Measured with whole row sorts
// (docs/performance.md, "Row sorts").
#ifndef JMP_IS_SORTED_CHUNK
#define JMP_IS_SORTED_CHUNK 16
#endif
inline constexpr int kIsSortedChunk = JMP_IS_SORTED_CHUNK;
static_assert(kIsSortedChunk % 16 == 0, "kIsSortedChunk: a multiple of 16 keys");

// Threads a block of the one-thread-a-query kernels (search_kernels.cu: co_rank, is_sorted and
// searchsorted's binary searches): whole warps, at most 1024.
#ifndef JMP_QUERY_THREADS
#define JMP_QUERY_THREADS 256
#endif
inline constexpr int kQueryThreads = JMP_QUERY_THREADS;
static_assert(kQueryThreads % 32 == 0 && kQueryThreads <= 1024,
              "kQueryThreads: whole warps, at most 1024 threads");

// The CPU backend (parallel_for.h): work of fewer units than kSerialBelow runs on the calling
// thread (starting threads costs more than it saves); a call uses at most kMaxHostChunks host
// threads. A unit is an element merged, sorted or checked; one query's search counts as
// kQueryWork units (co_rank, searchsorted's binary searches).
inline constexpr int64_t kSerialBelow = int64_t{1} << 17;
inline constexpr int64_t kMaxHostChunks = 256;
inline constexpr int64_t kQueryWork = 32;

// ------------------------------------------------------------------ merge tiles
// At most this many short rows are packed into one tile (their geometry lives in shared memory).
inline constexpr int kMaxRowsPerTile = 256;

// A CUDA merge block by key and payload bytes: `threads` threads, each merging `items`
// consecutive outputs (odd, so a warp's strided shared-memory accesses avoid bank conflicts),
// registers capped so `min_blocks` blocks fit an SM (the tiled kernel only; 1 = no cap). Shapes
// over 8 bytes are capped at 4 blocks: uncapped, the unsorted-input checks spill them to one
// block an SM fewer. Measured with perf/sweeps/tile_sweep.cu (docs/performance.md, "Merge tile
// shapes").
struct MergeShape {
  int threads, items, min_blocks;
};

constexpr MergeShape merge_shape(int key_bytes, int payload_bytes) {
  if (payload_bytes == 0 && key_bytes <= 4) return {256, 19, 8};
  if (payload_bytes == 0 && key_bytes == 8) return {256, 11, 6};
  if (key_bytes == 4 && payload_bytes == 4) return {256, 15, 6};
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

// searchsorted's ranks merges (payload kRanksOfA / kRanksOfB, keys of up to 4 bytes) take their
// own shape; other merges merge_shape's. Measured with perf/sweeps/search_sweep.cu
// (docs/performance.md, "Its own tile").
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
// items (merge_rows_shape: room >= tile / 2, threads_per_row <= threads / 2 rounded up), so a
// batch of short rows fills its blocks instead of giving each row a tile (docs/performance.md,
// "Short rows in the rows kernel").
constexpr bool merge_is_packed(int64_t tile, const MergeLayout& layout, PayloadKind payload) {
  if (layout.mode == RowMode::kRunPairs) return false;
  if (is_ranks(payload)) {
    return layout.mode == RowMode::kSeparate && layout.a_valid == nullptr &&
           layout.b_valid == nullptr && 2 * layout.row_length() <= tile;
  }
  return layout.row_length() <= tile;
}

// The longest row (outputs) that merge_is_packed packs with a tile policy of `tile` outputs:
// full rows, which a ranks payload always has.
constexpr int64_t merge_packed_length(int64_t tile, PayloadKind payload) {
  return is_ranks(payload) ? tile / 2 : tile;
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
// items, valid or not, and the kernel is bound by instruction issue). Measured with
// perf/sweeps/tile_sweep.cu (docs/performance.md, "Rows-kernel items a thread").
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

// ------------------------------------------------------------------ partition
// The partition pass (ffi/cuda/partition.cuh) searches up to kWarpSearchMaxBoundaries tile
// boundaries with a warp each, more with a thread each; its blocks overlap by one boundary, so
// each block sees every pair of neighbouring boundaries it starts and can check their splits.
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
// a kernel (small sorts are bound by their count of kernels). Each wave of blocks pays the
// search's latency, so the bound is in waves: at most kSelfSplitMaxWaves waves of min_blocks
// blocks on the device's `sms` SMs (MergeCall::sms, read from the device by the CUDA handlers),
// and at least kSelfSplitMaxTiles tiles whatever the shape and device. Checked merges need the
// partition's chain flags. Measured with whole sorts and searchsorted (docs/performance.md,
// "Passes of at most four waves"). Nothing here changes a workspace: it is sized for the
// partition pass either way.
#ifndef JMP_SELF_SPLIT_MAX_TILES
#define JMP_SELF_SPLIT_MAX_TILES 1024
#endif
#ifndef JMP_SELF_SPLIT_MAX_WAVES
#define JMP_SELF_SPLIT_MAX_WAVES 4
#endif
inline constexpr int64_t kSelfSplitMaxTiles = JMP_SELF_SPLIT_MAX_TILES;
inline constexpr int64_t kSelfSplitMaxWaves = JMP_SELF_SPLIT_MAX_WAVES;

// The most tiles that search their own splits on a device of `sms` SMs: kSelfSplitMaxWaves
// waves, at least kSelfSplitMaxTiles (sms <= 0, unknown: kSelfSplitMaxTiles).
constexpr int64_t merge_searching_tiles_most(int min_blocks, int sms) {
  const int64_t waves =
      kSelfSplitMaxWaves * (sms > 0 ? sms : 0) * (min_blocks > 1 ? min_blocks : 1);
  return waves > kSelfSplitMaxTiles ? waves : kSelfSplitMaxTiles;
}

constexpr bool merge_splits_in_tiles(const MergeLayout& layout, PayloadKind payload,
                                     const TileMap& map, int min_blocks, int sms) {
  return !merge_checks_order(layout, payload) &&
         map.tiles() <= merge_searching_tiles_most(min_blocks, sms);
}

// Larger sort passes (run pairs) run the partition pass, and their first tiles ("early tiles":
// merge_searching_tiles_most of them) search their own splits too, while the pass runs: they
// need nothing from it, since the warp search and the pass agree on every split, sorted input or
// not (partition.cuh). So the pass's dependent reads no longer hold up the whole merge, only the
// tiles past the early ones, which by then have their splits (grid_launch.cuh has the launch
// order that makes this safe). Not for searchsorted's ranks (most of their tiles would be early,
// and each wave of their issue-bound merge pays the search) nor for checked merges (their tiles
// read the pass's chain flags after merging, so an early tile would hold its SM until the pass
// ends). Measured with whole sorts (docs/performance.md, "Early tiles"). The number of the merge
// kernel's early tiles (0: none, or no partition pass before it):
constexpr int64_t merge_early_tiles(const MergeLayout& layout, const TileMap& map, int min_blocks,
                                    int sms) {
  if (layout.mode != RowMode::kRunPairs) return 0;
  const int64_t most = merge_searching_tiles_most(min_blocks, sms);
  return map.tiles() <= most ? 0 : most;
}

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

// ------------------------------------------------------------------ mergesort
// A block sort cuts every row into tiles of threads x items keys and sorts each (a stable
// in-register network of `items` keys per thread, then merge rounds of run pairs inside the
// tile); passes of run-pair merges (MergeLayout kRunPairs, merge tiles) follow, doubling the run
// width from the tile until it covers the row (on the GPU, large sorts merge four runs a pass:
// quad passes, below). `items` is odd (bank conflicts on the GPU). Measured with
// perf/sweeps/sort_sweep.cu (docs/performance.md, "Block sort 256 x 17").
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
// leaves fewer passes (sort_takes_wide_tile), registers capped (min_blocks; uncapped, these
// tiles left 2 blocks of 256 an SM or 1 of 512). 8-byte keys need a tile of 8192 keys or more to
// save a quad pass at 2^27 keys (block_sort.cuh's shared memory is dynamic: these pass 48 KB).
// Wider than sort_shape's whenever it differs. Measured with perf/sweeps/sort_sweep.cu ("long",
// "pairs") and whole sorts (docs/performance.md, "Wide block-sort shapes").
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
// ranges into shared memory (cp.async, one element a copy; 4-byte keys alone in 16-byte chunks),
// merges them pairwise there, then the two results, with (threads - 1) x items outputs (the first
// level pads X's outputs to whole threads). Its partition (the split of a quad tile boundary,
// about one wave of dependent loads whatever the size) costs more than two two-way ones, so a
// sort takes quads only when a pass moves at least quad_min_bytes. Only measured shapes take
// them (sort_may_use_quads: keys of 4 or 8 bytes, alone or with a 4-byte payload; sort_by_key's
// 4-byte values run argsort's kernel on uint32 bits); the others keep two-way passes. Measured
// with perf/sweeps/quad_sweep.cu (docs/performance.md, "Quad threshold" and the quad tiles).
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

// Eight-way passes (ffi/cuda/eight_way_merge.cuh): one pass does three merge levels with one
// read and one write of the keys, a block merging its eight ranges pairwise in shared memory,
// then the four results, then the two; (threads - 3) x items outputs a tile (the first level
// pads three groups' outputs to whole threads). Its split searches the eight runs from their
// lengths, eight lanes a boundary (one launch, no samples). Sorts that take quads take them for
// elements over 4 bytes (sort_may_use_eights): one replaces a quad pass and a two-way pass
// 19-30% faster (2^24 to 2^27 keys); 4-byte keys alone keep quads (int32 4-12% faster, float32
// 2-4% slower at 2^27). Shapes by the same sweep: 8-byte keys alone 256 x 21 at 2 blocks (256 x 17
// at 3: 2-4% slower), 4 + 4 bytes 256 x 15 at 3 (256 x 13 at 4: 2-5% slower), 8 + 4 bytes
// 256 x 11 at 3 (256 x 13: 1-4% slower). Measured with perf/sweeps/quad_sweep.cu "eight"
// (docs/performance.md, "Eight-way passes").
constexpr QuadShape eight_way_shape(int key_bytes, int payload_bytes) {
  // (the shapes sort_may_use_eights admits: 8-byte keys alone, 4 + 4 and 8 + 4 bytes)
  const bool keys8 = key_bytes == 8 && payload_bytes == 0;
  const int items = keys8 ? 21 : (key_bytes == 4 ? 15 : 11);
  const int threads = 256;
  return {threads, items, keys8 ? 2 : 3, int64_t{threads - 3} * items};
}

template <int kKeyBytes, int kPayloadBytes>
struct EightWayPolicy : TilePolicy<eight_way_shape(kKeyBytes, kPayloadBytes).threads,
                                   eight_way_shape(kKeyBytes, kPayloadBytes).items,
                                   eight_way_shape(kKeyBytes, kPayloadBytes).min_blocks,
                                   eight_way_shape(kKeyBytes, kPayloadBytes).tile> {};

// Whether sorts of these keys and payload take quads when large enough (the measured shapes).
constexpr bool sort_may_use_quads(int key_bytes, int payload_bytes) {
  return key_bytes >= 4 && (payload_bytes == 0 || payload_bytes == 4);
}

// Whether a sort of rows x length keys (key_bytes each, carrying payload_bytes) takes quads.
constexpr bool sort_uses_quads(int key_bytes, int payload_bytes, int64_t rows, int64_t length) {
  const int element_bytes = key_bytes + payload_bytes;
  return sort_may_use_quads(key_bytes, payload_bytes) &&
         rows * length * element_bytes >= quad_min_bytes(element_bytes);
}

// Whether sorts of these keys and payload take eight-way passes where they take quads (above).
constexpr bool sort_may_use_eights(int key_bytes, int payload_bytes) {
  return sort_may_use_quads(key_bytes, payload_bytes) && key_bytes + payload_bytes > 4;
}

constexpr bool sort_uses_eights(int key_bytes, int payload_bytes, int64_t rows, int64_t length) {
  return sort_may_use_eights(key_bytes, payload_bytes) &&
         sort_uses_quads(key_bytes, payload_bytes, rows, length);
}

// The runs a sort's pass at run width `width` (< length) merges at once: with eight-way passes,
// 8 while the two-way levels left are a multiple of three, else a quad (two left over) or a
// two-way pass (one) first; with quads alone, 4 while they are even, else a two-way pass first;
// else 2.
constexpr int sort_pass_factor(bool quads, bool eights, int64_t width, int64_t length) {
  const int levels = sort_passes(width, length);
  if (eights && levels % 3 == 0) return 8;
  if (eights) return levels % 3 == 2 ? 4 : 2;
  return quads && levels % 2 == 0 ? 4 : 2;
}

// The passes (launches) of a sort after its block sort of `tile`.
constexpr int sort_pass_count(bool quads, bool eights, int64_t tile, int64_t length) {
  int passes = 0;
  for (int64_t width = tile; width < length;
       width *= sort_pass_factor(quads, eights, width, length)) {
    ++passes;
  }
  return passes;
}

// Whether a sort of rows x length keys takes the wide block sort (wide_sort_shape; the CUDA sort:
// the CPU sort has no quad passes and keeps sort_tile): where it has a wider tile for these keys,
// the sort takes quads (a grid of thousands of tiles, where the sweep measured), rows are longer
// than the wide tile (rows it would hold whole fill it by halves), and the wide tile leaves fewer
// passes: an odd count of merge levels after sort_tile (a two-way pass, then quads) that it
// makes even, or any count it cuts by two. Passes counted as quads alone, as measured: with
// eight-way passes the counts may tie (4 + 4 bytes at 2^26 + 5 keys: five passes after either
// tile) or differ the other way (8 + 4 bytes at ~1.5e8 keys: six narrow, five wide); not
// re-measured (docs/performance.md, "Open").
constexpr bool sort_takes_wide_tile(int key_bytes, int payload_bytes, int64_t rows,
                                    int64_t length) {
  const int64_t tile = sort_tile(key_bytes, payload_bytes);
  const SortShape wide_shape = wide_sort_shape(key_bytes, payload_bytes);
  const int64_t wide = int64_t{wide_shape.threads} * wide_shape.items;
  const bool quads = sort_uses_quads(key_bytes, payload_bytes, rows, length);
  return wide > tile && quads && length > wide &&
         sort_pass_count(true, false, wide, length) < sort_pass_count(true, false, tile, length);
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
  return tile_map(pairs, quad_tile).boundaries() +
         3 * tile_map(multiway_layout(pairs, 4), quad_tile).boundaries();
}

// The runs an eight-way pass merges at once (its groups: batch_geometry.h multiway_layout).
inline constexpr int kEightWayRuns = 8;

// int32 elements of an eight-way pass's workspace: a count a run at every boundary of its tiles.
constexpr int64_t eight_way_workspace_elements(int64_t eight_way_tile, const MergeLayout& pairs) {
  return kEightWayRuns *
         tile_map(multiway_layout(pairs, kEightWayRuns), eight_way_tile).boundaries();
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

// ------------------------------------------------------------------ radix path
// A sort the merge sort loses to XLA's radix sort runs CUB's onesweep radix sort instead, inside
// the same FFI call (radix_sort.cuh): the keys' directed order keys (ordering.h) sorted as
// unsigned integers, stable, the payload alongside; float keys get their -0.0 and NaN bits back
// by a stable fix-up. Results are bit-identical to the merge sort's. The method of a call:
// kAuto takes the radix sort where sort_takes_radix says (thresholds measured with
// perf/sort_grid.py, docs/performance.md "Radix dispatch"); kMerge and kRadix force one (kRadix
// where radix_possible, else the merge sort), for benchmarks and the bit-identity tests.
enum class SortMethod : int { kAuto = 0, kMerge = 1, kRadix = 2 };

// Rows no longer than this never take CUB's radix sort or the counting scatter (their workspace
// stays the merge sort's, which batched short rows rely on; one-byte keys alone are counted from
// kCountingMinLength, needing workspace only for one row longer than a tile).
inline constexpr int64_t kRadixShortestRow = 1024;
// Rows on the radix path are shorter than this (CUB's int and the counting paths' uint32
// counts and positions).
inline constexpr int64_t kRadixRowLimit = int64_t{1} << 31;

// Keys an encode block of the radix path handles (radix_sort.cuh): threads x items; it counts
// its float keys' classes (NaN, zero, negative) for the fix-up.
inline constexpr int kRadixEncodeThreads = 256;
inline constexpr int kRadixEncodeItems = 16;
inline constexpr int64_t kRadixEncodeTile = int64_t{kRadixEncodeThreads} * kRadixEncodeItems;

// Keys of one byte alone (bool, int8, uint8) take the radix path as a counting sort
// (ffi/cuda/counting_sort.cuh): a row's output is its 256 directed order keys, each repeated as
// often as it occurs, bit-identical to the merge sort (equal one-byte integer keys have equal
// bits). Rows of any count (counting_shape): a block a row, or, for one row longer than a tile
// with kCountingBins int32 of workspace (its counts), tiles of kCountingTile keys over the grid.
inline constexpr int kCountingBins = 256;
inline constexpr int kCountingThreads = 256;  // a thread a bin
inline constexpr int64_t kCountingTile = int64_t{1} << 15;
inline constexpr int64_t kCountingMaxRowBlocks = int64_t{1} << 16;  // then rows stride the grid
// Rows longer than a tile go a block a row only when there are this many (one SM's block reads
// ~16 KB in flight: tens of GB/s, so fewer long rows would leave the GPU idle; unmeasured, and
// the merge sort keeps them, as before the counting sort).
inline constexpr int64_t kCountingManyRows = 128;
// Rows from this length take it under kAuto (perf/sort_grid.py, docs/performance.md).
inline constexpr int64_t kCountingMinLength = 256;

constexpr bool counting_possible(int key_bytes, int payload_bytes, int64_t length) {
  return key_bytes == 1 && payload_bytes == 0 && length < kRadixRowLimit;
}

// How the counting sort runs a call, given the workspace the handler has: a block a row, tiles,
// or not at all (the merge sort then).
enum class CountingShape { kRowBlocks, kTiles, kDecline };

constexpr CountingShape counting_shape(int64_t rows, int64_t length, int64_t workspace_elements) {
  if (length <= kCountingTile || rows >= kCountingManyRows) return CountingShape::kRowBlocks;
  if (rows == 1 && workspace_elements >= kCountingBins) return CountingShape::kTiles;
  return CountingShape::kDecline;
}

// One row of one-byte keys with a 4-byte payload (argsort's positions, 4-byte values) takes the
// radix path as a counting scatter (ffi/cuda/counting_scatter.cuh): one stable 8-bit pass, a
// block a tile of kScatterTile keys (a warp kScatterWarpKeys consecutive ones), the tiles'
// counts of each key in the workspace (scatter_workspace_elements).
inline constexpr int64_t kScatterWarpKeys = 512;
inline constexpr int64_t kScatterTile = kScatterWarpKeys * (kCountingThreads / 32);
inline constexpr int64_t kScatterMinLength = int64_t{1} << 12;  // under kAuto (sort_grid.py)

constexpr bool scatter_possible(int key_bytes, int payload_bytes, int64_t rows, int64_t length) {
  return key_bytes == 1 && payload_bytes == 4 && rows == 1 && length > kRadixShortestRow &&
         length < kRadixRowLimit;
}

// int32 elements: the tiles' counts (a bin's tiles consecutive), then the bins' totals.
constexpr int64_t scatter_workspace_elements(int64_t n) {
  return kCountingBins * ((n + kScatterTile - 1) / kScatterTile) + kCountingBins;
}

// Rows of 2-byte keys (more than one row, each longer than kRadixShortestRow, fewer than 2^31
// keys in all: CUB's int offsets), alone or with a 4-byte payload, run CUB's segmented radix
// sort (a block a row a digit pass, as XLA's batched sort): the merge sort of 2-byte keys is
// bound by instructions, not bytes, and lost to it (docs/performance.md, "Radix dispatch").
// kAuto takes it for rows from kSegmentedRadixMinLength keys (perf/sort_grid.py, H100, us a call
// merge vs segmented, int16 / float16 sort and argsort: rows of 8192 272-673 vs 308-727, of
// 16384 331-800 vs 268-680, of 65536 487-1073 vs 262-663).
inline constexpr int64_t kSegmentedRadixMinLength = int64_t{1} << 14;

constexpr bool segmented_radix_possible(int key_bytes, int payload_bytes, int64_t rows,
                                        int64_t length) {
  return key_bytes == 2 && (payload_bytes == 0 || payload_bytes == 4) && rows > 1 &&
         length > kRadixShortestRow && rows < kRadixRowLimit / length;
}

// Whether CUB's radix sort can run a sort: one row longer than kRadixShortestRow (the sort's
// length < 2^31), keys of 2 or 4 bytes, alone or with a 4-byte payload (argsort's positions,
// or 4-byte values), or 8-byte integer keys alone (`integer_keys`: only the direct sort,
// radix_direct); or rows of 2-byte keys (segmented_radix_possible). One-byte keys are counted
// (above). Other 8-byte sorts stay with the merge sort: on order keys the radix path measured no
// faster (docs/performance.md, "Radix dispatch"), and its CUB instances would cost build time.
constexpr bool cub_radix_possible(int key_bytes, int payload_bytes, int64_t rows, int64_t length,
                                  bool integer_keys) {
  if (rows != 1) return segmented_radix_possible(key_bytes, payload_bytes, rows, length);
  if (length <= kRadixShortestRow || length >= kRadixRowLimit) return false;
  if (key_bytes == 8) return integer_keys && payload_bytes == 0;
  return (payload_bytes == 0 || payload_bytes == 4) && (key_bytes == 2 || key_bytes == 4);
}

// Whether the radix path (the counting sort, the counting scatter or CUB's) can run a sort.
constexpr bool radix_possible(int key_bytes, int payload_bytes, int64_t rows, int64_t length,
                              bool integer_keys) {
  return counting_possible(key_bytes, payload_bytes, length) ||
         scatter_possible(key_bytes, payload_bytes, rows, length) ||
         cub_radix_possible(key_bytes, payload_bytes, rows, length, integer_keys);
}

// The shortest row from which kAuto takes the radix path, by key and payload width: where the
// forced radix sort first measured faster than the forced merge sort (perf/sort_grid.py on an
// H100; docs/performance.md, "Radix dispatch").
constexpr int64_t radix_min_length(int key_bytes, int payload_bytes, int64_t rows) {
  if (counting_possible(key_bytes, payload_bytes, 1)) return kCountingMinLength;
  if (key_bytes == 1) return kScatterMinLength;
  if (rows > 1) return kSegmentedRadixMinLength;
  // 8-byte integer keys alone (direct), H100 user-visible us, merge vs direct: 2^21 209.9 vs
  // 264.6, 2^22 480.9 vs 415.7 (XLA's CUB 417.6)
  if (key_bytes == 8) return int64_t{1} << 22;
  // 2-byte keys with a payload from 2^18 (kernel 36.1-46.6 us radix vs 62.1-72.7 merge); keys
  // alone win on the kernel there too (36.1-42.0 vs 53.2-60.7) but lose user-visible time to
  // the radix path's extra launches (67.2-110.6 vs 59.6-90.1 us)
  if (key_bytes == 2) return payload_bytes > 0 ? int64_t{1} << 18 : int64_t{1} << 19;
  // 4-byte keys alone from 2^20: at 2^19 the merge sort won in every run (user-visible us,
  // merge vs radix: int32 97.7 / 98.2 vs 108.9 / 116.4, float32 5-run median ratio to XLA 1.21x
  // vs 0.91x), at 2^20 lost (int32 132.1 / 132.8 vs 123.7 / 98.7); with a payload from 2^19
  return payload_bytes > 0 ? int64_t{1} << 19 : int64_t{1} << 20;
}

constexpr bool sort_takes_radix(SortMethod method, int key_bytes, int payload_bytes,
                                int64_t rows, int64_t length, bool integer_keys) {
  if (method == SortMethod::kMerge ||
      !radix_possible(key_bytes, payload_bytes, rows, length, integer_keys)) {
    return false;
  }
  return method == SortMethod::kRadix || length >= radix_min_length(key_bytes, payload_bytes, rows);
}

// The direct radix sort (radix_sort.cuh radix_sort_direct): integer keys of 2 or 4 bytes, alone
// or with one 4-byte value array ascending, and of 8 bytes alone, are sorted by CUB straight from
// the inputs into the outputs, the keys as their own type (CUB orders signed and unsigned
// integers as ordering.h does; equal integer keys are equal bits, and CUB's sort is stable, so
// the result is the stable sort's): no encode or decode pass. Rows (CUB's segmented sort): 2-byte
// keys alone. CUB's spare buffers then live in the workspace (radix_workspace_elements, direct),
// and the lowering leaves the sort's own spare buffers empty, so the call holds one spare array a
// buffer either way. Keys alone descending: the ascending result reversed in place, a row at a
// time (equal keys being equal bits; CUB's descending kernels would be more instances to build).
// Values descending keep the order-key path (a reversal would reverse their ties).
constexpr bool radix_direct(bool integer_keys, int key_bytes, PayloadKind payload,
                            int value_bytes, bool descending, int64_t rows) {
  if (!integer_keys || (key_bytes != 2 && key_bytes != 4 && key_bytes != 8)) return false;
  if (rows > 1) return key_bytes == 2 && payload == PayloadKind::kNone;
  return payload == PayloadKind::kNone ||
         (key_bytes != 8 && payload == PayloadKind::kValue && value_bytes == 4 && !descending);
}

constexpr bool sort_takes_direct_radix(SortMethod method, bool integer_keys, int key_bytes,
                                       PayloadKind payload, int value_bytes, bool descending,
                                       int64_t rows, int64_t length) {
  return radix_direct(integer_keys, key_bytes, payload, value_bytes, descending, rows) &&
         sort_takes_radix(method, key_bytes, payload_bytes(payload, value_bytes), rows, length,
                          integer_keys);
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
// architecture built is sm_90 or newer, _ffi.py sort_takes_direct_radix);
// tests/test_sort_radix.py checks it against CUB's answer on the GPU (with this 3840, about
// half the smallest tile).
inline constexpr int64_t kRadixMinOnesweepTile = 3840;
inline constexpr int64_t kRadixPortionAtLeast = int64_t{1} << 27;

// int32 elements of the radix path's workspace for rows x length keys: the counting sort's
// counts, or the encode blocks' class counts (3 a block; blocks never span two rows) and the 4
// totals, then CUB's temporary storage (a bound in bytes / 4); the direct sort (radix_direct)
// needs no counts but CUB's spare keys and values. CUB's segmented sort (rows) asks for its
// allocations each rounded up to 256 bytes plus 255: none with DoubleBuffers, the spare keys
// direct.
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
  if (direct) return (cub_bytes + n * (key_bytes + payload_bytes) + 2 * 255 + 3) / 4;
  return radix_count_elements(1, n) + (cub_bytes + 3) / 4;
}

// The radix path's workspace a row of a batched call (rows >= 1 unknown at lowering: a shard of
// a batch-sharded call holds some): for CUB's segmented sort at least radix_workspace_elements /
// rows for rows >= 2, and, direct, one row's whole need (a call whose spare buffers are empty
// takes the direct sort at whatever count of rows it has: cuda_module.cc); none for other keys
// (rows of one-byte keys are counted a block a row, without workspace). A one-row shard of a
// batched call that is not direct finds too little for the one-row radix sort and merge-sorts.
constexpr int64_t radix_workspace_per_row(int key_bytes, int payload_bytes, int64_t length,
                                          bool direct) {
  if (!segmented_radix_possible(key_bytes, payload_bytes, 2, length)) return 0;
  if (direct) return radix_workspace_elements(key_bytes, payload_bytes, 1, length, true);
  return radix_count_elements(1, length) + kSegmentedCubBytes / 4;
}

// ... after the block sort the CUDA sort takes (cuda_sort_shape; the CPU sort needs none). The
// radix path's workspace (radix_workspace_elements) is optional: the lowering adds it only to a
// call of one row that may take that path (jax_mergepath/_ffi.py sort_workspace_per_row), and
// the path declines, for the merge sort, a workspace too small for it.
constexpr int64_t sort_partition_elements(int key_bytes, PayloadKind payload, int value_bytes,
                                          int64_t rows, int64_t length) {
  const SortShape shape =
      cuda_sort_shape(key_bytes, payload_bytes(payload, value_bytes), rows, length);
  return sort_partition_elements_from(int64_t{shape.threads} * shape.items, key_bytes, payload,
                                      value_bytes, rows, length);
}

// The CPU sort's integer path (ffi/cpu/radix_cpu.h: an LSD radix sort a row, integer keys only:
// their order keys are a bijection): rows of at least cpu_radix_min_length keys (8-byte keys,
// eight digit passes, lose to the merge sort on rows of 256: 21.1 vs 16.2 ms for 4096 x 256
// int64, and win at 2^16: 2.2 vs 4.9 ms), and copy_tile's int lengths. Measured with
// perf/sort_grid.py --cpu-cells on the 2-core dev machine (docs/performance.md, "CPU").
constexpr int64_t cpu_radix_min_length(int key_bytes) { return key_bytes == 8 ? 2048 : 256; }

constexpr bool cpu_sort_takes_radix(int key_bytes, int64_t length) {
  return length >= cpu_radix_min_length(key_bytes) && length < (int64_t{1} << 31);
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

}  // namespace jax_mergepath
