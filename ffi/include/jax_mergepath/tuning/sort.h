// tuning/sort.h (level: shared core, tuning): the knobs of the merge sort: the block sort's tile
// (narrow and wide), the quad and eight-way passes (when a sort takes them, their tiles, their
// split kernels' blocks) and the plan of passes after the block sort. Read by the CUDA sort
// (launch/sort_launch.cuh and the kernels it launches), the CPU sort (its narrow tile) and the
// workspace sizing (tuning/workspace.h). Measurements: docs/performance.md; overrides: as
// tuning/merge.h says.
#pragma once

#include <cstdint>

#include "jax_mergepath/tuning/merge.h"

namespace jax_mergepath {

// ------------------------------------------------------------------ launch knobs
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

// The runs an eight-way pass merges at once (its groups: batch_geometry.h multiway_layout).
inline constexpr int kEightWayRuns = 8;

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
// leaves fewer passes, and for one row it holds whole where the narrow tile does not
// (sort_takes_wide_tile; 2-byte keys with 4-byte payloads take it only there: they take no
// quads), registers capped (min_blocks; uncapped, these tiles left 2 blocks of 256 an SM or 1 of
// 512). 8-byte keys need a tile of 8192 keys or more to save a quad pass at 2^27 keys
// (block_sort.cuh's shared memory is dynamic: these pass 48 KB). Wider than sort_shape's
// whenever it differs. Measured with perf/sweeps/sort_sweep.cu ("long",
// "pairs") and whole sorts (docs/performance.md, "Wide block-sort shapes").
constexpr SortShape wide_sort_shape(int key_bytes, int payload_bytes) {
  if (key_bytes == 4 && payload_bytes == 0) return SortShape{256, 39, 3};
  if (key_bytes == 4 && payload_bytes == 4) return SortShape{256, 23, 3};
  if (key_bytes == 2 && payload_bytes == 4) return SortShape{256, 23, 3};
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

// Quad passes (four-way merges, merge_path.h quad_co_rank; ffi/cuda/kernels/quad_merge.cuh): one
// pass does two merge levels with one read and one write of the keys. A quad block copies its four
// ranges into shared memory (cp.async, one element a copy; 4-byte keys alone in 16-byte chunks),
// merges them pairwise there, then the two results, with (threads - 1) x items outputs (the first
// level pads X's outputs to whole threads). Its partition (the split of a quad tile boundary,
// about one wave of dependent loads whatever the size) costs more than two two-way ones, so a
// sort takes quads only when a pass moves at least quad_min_bytes. Only measured shapes take
// them (sort_may_use_quads: keys of 4 or 8 bytes, alone or with a 4-byte payload; sort_by_key's
// 4-byte values run argsort's kernel on uint32 bits); the others keep two-way passes. Measured
// with perf/sweeps/quad_sweep.cu (docs/performance.md, "Quad threshold" and the quad tiles).
// A multiway pass's block (quad_shape, eight_way_shape): `threads` threads, `items` outputs a
// thread, registers capped for `min_blocks` blocks an SM, and its tile of outputs (fewer than
// threads x items: the first merge level pads its groups' outputs to whole threads).
struct MultiwayShape {
  int threads, items, min_blocks;
  int64_t tile;
};

constexpr int64_t quad_min_bytes(int element_bytes) {
  return element_bytes <= 4 ? int64_t{1} << 28 : int64_t{1} << 27;
}

constexpr MultiwayShape quad_shape(int key_bytes, int payload_bytes) {
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

// Eight-way passes (ffi/cuda/kernels/eight_way_merge.cuh): one pass does three merge levels with
// one read and one write of the keys, a block merging its eight ranges pairwise in shared memory,
// then the four results, then the two; (threads - 3) x items outputs a tile (the first level
// pads three groups' outputs to whole threads). Its split searches the eight runs from their
// lengths, eight lanes a boundary (one launch, no samples). Sorts that take quads take them for
// elements over 4 bytes (sort_may_use_eights): one replaces a quad pass and a two-way pass, faster;
// 4-byte keys alone keep quads. Shapes by the same sweep: 8-byte keys alone 256 x 21 at 2 blocks,
// 4 + 4 bytes 256 x 15 at 3, 8 + 4 bytes 256 x 11 at 3. Measured with perf/sweeps/quad_sweep.cu
// "eight" (docs/performance.md, "Eight-way passes" and "Where the measurements went").
constexpr MultiwayShape eight_way_shape(int key_bytes, int payload_bytes) {
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

// The ragged merge of a sharded sort's received runs (ffi/cuda/kernels/ragged_merge.cuh: one
// eight-way level of up to eight runs of any lengths): the eight-way pass's measured shapes where
// it has them; 4-byte keys alone 256 x 25 at 3 blocks (the sort's eight-way sweep measured it
// best for them, docs/performance.md "Open"); else 15 items for elements of up to 4 bytes, 11
// with 4-byte values and 7 with 8-byte values (the block's static shared memory, under 48 KiB:
// 8 + 8 bytes at 7 items take 31.4 KiB; not swept).
constexpr MultiwayShape ragged_merge_shape(int key_bytes, int payload_bytes) {
  const int element_bytes = key_bytes + payload_bytes;
  const int threads = 256;
  if (key_bytes >= 4 && (payload_bytes == 0 || payload_bytes == 4) && element_bytes > 4) {
    return eight_way_shape(key_bytes, payload_bytes);
  }
  if (key_bytes == 4 && payload_bytes == 0) return {threads, 25, 3, int64_t{threads - 3} * 25};
  const int items = element_bytes <= 4 ? 15 : (payload_bytes <= 4 ? 11 : 7);
  return {threads, items, 2, int64_t{threads - 3} * items};
}

template <int kKeyBytes, int kPayloadBytes>
struct RaggedMergePolicy : TilePolicy<ragged_merge_shape(kKeyBytes, kPayloadBytes).threads,
                                      ragged_merge_shape(kKeyBytes, kPayloadBytes).items,
                                      ragged_merge_shape(kKeyBytes, kPayloadBytes).min_blocks,
                                      ragged_merge_shape(kKeyBytes, kPayloadBytes).tile> {};


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

// A wide block's shared memory (about its tile's key and payload bytes) that every GPU from
// sm_80 on lets a block opt into (99 KB on sm_86, sm_89, sm_120): a short row's sort must not
// need more. 8-byte keys with positions (512 x 17, ~105 KB) keep sort_tile for short rows.
inline constexpr int64_t kWideShortRowMaxBytes = 96 * 1024;

// Whether a sort of rows x length keys takes the wide block sort (wide_sort_shape; the CUDA sort:
// the CPU sort has no quad passes and keeps sort_tile): where it has a wider tile for these keys,
// the sort takes quads (a grid of thousands of tiles, where the sweep measured), rows are longer
// than the wide tile (rows it would hold whole fill it by halves), and the wide tile leaves fewer
// passes: an odd count of merge levels after sort_tile (a two-way pass, then quads) that it
// makes even, or any count it cuts by two. Passes counted as quads alone, as measured: with
// eight-way passes the counts may tie (4 + 4 bytes at 2^26 + 5 keys: five passes after either
// tile) or differ the other way (8 + 4 bytes at ~1.5e8 keys: six narrow, five wide); not
// re-measured (docs/performance.md, "Open"). Also one row longer than sort_tile that the wide
// tile holds whole: one launch (the block sort checks its own order) instead of four (the row
// flags' memset and check, the block sort, the pass's merge), where launches are the cost
// (docs/performance.md, "One short row in the wide block sort"); batches of such rows keep
// sort_tile, and so do wide blocks past kWideShortRowMaxBytes.
constexpr bool sort_takes_wide_tile(int key_bytes, int payload_bytes, int64_t rows,
                                    int64_t length) {
  const int64_t tile = sort_tile(key_bytes, payload_bytes);
  const SortShape wide_shape = wide_sort_shape(key_bytes, payload_bytes);
  const int64_t wide = int64_t{wide_shape.threads} * wide_shape.items;
  if (wide <= tile) return false;
  if (rows == 1 && length > tile && length <= wide) {
    return wide * (key_bytes + payload_bytes) <= kWideShortRowMaxBytes;
  }
  const bool quads = sort_uses_quads(key_bytes, payload_bytes, rows, length);
  return quads && length > wide &&
         sort_pass_count(true, false, wide, length) < sort_pass_count(true, false, tile, length);
}

// The block sort the CUDA sort takes.
constexpr SortShape cuda_sort_shape(int key_bytes, int payload_bytes, int64_t rows,
                                    int64_t length) {
  return sort_takes_wide_tile(key_bytes, payload_bytes, rows, length)
             ? wide_sort_shape(key_bytes, payload_bytes)
             : sort_shape(key_bytes, payload_bytes);
}

}  // namespace jax_mergepath
