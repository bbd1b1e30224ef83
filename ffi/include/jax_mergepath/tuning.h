// tuning.h: tile policies, as data. The CUDA partition and merge kernels, the CPU backend and the
// Python workspace sizing all read these, so they agree on tile boundaries by construction.
#pragma once

#include <cstdint>

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
// (NOTES.md); the rest keep the first design's shapes, uncapped (capping them spilled registers).
struct MergeShape {
  int threads, items, min_blocks;
};

constexpr MergeShape merge_shape(int key_bytes, int payload_bytes) {
  if (payload_bytes == 0 && key_bytes <= 4) return {256, 19, 8};
  if (payload_bytes == 0 && key_bytes == 8) return {256, 11, 6};
  if (key_bytes == 4 && payload_bytes == 4) return {256, 15, 6};
  const int bytes = key_bytes + payload_bytes;
  return {256, bytes <= 4 ? 11 : (bytes <= 8 ? 9 : (bytes <= 12 ? 7 : 5)), 1};
}

constexpr int64_t merge_tile(int key_bytes, int payload_bytes) {
  const MergeShape shape = merge_shape(key_bytes, payload_bytes);
  return int64_t{shape.threads} * shape.items;
}

template <int kKeyBytes, int kPayloadBytes>
struct MergePolicy {
  static constexpr MergeShape kShape = merge_shape(kKeyBytes, kPayloadBytes);
  static constexpr int kThreads = kShape.threads;
  static constexpr int kItems = kShape.items;
  static constexpr int kMinBlocks = kShape.min_blocks;
  static constexpr int64_t kTile = merge_tile(kKeyBytes, kPayloadBytes);
};

// Rows shorter than a tile are packed whole into tiles (no partition pass); longer rows are cut
// into tiles whose A/B splits the partition pass writes to the workspace, (tiles + 1) per row.
constexpr bool merge_rows_are_packed(int64_t tile, int64_t row_length) {
  return row_length <= tile;
}

constexpr int64_t merge_rows_per_tile(int64_t tile, int64_t row_length) {
  const int64_t fit = row_length > 0 ? tile / row_length : 1;
  return fit < 1 ? 1 : (fit > kMaxRowsPerTile ? kMaxRowsPerTile : fit);
}

constexpr int64_t merge_tiles_per_row(int64_t tile, int64_t row_length) {
  return (row_length + tile - 1) / tile;
}

// int32 elements of the CUDA merge's partition workspace (>= 1, so the buffer is never empty):
// the splits, (tiles + 1) per row (ffi/cuda/partition.cuh).
constexpr int64_t merge_workspace_elements(int key_bytes, int payload_bytes, int64_t rows,
                                           int64_t row_length) {
  const int64_t tile = merge_tile(key_bytes, payload_bytes);
  if (merge_rows_are_packed(tile, row_length) || rows == 0) return 1;
  return rows * (merge_tiles_per_row(tile, row_length) + 1);
}

}  // namespace jax_mergepath
