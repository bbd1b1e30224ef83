// merge_launch.cuh (level: launch): the CUDA batched merge of one key traits: one call of
// launch_merge enqueues a whole batch (rows, merge_runs rows, a sort pass's run pairs, a
// searchsorted's ranks) on `stream`: for rows no longer than a tile the rows kernel (full rows,
// and searchsorted's rows up to half a tile) or the packed kernel (ragged rows), else the
// partition pass and the tiled kernel (large sort passes: its early tiles search their own splits
// beside the pass, merge_early_tiles; small batches without order checks launch the tiled kernel
// alone, every block searching its own, merge_splits_in_tiles; how many tiles may, by the
// device's SMs: call.sms). No allocation, no host sync: the partition workspace is the caller's
// merge_workspace_elements() int32. merge_for_traits (per_traits.h) is instantiated in
// ffi/cuda/instances/merge_*.cu and called by the entry merge_cuda (entry/merge_cuda.cu), the
// sort's two-way passes (sort_launch.cuh) and searchsorted's sorted queries
// (query_launch.cuh); the sweeps (perf/sweeps) call launch_merge.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "../block/grid_launch.cuh"
#include "../kernels/merge_kernels.cuh"
#include "../kernels/partition.cuh"
#include "jax_mergepath/batch_geometry.h"
#include "jax_mergepath/call_args.h"
#include "jax_mergepath/tuning/merge.h"
#include "per_traits.h"

namespace jax_mergepath {

// Enqueues the rows kernel on full rows with `RowsPolicy`'s items a thread.
template <typename Traits, PayloadKind kPayload, typename Value, typename RowsPolicy>
cudaError_t launch_rows(const MergeCall& call, typename Traits::Bits flip, cudaStream_t stream) {
  const MergeLayout& layout = call.layout;
  const RowsShape rows =
      merge_rows_shape(RowsPolicy::kThreads, RowsPolicy::kItems, layout.row_length());
  const int64_t blocks = ceil_div(layout.rows, rows.rows_per_block);
  if (blocks >= (int64_t{1} << 31)) return cudaErrorInvalidConfiguration;
  auto* kernel = merge_rows_kernel<Traits, kPayload, Value, RowsPolicy>;
  return launch_kernel(kernel, static_cast<unsigned>(blocks), RowsPolicy::kThreads, stream, call,
                       flip, rows);
}

// The rows kernel with Policy's items less `cut` (0, or a cut merge_rows_items may take for
// Policy: merge_rows_cut_used, tried from kCut up in even steps).
template <typename Traits, PayloadKind kPayload, typename Value, typename Policy, int kCut = 2>
cudaError_t launch_rows_cut(const MergeCall& call, typename Traits::Bits flip, int cut,
                            cudaStream_t stream) {
  if constexpr (Policy::kItems - kCut >= kMinRowsItems) {
    if constexpr (merge_rows_cut_used(int(sizeof(typename Traits::Bits)), Policy::kThreads,
                                      Policy::kItems, kCut)) {
      if (cut == kCut) {
        return launch_rows<Traits, kPayload, Value, RowsPolicy<Policy, kCut>>(call, flip, stream);
      }
    }
    return launch_rows_cut<Traits, kPayload, Value, Policy, kCut + 2>(call, flip, cut, stream);
  } else {
    return launch_rows<Traits, kPayload, Value, Policy>(call, flip, stream);
  }
}

// Enqueues one merge batch with the tile policy `Policy` (kThreads, kItems, kTile, kMinBlocks).
template <typename Traits, PayloadKind kPayload, typename Value,
          typename Policy = MergePolicyFor<Traits, kPayload, Value>>
cudaError_t launch_merge(const MergeCall& call, int32_t* workspace, cudaStream_t stream) {
  constexpr int kTile = static_cast<int>(Policy::kTile);
  const MergeLayout& layout = call.layout;
  if (layout.merges() == 0 || layout.merge_span() == 0) return cudaSuccess;
  const auto flip = order_mask<Traits>(call.key_type, call.descending);
  if (merge_is_packed(kTile, layout, kPayload)) {
    if constexpr (is_ranks(kPayload)) {
      // Full rows of at most half a tile (merge_is_packed): the rows kernel always holds them.
      return launch_rows<Traits, kPayload, Value, Policy>(call, flip, stream);
    } else {
      const bool full = layout.mode == RowMode::kRuns ||
                        (layout.a_valid == nullptr && layout.b_valid == nullptr);
      if (full) {
        const int64_t d = layout.row_length();
        constexpr int kKeyBytes = int(sizeof(typename Traits::Bits));
        const int items = merge_rows_items(kKeyBytes, Policy::kThreads, Policy::kItems, d);
        if (merge_rows_shape(Policy::kThreads, items, d).rows_per_block > 0) {
          return launch_rows_cut<Traits, kPayload, Value, Policy>(call, flip,
                                                                  Policy::kItems - items, stream);
        }
      }
      const int64_t per_tile = merge_rows_per_tile(kTile, layout.row_length());
      const int64_t blocks = (layout.rows + per_tile - 1) / per_tile;
      if (blocks >= (int64_t{1} << 31)) return cudaErrorInvalidConfiguration;
      auto* kernel = merge_packed_kernel<Traits, kPayload, Value, Policy>;
      return launch_kernel(kernel, static_cast<unsigned>(blocks), Policy::kThreads, stream, call,
                           flip);
    }
  }
  const TileMap map = tile_map(layout, kTile);
  if (map.tiles() >= (int64_t{1} << 31)) return cudaErrorInvalidConfiguration;
  const bool self_split =
      merge_splits_in_tiles(layout, kPayload, map, Policy::kMinBlocks, call.sms);
  const int64_t early_tiles = merge_early_tiles(layout, map, Policy::kMinBlocks, call.sms);
  if (!self_split) {
    if (cudaError_t err = launch_partition<Traits>(call, map, workspace, stream, early_tiles > 0);
        err != cudaSuccess) {
      return err;
    }
  }
  const int32_t* chain_flags =
      merge_checks_order(layout, kPayload) ? workspace + map.boundaries() : nullptr;
  auto* kernel = merge_tiled_kernel<Traits, kPayload, Value, Policy>;
  return launch_kernel(kernel, static_cast<unsigned>(map.tiles()), Policy::kThreads, stream, call,
                       self_split ? nullptr : workspace, flip, map, chain_flags,
                       static_cast<uint32_t>(early_tiles));
}

// The runtime payload of a merge call -> launch_merge's template (values move as raw bits):
// per_traits.h's merge launcher, instantiated in ffi/cuda/instances/merge_*.cu.
template <typename Traits>
cudaError_t merge_for_traits(const MergeCall& call, int32_t* workspace, cudaStream_t stream) {
  return visit_payload(call.payload, call.value_bytes, [&](auto kind, auto element) {
    return launch_merge<Traits, decltype(kind)::value, decltype(element)>(call, workspace,
                                                                          stream);
  });
}

}  // namespace jax_mergepath
