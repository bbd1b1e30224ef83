// tuning.h: tile policies, as data. The CUDA partition and merge kernels, the CPU backend and the
// Python workspace sizing all read these, so they agree on tile boundaries by construction.
#pragma once

#include <cstdint>

namespace jax_mergepath {

inline constexpr int kMergeThreads = 256;
inline constexpr int kPartitionThreads = 256;
// At most this many short rows are packed into one tile (their geometry lives in shared memory).
inline constexpr int kMaxRowsPerTile = 256;

// Items per thread for key + payload bytes. Odd, so a warp's strided shared-memory reads
// (stride = items words) avoid bank conflicts.
constexpr int merge_items_per_thread(int key_bytes, int payload_bytes) {
  const int bytes = key_bytes + payload_bytes;
  return bytes <= 4 ? 11 : (bytes <= 8 ? 9 : (bytes <= 12 ? 7 : 5));
}

constexpr int64_t merge_tile(int key_bytes, int payload_bytes) {
  return int64_t{kMergeThreads} * merge_items_per_thread(key_bytes, payload_bytes);
}

template <int kKeyBytes, int kPayloadBytes>
struct MergePolicy {
  static constexpr int kThreads = kMergeThreads;
  static constexpr int kItems = merge_items_per_thread(kKeyBytes, kPayloadBytes);
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

// int32 elements of the CUDA merge's partition workspace (>= 1, so the buffer is never empty).
constexpr int64_t merge_workspace_elements(int key_bytes, int payload_bytes, int64_t rows,
                                           int64_t row_length) {
  const int64_t tile = merge_tile(key_bytes, payload_bytes);
  if (merge_rows_are_packed(tile, row_length) || rows == 0) return 1;
  return rows * (merge_tiles_per_row(tile, row_length) + 1);
}

}  // namespace jax_mergepath
