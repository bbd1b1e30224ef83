// tuning/radix.h (level: shared core, tuning): the radix floor's knobs: which sorts the radix
// path can run (the counting sort, the counting scatter, CUB's onesweep and segmented sorts, the
// direct sort of integer keys), from which row length it beats the merge sort (radix_min_length),
// and the shapes of its kernels. Which method a call takes is decided once, in
// jax_mergepath/sort_method.h, from these. Measurements: docs/performance.md, "Radix dispatch".
#pragma once

#include <cstdint>

#include "jax_mergepath/key_types.h"

namespace jax_mergepath {

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
// Threads of the one block that makes the encode blocks' class counts prefixes (radix_sort.cuh
// radix_scan_kernel): whole warps, at most 1024.
inline constexpr int kRadixScanThreads = 1024;
// Rows of at most this many encode blocks skip radix_scan_kernel: each finish block sums its
// row's counts itself (a launch fewer for the launch-bound sorts; a block reads 3 x this many
// int32 at most).
inline constexpr int64_t kRadixFinishSelfTiles = 1024;
// The float keys' NaN fix-up (kernels/radix_nan_fix.cuh) launches at most this many blocks, each
// looping over tiles: where no NaN moves, a block reads two keys and exits, and a block a tile
// cost 40 us a kernel at 2^27 keys (H200, 32768 blocks).
inline constexpr int64_t kRadixNanFixBlocks = 1024;

// Keys of one byte alone (bool, int8, uint8) take the radix path as a counting sort
// (ffi/cuda/kernels/counting_sort.cuh): a row's output is its 256 directed order keys, each
// repeated as often as it occurs, bit-identical to the merge sort (equal one-byte integer keys have
// equal bits). Rows of any count (counting_shape): a block a row, or, for one row longer than a
// tile with kCountingBins int32 of workspace (its counts), tiles of kCountingTile keys over the
// grid.
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
// radix path as a counting scatter (ffi/cuda/kernels/counting_scatter.cuh): one stable 8-bit pass,
// a block a tile of kScatterTile keys (a warp kScatterWarpKeys consecutive ones), the tiles'
// counts of each key in the workspace (scatter_workspace_elements).
inline constexpr int64_t kScatterWarpKeys = 512;
inline constexpr int64_t kScatterTile = kScatterWarpKeys * (kCountingThreads / 32);
inline constexpr int64_t kScatterMinLength = int64_t{1} << 12;  // under kAuto (sort_grid.py)
// Consecutive tiles' counts a thread of the scatter's scan (a block a bin: counting_scatter.cuh
// scatter_scan_kernel) adds a round.
inline constexpr int kScatterScanItems = 8;

constexpr bool scatter_possible(int key_bytes, int payload_bytes, int64_t rows, int64_t length) {
  return key_bytes == 1 && payload_bytes == 4 && rows == 1 && length > kRadixShortestRow &&
         length < kRadixRowLimit;
}

// Rows of 2-byte keys (more than one row, each longer than kRadixShortestRow, fewer than 2^31
// keys in all: CUB's int offsets), alone or with a 4-byte payload, run CUB's segmented radix
// sort (a block a row a digit pass, as XLA's batched sort): the merge sort of 2-byte keys is
// bound by instructions, not bytes, and lost to it (docs/performance.md, "Radix dispatch").
// kAuto takes it for rows from kSegmentedRadixMinLength keys (perf/sort_grid.py, rows of 2^13
// to 2^16: docs/performance.md, "Where the measurements went").
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
// forced radix sort first measured faster than the forced merge sort, in user-visible time
// (perf/sort_grid.py; docs/performance.md, "Radix dispatch" and "Where the measurements went"):
// one-byte keys from kCountingMinLength (alone) or kScatterMinLength; rows of 2-byte keys from
// kSegmentedRadixMinLength; one row of 8-byte integer keys (direct) from 2^22, of 2-byte keys
// from 2^18 with a payload (2^19 alone: their kernel wins from 2^18 too, the path's extra
// launches lost it), of 4-byte keys from 2^18 (H200, separate calls and inside a jitted scan: at
// 2^18 the radix path ran level with XLA's own CUB sort inside the scan on three machines of
// four; the merge sort was 0.87-0.91x of XLA on those three, 0.96-1.12x on the fourth).
constexpr int64_t radix_min_length(int key_bytes, int payload_bytes, int64_t rows) {
  if (counting_possible(key_bytes, payload_bytes, 1)) return kCountingMinLength;
  if (key_bytes == 1) return kScatterMinLength;
  if (rows > 1) return kSegmentedRadixMinLength;
  if (key_bytes == 8) return int64_t{1} << 22;
  if (key_bytes == 2) return payload_bytes > 0 ? int64_t{1} << 18 : int64_t{1} << 19;
  return int64_t{1} << 18;
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
// Values descending keep the order-key path (a reversal would reverse their ties). Float keys
// alone ascending (2 and 4 bytes), one row, go direct too, as CUB's floats (radix_sort.cuh
// radix_sort_float_direct): CUB ties -0.0 with +0.0 as ordering.h does and differs only in its
// NaNs' places, which kernels/radix_nan_fix.cuh moves where there are any to move: no encode
// or decode pass (descending floats keep the order keys: a reversal would reverse the zeros).
constexpr bool radix_direct(bool integer_keys, int key_bytes, PayloadKind payload,
                            int value_bytes, bool descending, int64_t rows) {
  if (!integer_keys) {  // floats alone ascending, one row: CUB's own order but NaNs
    return (key_bytes == 2 || key_bytes == 4) && payload == PayloadKind::kNone && !descending &&
           rows == 1;
  }
  if (key_bytes != 2 && key_bytes != 4 && key_bytes != 8) return false;
  if (rows > 1) return key_bytes == 2 && payload == PayloadKind::kNone;
  return payload == PayloadKind::kNone ||
         (key_bytes != 8 && payload == PayloadKind::kValue && value_bytes == 4 && !descending);
}

}  // namespace jax_mergepath
