// tuning/merge.h (level: shared core, tuning): the knobs of the two-way merge and of the queries,
// and the tile policies built from them: the merge tile (threads x items, register cap) by key
// and payload bytes, the rows and packed kernels' shapes, the partition pass, the tiles that
// search their own splits, the query kernels. Read by the CUDA kernels and launchers, the CPU
// backend (its tiles are the GPU's) and the workspace sizing (tuning/workspace.h), so partition
// and merge agree on tile boundaries by construction. Comments state what a value must satisfy
// and name the sweep that chose it; the measurements are in docs/performance.md. A knob a sweep
// varies takes a `-D JMP_<NAME>=value` override on the sweep's own nvcc line (perf/sweeps/); the
// package's modules are built with the defaults (the workspace bound _cpu exports must match the
// kernels of _cuda).
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

// Keys one is_sorted thread checks (kernels/query_kernels.cuh, 16-byte loads): a multiple of 16, so
// the chunks of 1-byte keys start 16-byte aligned too. Measured with whole row sorts
// (docs/performance.md, "Row sorts").
#ifndef JMP_IS_SORTED_CHUNK
#define JMP_IS_SORTED_CHUNK 16
#endif
inline constexpr int kIsSortedChunk = JMP_IS_SORTED_CHUNK;
static_assert(kIsSortedChunk % 16 == 0, "kIsSortedChunk: a multiple of 16 keys");

// Threads a block of the one-thread-a-query kernels (kernels/query_kernels.cuh: co_rank, is_sorted
// and searchsorted's binary searches): whole warps, at most 1024.
#ifndef JMP_QUERY_THREADS
#define JMP_QUERY_THREADS 256
#endif
inline constexpr int kQueryThreads = JMP_QUERY_THREADS;
static_assert(kQueryThreads % 32 == 0 && kQueryThreads <= 1024,
              "kQueryThreads: whole warps, at most 1024 threads");

// ------------------------------------------------------------------ merge tiles
// At most this many short rows are packed into one tile (their geometry lives in shared memory).
inline constexpr int kMaxRowsPerTile = 256;

// A CUDA merge block by key and payload bytes: `threads` threads, each merging `items`
// consecutive outputs (odd, so a warp's strided shared-memory accesses avoid bank conflicts),
// registers capped so `min_blocks` blocks fit an SM (the tiled kernel only; 1 = no cap). Shapes
// over 8 bytes are capped at 4 blocks: uncapped, the unsorted-input checks spill them to one
// block an SM fewer. Measured with perf/sweeps/tile_sweep.cu (docs/performance.md, "Merge tile
// shapes"); the same shapes on every GPU ("One merge shape for every GPU").
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

// The rows kernel's items a thread for full rows of `row_length`:
//   - 4-byte keys alone (the 256 x 19 shape) in rows of a length kRowsItemsTable names: its
//     items (measured with perf/sweeps/tile_sweep.cu rows; in such rows a warp's threads start
//     their merges at the same shared-memory banks unless a row has several; 2-byte keys, in the
//     same shape, measured better by the slot rule);
//   - else the tile policy's `items`, or items - cut for a cut in kRowsSlotCuts (odd too, at
//     least kMinRowsItems, the rows still fitting) whose thread groups step through the fewest
//     slots per row, when that is at least 5% fewer than with `items` (the merge is branch-free:
//     a row's last thread steps through all its items, valid or not, and the kernel is bound by
//     instruction issue).
// docs/performance.md, "Rows-kernel items a thread".
struct RowsItems {
  int64_t row_length;
  int items;
};
inline constexpr int kRowsTableKeyBytes = 4;
inline constexpr int kRowsTableThreads = 256;
inline constexpr int kRowsTableItems = 19;
inline constexpr RowsItems kRowsItemsTable[] = {{16, 17}, {24, 13}, {32, 17}, {48, 17},
                                                {64, 17}, {96, 15}, {128, 19}};
