// quad_merge.cuh (level: kernels): the quad pass of the CUDA mergesort: every four consecutive
// sorted runs A, B, C, D of width w of every row merged into one run of 4 w, reading and writing
// the keys (and the carried payload) once for two merge levels. Three launches, all on the shared
// core:
//   1. the two-way partition (partition.cuh) of the run pairs (A, B) and (C, D) of width w, on
//      the quad tile: the splits of X = merge(A, B) and Y = merge(C, D) every quad tile;
//   2. quad_partition_kernel: for every quad tile boundary d, merge_path.h's quad_co_rank from
//      those samples: (x, a, c), the outputs of X among the first d and the splits of X and Y
//      there, three int32 a boundary after the samples in the workspace;
//   3. quad_merge_kernel: one block per quad tile copies its four exact ranges into shared
//      memory (one round trip: tile_io.cuh load_ranges_chunked for 4-byte keys alone, else
//      load_ranges_packed), merges A with B and C with D
//      (first level, in place: X's outputs padded to whole threads, Y's after them), then X with Y
//      (merge_full both times) into registers, and stores through shared memory like the tiled
//      merge (block_merge.cuh).
// tuning/sort.h says which sorts take quad passes (sort_uses_quads) and with which shapes.
// Sort passes only: runs sorted by the block sort (no unsorted-input checks), every key valid,
// payload none or a value (argsort's positions travel as int32 values). Rows flagged sorted
// (layout.row_done) have empty quads.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "../block/block_merge.cuh"
#include "../block/grid_launch.cuh"
#include "../block/tile_io.cuh"
#include "jax_mergepath/batch_geometry.h"
#include "jax_mergepath/call_args.h"
#include "jax_mergepath/merge_path.h"
#include "jax_mergepath/tuning/merge.h"
#include "jax_mergepath/tuning/sort.h"
#include "merge_kernels.cuh"
#include "partition.cuh"