inline constexpr int kRowsSlotCuts[] = {2, 4, 6};
inline constexpr int kMinRowsItems = 3;

// (The 256 x 19 shape is merge_shape's for keys alone of up to 4 bytes only.)
constexpr bool rows_table_applies(int key_bytes, int threads, int items) {
  return key_bytes == kRowsTableKeyBytes && threads == kRowsTableThreads &&
         items == kRowsTableItems;
}

// Whether merge_rows_items can return items - cut for this policy: the rows kernel instances
// merge_launch.cuh launch_rows_cut builds (even cuts: items stay odd).
constexpr bool merge_rows_cut_used(int key_bytes, int threads, int items, int cut) {
  for (const int slot_cut : kRowsSlotCuts) {
    if (cut == slot_cut) return items - cut >= kMinRowsItems;
  }
  if (rows_table_applies(key_bytes, threads, items)) {
    for (const RowsItems entry : kRowsItemsTable) {
      if (entry.items == items - cut) return true;
    }
  }
  return false;
}

constexpr bool rows_table_items_odd() {
  for (const RowsItems entry : kRowsItemsTable) {
    if (entry.items % 2 == 0 || entry.items < kMinRowsItems || entry.items > kRowsTableItems) {
      return false;
    }
  }
  return true;
}
static_assert(rows_table_items_odd(), "kRowsItemsTable: odd items, at most the table's shape's");

constexpr int merge_rows_items(int key_bytes, int threads, int items, int64_t row_length) {
  if (row_length <= 0) return items;
  if (rows_table_applies(key_bytes, threads, items)) {
    for (const RowsItems entry : kRowsItemsTable) {
      if (entry.row_length == row_length &&
          merge_rows_shape(threads, entry.items, row_length).rows_per_block > 0) {
        return entry.items;
      }
    }
  }
  auto slots_of = [row_length](int per_thread) {  // slots a row's thread group steps through
    return ceil_div(row_length, per_thread) * per_thread;
  };
  const int64_t wide_slots = slots_of(items);
  int best = items;
  int64_t best_slots = wide_slots;
  for (const int cut : kRowsSlotCuts) {
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

// Strided rows in the rows kernel (tile_io.cuh strided_row_stride: an odd number of 16-byte
// chunks a row, so a warp's rows start on different banks): taken where a row has at most this
// many threads (four rows or more a warp; longer rows gain nothing from it), the block's rows
// fit, and the sources are 16-byte aligned. The kernel's stage holds a tile plus up to
// 1 / kRowsStageSlackDivisor more for them (rows of 8 + 8 4-byte keys need 12 + 12 slots a row
// against 16), within the shared memory that keeps the policy's kMinBlocks blocks an SM
// (kSharedBytesPerSm, less kSharedReservedPerBlock a block) and the 48 KB of static shared memory
// a kernel may take.
// docs/performance.md, "Strided rows in the rows kernel".
inline constexpr int kRowsStridedMaxThreadsPerRow = 8;
inline constexpr int kRowsStageSlackDivisor = 2;
inline constexpr int kSharedBytesPerSm = 228 * 1024;  // sm_90 (sm_80: 164 KB)
inline constexpr int kSharedReservedPerBlock = 1024;
// A kernel's static shared memory is at most this; dynamic shared memory past it needs opting in
// (cudaFuncAttributeMaxDynamicSharedMemorySize).
inline constexpr int kSharedBytesWithoutOptIn = 48 * 1024;

// The shared memory a block of a policy with kMinBlocks blocks an SM may take.
constexpr int shared_budget_per_block(int min_blocks) {
  const int fair = kSharedBytesPerSm / (min_blocks > 0 ? min_blocks : 1) - kSharedReservedPerBlock;
  return fair < kSharedBytesWithoutOptIn ? fair : kSharedBytesWithoutOptIn;
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
// The partition pass (ffi/cuda/kernels/partition.cuh) searches up to kWarpSearchMaxBoundaries tile
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

}  // namespace jax_mergepath