namespace jax_mergepath {

// The four runs of quad `g` (the geometry of the run pair (X, Y) of width 2 w): their lengths.
struct QuadRuns {
  int64_t la, lb, lc, ld;
};

__device__ __forceinline__ QuadRuns quad_runs(const RowGeometry& g, int64_t width) {
  const int64_t la = clamp_length(g.m, width), lc = clamp_length(g.n, width);
  return {la, g.m - la, lc, g.n - lc};
}

// One thread per quad tile boundary: merge_path.h's quad_co_rank from the pairs' sampled
// splits, the same code the CPU runs. (A group of 8 lanes a boundary, each probing one i of the
// bisection inside x's tile, took 1.5x longer on an H100; docs/performance.md.) The readers return
// raw bits and the order key is taken apart, so four_way_split issues a step's loads together.
// quads: the run pairs of width 2 w (one a quad); map: its quad tile map; pair_tiles /
// pair_splits: the two-way partition of the run pairs of width w on the same tile.
template <typename Traits>
__global__ void __launch_bounds__(kQuadPartitionThreads)
    quad_partition_kernel(MergeLayout quads, const typename Traits::Bits* x,
                          typename Traits::Bits flip, TileMap map, int64_t pair_tiles,
                          const int32_t* pair_splits, int32_t* quad_splits) {
  grid_prologue();
  using Bits = typename Traits::Bits;
  const int64_t id = int64_t{blockIdx.x} * kQuadPartitionThreads + threadIdx.x;
  if (id >= map.boundaries()) return;
  const int64_t quad = id / (map.tiles_per_merge + 1), t = id - quad * (map.tiles_per_merge + 1);
  if (row_done_of_merge(quads, quad)) return;  // (its quad blocks return at once)
  const RowGeometry g = row_geometry(quads, quad);
  const QuadRuns runs = quad_runs(g, quads.n / 2);
  const int64_t d = tile_diagonal(t, map.tile, g.m + g.n);
  // Pair merges (X, Y) of quad q of a row are pairs 2 q and 2 q + 1 of that row.
  const int64_t quads_per_row = quads.merges_per_row();
  const int64_t pairs_per_row = ceil_div(quads.m, quads.n);  // pairs of runs of width n / 2
  const int64_t row = quad / quads_per_row;
  const int64_t pair_x = row * pairs_per_row + 2 * (quad - row * quads_per_row);
  const int32_t* xs = pair_splits + pair_x * (pair_tiles + 1);
  const int32_t* ys = xs + (pair_tiles + 1);  // read only when Y has elements
  const Bits* a_keys = x + g.a_offset;
  const Bits* b_keys = a_keys + runs.la;
  const Bits* c_keys = x + g.b_offset;
  const Bits* d_keys = c_keys + runs.lc;
  const QuadSplit s = quad_co_rank(
      d, map.tile, runs.la, runs.lb, runs.lc, runs.ld,
      [&](int64_t k) { return int64_t{__ldg(xs + k)}; },
      [&](int64_t k) { return int64_t{__ldg(ys + k)}; },
      [&](int64_t i) { return __ldg(a_keys + i); }, [&](int64_t i) { return __ldg(b_keys + i); },
      [&](int64_t i) { return __ldg(c_keys + i); }, [&](int64_t i) { return __ldg(d_keys + i); },
      [&](Bits raw) { return directed_key<Traits>(raw, flip); });
  quad_splits[3 * id] = static_cast<int32_t>(s.x);
  quad_splits[3 * id + 1] = static_cast<int32_t>(s.a);
  quad_splits[3 * id + 2] = static_cast<int32_t>(s.c);
}

// Shared memory of a quad block: `stage` holds the four ranges as loaded (load_ranges_packed,
// one after the other), then the first level's outputs in place, then the warps' output
// transposes; `vals` the values as loaded (at their keys' slots); `src` each first-level
// output's value slot. Slack: X's outputs padded to whole threads, and the merges' reads one
// past a range's end.
template <PayloadKind kPayload, typename Bits, typename Value, int kThreads, int kItems>
struct QuadShared {
  static constexpr PayloadKind kPayloadKind = kPayload;
  static constexpr bool kValues = kPayload == PayloadKind::kValue;
  static constexpr int kTile = kThreads * kItems;
  // (4-byte keys alone are loaded in 16-byte chunks, each range at its source's alignment:
  // under two 16-byte regions of slack a range, tile_io.cuh kChunkedSlack.)
  static constexpr int kKeySlots = kTile + 2 * kItems + 2 + 4 * kChunkedSlack<Bits>;
  static constexpr int kValueSlots = kValues ? kTile : 1;
  static constexpr int kElemBytes = std::max(int(sizeof(Bits)), kValues ? int(sizeof(Value)) : 0);
  static constexpr int kRegionBytes = 32 * kItems * kElemBytes;  // one warp's transpose
  static constexpr int kStageBytes = std::max(kKeySlots * int(sizeof(Bits)), kTile * kElemBytes);
  alignas(16) unsigned char stage[(kStageBytes + 15) / 16 * 16];
  alignas(16) Value vals[kValueSlots];
  uint16_t src[kValues ? kTile : 1];
  __device__ Bits* keys() { return reinterpret_cast<Bits*>(stage); }
};

// quads: the run pairs of width 2 w in call.layout; splits: quad_partition_kernel's.
template <typename Traits, PayloadKind kPayload, typename Value, typename Policy>
__global__ void __launch_bounds__(Policy::kThreads, Policy::kMinBlocks)
    quad_merge_kernel(MergeCall call, const int32_t* quad_splits, typename Traits::Bits flip,
                      TileMap map) {
  grid_prologue();
  using Bits = typename Traits::Bits;
  constexpr int kThreads = Policy::kThreads, kItems = Policy::kItems;
  constexpr bool kValues = kPayload == PayloadKind::kValue;
  static_assert(kPayload == PayloadKind::kNone || kValues, "sort passes carry values or none");
  __shared__ QuadShared<kPayload, Bits, Value, kThreads, kItems> shared;
  Bits* keys = shared.keys();
  const MergeLayout& quads = call.layout;
  if (row_done_of_tile(quads, blockIdx.x, map)) return;
  const PassTile tile = pass_tile(quads, map);
  const RowGeometry& g = tile.g;
  const int64_t d0 = tile.d0, d1 = tile.d1;
  if (d0 == d1) return;  // a spare tile of a short quad
  const QuadRuns runs = quad_runs(g, quads.n / 2);
  const int32_t* s0 = quad_splits + 3 * (tile.merge * (map.tiles_per_merge + 1) + tile.t);
  const int x0 = s0[0], a0 = s0[1], c0 = s0[2], x1 = s0[3], a1 = s0[4], c1 = s0[5];
  // Range starts in the quad (A's first element is element 0), and counts: A, B, C, D. (A sort
  // pass's runs are consecutive: Y = (C, D) follows X = (A, B).)
  const int start[4] = {a0, static_cast<int>(runs.la) + (x0 - a0),
                        static_cast<int>(g.b_offset - g.a_offset) + c0,
                        static_cast<int>(g.b_offset - g.a_offset + runs.lc + (d0 - x0)) - c0};
  const int count[4] = {a1 - a0, (x1 - a1) - (x0 - a0), c1 - c0,
                        static_cast<int>(((d1 - x1) - c1) - ((d0 - x0) - c0))};
  const Bits* in = static_cast<const Bits*>(call.a) + g.a_offset;
  const Value* vin = kValues ? static_cast<const Value*>(call.a_values) + g.a_offset : nullptr;
  int loc[4];
  // 4-byte keys alone: 16-byte chunks; values, and 8-byte keys, packed elements (chunks gained
  // them nothing: docs/performance.md, "16-byte chunked quad loads").
  if constexpr (!kValues && sizeof(Bits) == 4) {
    load_ranges_chunked<kThreads, kThreads * kItems, 4>(in, start, count, keys, loc);
  } else {
    load_ranges_packed<kThreads, kItems, 4, kValues>(in, vin, start, count, keys, shared.vals,
                                                     loc);
  }
  const int xn = count[0] + count[1], yn = count[2] + count[3], total = xn + yn;
  const int x_pad = (xn + kItems - 1) / kItems * kItems;  // Y's first-level outputs start here
  const int p0 = static_cast<int>(threadIdx.x) * kItems;
  __syncthreads();
  const bool nan_free = sorted_ranges_nan_free<Traits>(keys, loc, count);  // (both levels)

  // First level: X's outputs [0, xn) by the threads below x_pad, Y's [x_pad, x_pad + yn).
  const bool in_x = p0 < x_pad;
  const int diag = in_x ? p0 : p0 - x_pad;
  const bool active = diag < (in_x ? xn : yn);
  Bits key_reg[kItems];
  int src_reg[kItems];
  {
    // This thread's pair, (A, B) or (C, D).
    const int l1 = in_x ? loc[0] : loc[2], l2 = in_x ? loc[1] : loc[3];
    const int n1 = in_x ? count[0] : count[2], n2 = in_x ? count[1] : count[3];
    if (active) {
      merge_full_sorted<kItems, Traits>(nan_free, keys, l1, n1, l2, n2, diag, flip,
                                        [&](int c, Bits raw, int pos) {
                                          key_reg[c] = raw;
                                          src_reg[c] = pos;  // values sit at their keys' slots
                                        });
    }
  }
  __syncthreads();  // every first-level read is done: its outputs go in place
  if (active) {
#pragma unroll
    for (int c = 0; c < kItems; ++c) {
      keys[p0 + c] = key_reg[c];
      if constexpr (kValues) shared.src[p0 + c] = static_cast<uint16_t>(src_reg[c]);
    }
  }
  __syncthreads();

  // Second level: X with Y, output p0 + c of the tile.
  merge_last_level_and_store<kItems, Traits>(shared, nan_free, 0, xn, x_pad, yn, p0, total, flip,
                                             call, g.out_offset + d0, key_reg, src_reg);
}

// Enqueues the partition launches of a quad pass on tile `tile`: the pairs' two-way splits, then
// the quad splits after them in the workspace (quad_workspace_elements, call_args.h).
template <typename Traits>
cudaError_t launch_quad_partition(const MergeCall& pairs, int64_t tile, int32_t* workspace,
                                  cudaStream_t stream) {
  const MergeCall call = multiway_call(pairs, 4);
  const TileMap pair_map = tile_map(pairs.layout, tile);
  const TileMap quad_map = tile_map(call.layout, tile);
  if (cudaError_t err = launch_partition<Traits>(pairs, pair_map, workspace, stream);
      err != cudaSuccess) {
    return err;
  }
  const auto flip = order_mask<Traits>(call.key_type, call.descending);
  const auto* keys = static_cast<const typename Traits::Bits*>(call.a);
  auto* partition = quad_partition_kernel<Traits>;
  const unsigned blocks =
      static_cast<unsigned>(ceil_div(quad_map.boundaries(), kQuadPartitionThreads));
  return launch_kernel(partition, blocks, kQuadPartitionThreads, stream, call.layout, keys, flip,
                       quad_map, pair_map.tiles_per_merge, workspace,
                       workspace + pair_map.boundaries());
}

// Enqueues the quad pass that merges the runs of width pairs.layout.n four at a time
// (`pairs`: the two-way sort pass of that width, sort_pass) into the call's outputs; workspace:
// quad_workspace_elements (tuning/workspace.h).
template <typename Traits, PayloadKind kPayload, typename Value,
          typename Policy = QuadPolicy<int(sizeof(typename Traits::Bits)),
                                       payload_bytes(kPayload, int(sizeof(Value)))>>
cudaError_t launch_quad_pass(const MergeCall& pairs, int32_t* workspace, cudaStream_t stream) {
  const MergeCall call = multiway_call(pairs, 4);
  if (call.layout.merges() == 0 || call.layout.merge_span() == 0) return cudaSuccess;
  const TileMap pair_map = tile_map(pairs.layout, Policy::kTile);
  const TileMap quad_map = tile_map(call.layout, Policy::kTile);
  if (pair_map.tiles() >= (int64_t{1} << 31) || quad_map.boundaries() >= (int64_t{1} << 31)) {
    return cudaErrorInvalidConfiguration;
  }
  if (cudaError_t err = launch_quad_partition<Traits>(pairs, Policy::kTile, workspace, stream);
      err != cudaSuccess) {
    return err;
  }
  auto* merge = quad_merge_kernel<Traits, kPayload, Value, Policy>;
  return launch_kernel(merge, static_cast<unsigned>(quad_map.tiles()), Policy::kThreads, stream,
                       call, workspace + pair_map.boundaries(),
                       order_mask<Traits>(call.key_type, call.descending), quad_map);
}

}  // namespace jax_mergepath
