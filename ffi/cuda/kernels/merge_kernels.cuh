// merge_kernels.cuh (level: kernels): the kernel level of the CUDA batched merge, on the shared
// core (thread level: merge_path.h; block level: block_merge.cuh, tile_io.cuh).
//
// Merges longer than a tile ("tiled"), after the partition pass (partition.cuh) wrote every tile
// boundary's split (large sort passes: the first tiles search their own while it runs; small
// batches without order checks have no pass): one block per tile loads the tile's exact A and
// B ranges into shared memory (16-byte loads), every thread finds its split by co_rank in shared
// memory and merges kItems outputs into registers (merge_full when the tile has no ragged tail,
// merge_general otherwise), and each warp stores its outputs through shared memory, coalesced;
// indices or values follow.
// Ranks payloads (searchsorted) store, for each element of the ranked side, how many outputs of
// the other side precede it (through shared memory, coalesced); short rows of them take the rows
// kernel below.
// Rows no longer than a tile, every element valid ("rows"): a block merges rows_per_block whole
// rows (tuning/merge.h merge_rows_shape), a group of threads a row, each thread kItems outputs of
// its row with the branch-free merge_full; outputs are staged in shared memory and stored by the
// block. Rows short enough that a warp holds several sit in shared memory as strided rows (inputs
// and outputs: tile_io.cuh), so the warp's rows fall on different banks. Ragged rows ("packed"):
// a block merges up to kMaxRowsPerTile whole rows, its threads crossing row boundaries
// (merge_general), so a vmap of tiny merges fills the GPU too.
// Invariants: all reads stay inside the block's ranges; every output is a permutation of its
// inputs, unsorted input included (merges of the caller's input check that their threads and
// tiles chain up and fall back to A then B: below); in-block positions are int32, global
// offsets int64. docs/performance.md has what was measured and tried.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "../block/block_merge.cuh"
#include "../block/grid_launch.cuh"
#include "../block/tile_io.cuh"
#include "jax_mergepath/batch_geometry.h"
#include "jax_mergepath/call_args.h"
#include "jax_mergepath/merge_path.h"
#include "jax_mergepath/tuning/merge.h"
#include "partition.cuh"

namespace jax_mergepath {

// Where tile `tile_id` of the batch lies: its merge, that merge's geometry, and the tile's two
// boundary diagonals.
struct TileSpot {
  int64_t merge, t, k0, k1;
  RowGeometry g;
};

__device__ __forceinline__ TileSpot tile_spot(const MergeLayout& layout, int64_t tile_id,
                                              const TileMap& map) {
  // Both fit 32 bits (the launch checks tiles < 2^31): a 32-bit division is ~5x cheaper.
  const uint32_t merge32 =
      static_cast<uint32_t>(tile_id) / static_cast<uint32_t>(map.tiles_per_merge);
  const int64_t merge = merge32, t = tile_id - int64_t{merge32} * map.tiles_per_merge;
  const RowGeometry g = row_geometry(layout, merge);
  const int64_t length = g.m + g.n;
  return {merge, t, tile_diagonal(t, map.tile, length), tile_diagonal(t + 1, map.tile, length), g};
}

// The ranges of tile `tile_id` of the batch, from the partition pass's splits (a_first: from
// co_rank_upper's instead, min(k, m): all of A, then B, splits that chain up whatever the input,
// for a merge whose searched splits do not).
// next_start: the end split as searched, before tile_ranges clamps it to this tile's start (the
// next tile's start split: they differ only on unsorted input).
__device__ __forceinline__ TileRanges tile_ranges_of(const MergeLayout& layout,
                                                     const int32_t* splits, int64_t tile_id,
                                                     const TileMap& map, bool a_first,
                                                     int& next_start) {
  const TileSpot s = tile_spot(layout, tile_id, map);
  const int32_t* merge_splits = splits + s.merge * (map.tiles_per_merge + 1);
  next_start = a_first ? static_cast<int>(co_rank_upper(s.k1, s.g.m)) : merge_splits[s.t + 1];
  return tile_ranges(s.g, s.k0, s.k1, a_first ? co_rank_upper(s.k0, s.g.m) : merge_splits[s.t],
                     next_start);
}

// The ranges of tile `tile_id` with its two splits searched by the block itself (no partition
// pass, tuning/merge.h merge_splits_in_tiles, or an early tile, merge_early_tiles): warps 0 and 1
// find the start and end splits (partition.cuh warp_split), exactly the partition pass's. a_all /
// b_all: the batch's A and B keys. Every thread of the block calls it (a barrier inside);
// `found` is shared.
template <typename Traits>
__device__ __forceinline__ TileRanges tile_ranges_searched(
    const MergeLayout& layout, const typename Traits::Bits* a_all,
    const typename Traits::Bits* b_all, typename Traits::Bits flip, int64_t tile_id,
    const TileMap& map, int32_t (&found)[2], int& next_start) {
  const TileSpot s = tile_spot(layout, tile_id, map);
  const int warp = static_cast<int>(threadIdx.x >> 5);
  if (warp < 2) {
    const int64_t split = warp_split<Traits>(s.g, a_all, b_all, flip, warp == 0 ? s.k0 : s.k1);
    if ((threadIdx.x & 31) == 0) found[warp] = static_cast<int32_t>(split);
  }
  __syncthreads();
  next_start = found[1];
  return tile_ranges(s.g, s.k0, s.k1, found[0], found[1]);
}

// True iff the merge holding tile `tile_id` has a pair of neighbouring splits that do not chain
// up (partition.cuh). Call with one warp. The partition blocks strictly inside the merge's range
// hold its pairs alone: the lanes read their flags (none for most merges; 107 for a 2^27 int32
// merge, 292 for int64 + int32), kFlagsALane independent loads a lane at a time, so a tile waits
// for one load, not one per flag. The two blocks at its ends may hold other merges' pairs too:
// lanes 0 and 1 read their flags beside the others and, only where one is set (unsorted input),
// the block's mask of broken pairs. (kFlagsALane: tuning/merge.h.)

__device__ __forceinline__ bool chain_broken_in_merge(const int32_t* chain_flags, int64_t tile_id,
                                                      const TileMap& map) {
  // 32-bit divisions: boundaries <= 2 tiles < 2^32.
  const uint32_t per_merge = static_cast<uint32_t>(map.tiles_per_merge);
  const uint32_t fresh = static_cast<uint32_t>(partition_boundaries_per_block(map.boundaries()) - 1);
  const uint32_t first = static_cast<uint32_t>(tile_id) / per_merge * (per_merge + 1);
  const uint32_t last = first + per_merge - 1;  // its pairs: (p, p + 1) for p in [first, last]
  const uint32_t first_block = first / fresh, last_block = last / fresh;
  const uint32_t lane = threadIdx.x & 31;
  const uint32_t end_block = lane == 0 ? first_block : last_block;
  const bool at_end = lane < 2 && (lane == 0 || last_block != first_block);
  const int32_t end_flag = at_end ? chain_flags[end_block] : 0;
  int32_t broken = 0;
  for (uint32_t b0 = first_block + 1 + lane; b0 < last_block; b0 += 32 * kFlagsALane) {
    int32_t flag[kFlagsALane];
#pragma unroll
    for (int f = 0; f < kFlagsALane; ++f) {
      const uint32_t b = b0 + 32 * f;
      flag[f] = b < last_block ? chain_flags[b] : 0;
    }
#pragma unroll
    for (int f = 0; f < kFlagsALane; ++f) broken |= flag[f];
  }
  if (end_flag != 0) {  // which of that block's pairs broke: this merge's (bits [lo, hi])?
    const uint32_t base = end_block * fresh;
    const uint32_t lo = (first > base ? first : base) - base;
    const uint32_t hi = (last < base + fresh - 1 ? last : base + fresh - 1) - base;
    // tuning/merge.h partition_blocks and partition_mask_words, in 32 bits (a 64-bit division here
    // made ptxas spill the merge).
    const uint32_t blocks = (static_cast<uint32_t>(map.boundaries()) - 2) / fresh + 1;
    const int32_t* mask = chain_flags + blocks + end_block * ((fresh + 31) / 32);
    for (uint32_t w = lo / 32; w <= hi / 32; ++w) {
      const uint32_t from = w == lo / 32 ? lo % 32 : 0, to = w == hi / 32 ? hi % 32 : 31;
      broken |= (static_cast<uint32_t>(mask[w]) >> from) << (31 - (to - from)) != 0;
    }
  }
  return broken != 0;
}

// True iff tile `tile_id` belongs to a row a sort pass leaves alone (kRunPairs, row_done): the
// block returns after one flag read, before the splits and the geometry (a presorted sort's
// passes are all such blocks: ~4 us a block before, ncu).
__device__ __forceinline__ bool row_done_of_tile(const MergeLayout& layout, int64_t tile_id,
                                                 const TileMap& map) {
  if (layout.mode != RowMode::kRunPairs || layout.row_done == nullptr) return false;
  // 32-bit division: tiles < 2^31 (checked at launch), so merges and rows fit too.
  const uint32_t merge = static_cast<uint32_t>(tile_id) / static_cast<uint32_t>(map.tiles_per_merge);
  return row_done_of_merge(layout, merge);
}

// The tile that block `blockIdx.x` of a pass over `layout` (tile map `map`: quad and eight-way
// passes) merges: its merge, its tile in the merge, the merge's geometry and the tile's output
// diagonals [d0, d1) (d0 == d1: a spare tile of a short merge). 32-bit divisions: tiles < 2^31
// (checked at launch).
struct PassTile {
  int64_t merge, t;
  RowGeometry g;
  int64_t d0, d1;
};

__device__ __forceinline__ PassTile pass_tile(const MergeLayout& layout, const TileMap& map) {
  const uint32_t merge32 =
      static_cast<uint32_t>(blockIdx.x) / static_cast<uint32_t>(map.tiles_per_merge);
  PassTile p;
  p.merge = merge32;
  p.t = int64_t{blockIdx.x} - int64_t{merge32} * map.tiles_per_merge;
  p.g = row_geometry(layout, p.merge);
  p.d0 = tile_diagonal(p.t, map.tile, p.g.m + p.g.n);
  p.d1 = tile_diagonal(p.t + 1, map.tile, p.g.m + p.g.n);
  return p;
}

// Ranks payloads: output p of the tile (diagonal r.k_begin + p of its merge) came from element
// e of the tile's A range (or B's); an element of the ranked side gets the count of the other
// side's outputs before it. Returns e (or -1 for the other side) and sets rank.
template <PayloadKind kPayload>
__device__ __forceinline__ int rank_of(const TileRanges& r, int p, bool from_b, int e,
                                       int& rank) {
  const int i0 = r.a_index_base, j0 = r.k_begin - r.a_index_base;
  const bool ranked = kPayload == PayloadKind::kRanksOfA ? !from_b : from_b;
  rank = r.k_begin + p - ((from_b ? j0 : i0) + e);  // the other side's outputs before it
  return ranked ? e : -1;
}

// Ranks payloads: every thread's ranks (slot_reg: the ranked element's slot in [0, count), or
// -1; rank_reg) go through shared memory, then the block writes the `count` ranks to `out`,
// coalesced. Unsorted input can leave a slot unemitted (threads search their splits on their
// own): it gets `fallback`, so every stored rank stays a valid position. Call after a barrier
// that ends every read of shared memory.
template <int kItems, int kThreads>
__device__ __forceinline__ void store_ranks(int32_t* stage, const int (&slot_reg)[kItems],
                                            const int (&rank_reg)[kItems], int count,
                                            int fallback, int32_t* out) {
  for (int i = threadIdx.x; i < count; i += kThreads) stage[i] = fallback;
  __syncthreads();
#pragma unroll
  for (int c = 0; c < kItems; ++c) {
    if (slot_reg[c] >= 0) stage[slot_reg[c]] = rank_reg[c];
  }
  __syncthreads();
  for (int i = threadIdx.x; i < count; i += kThreads) out[i] = stage[i];
}

// Ranks payloads on unsorted input (searchsorted with sorted_v=True on queries that are not
// sorted) have no order check: a tile's end split can lie outside what its start allows, and
// tile_ranges clamps it, while the next tile starts from the split as searched (next_start). The
// ranked elements between the two ends belong to no tile; the tile before them writes them a
// rank (its end's count of the other side), so every rank is written and in bounds. Sorted input
// never leaves such a gap. GapRanks: where those elements' ranks go (global offset), how many
// there are, and their rank.
struct GapRanks {
  int64_t begin;
  int count, rank;
};

template <PayloadKind kPayload>
__device__ __forceinline__ GapRanks gap_after_tile(const TileRanges& r, int next_start) {
  const int i1 = r.a_index_base + r.a_count;  // the tile's (clamped) end split
  const int j1 = r.k_begin + r.a_count + r.b_count - i1;
  // of A: A's elements [i1, next_start); of B: B's elements [j1, j1 + i1 - next_start).
  if constexpr (kPayload == PayloadKind::kRanksOfA) {
    return {r.a_begin + r.a_count, next_start - i1, j1};
  }
  return {r.b_begin + r.b_count, i1 - next_start, i1};
}

template <int kThreads>
__device__ __forceinline__ void store_gap_ranks(const GapRanks& gap, void* ranks) {
  int32_t* out = static_cast<int32_t*>(ranks) + gap.begin;
  for (int x = threadIdx.x; x < gap.count; x += kThreads) out[x] = gap.rank;
}

// Unsorted input (merges of the caller's input only, tuning/merge.h merge_checks_order). A block
// whose threads' spans do not chain up (block_merge.cuh SpanChain) emits its inputs as A then B
// instead: the tiled kernel from the tile still staged (one more barrier a tile), the rows and
// packed kernels by copying their broken rows again (SpanChainWithEnds: the rows holding a
// broken span), global to global, over what they wrote. A tiled merge whose partition splits do
// not chain up (partition.cuh's chain flags, read when the tile is stored) is cut A first
// (co_rank_upper: every tile copies its part of A, then of B), so it returns its inputs
// concatenated; a partition block shared by several merges says which of its pairs broke
// (chain_broken_in_merge), so only the broken merge falls back. The copies are plain loops
// after the merge: they cost its registers nothing (two kinds of copy after the tiled merge, or
// a 64-bit division there, made ptxas spill the merge: checked in the SASS). Sorted input never
// takes them.

// Output p of ranges r (a tile's, or a whole row's) as A then B: copied with its index or value.
template <typename Bits, PayloadKind kPayload, typename Value>
__device__ __forceinline__ void copy_concatenated(const MergeCall& call, const TileRanges& r,
                                                  int p) {
  const bool separate = call.layout.mode == RowMode::kSeparate;
  const bool from_b = p >= r.a_count;
  const int e = from_b ? p - r.a_count : p;
  const int64_t at = (from_b ? r.b_begin : r.a_begin) + e;
  static_cast<Bits*>(call.out)[r.out_begin + p] =
      static_cast<const Bits*>(from_b && separate ? call.b : call.a)[at];
  if constexpr (kPayload == PayloadKind::kIndex) {
    static_cast<int32_t*>(call.out_payload)[r.out_begin + p] =
        (from_b ? r.b_index_base : r.a_index_base) + e;
  } else if constexpr (kPayload == PayloadKind::kValue) {
    static_cast<Value*>(call.out_payload)[r.out_begin + p] =
        static_cast<const Value*>(from_b && separate ? call.b_values : call.a_values)[at];
  }
}

// The broken ones (row_broken(r)) of a block's rows [row0, row0 + rows) of full length row_len,
// each copied as A then B.
template <typename Bits, PayloadKind kPayload, typename Value, int kThreads, typename RowBroken>
__device__ void copy_rows_concatenated(const MergeCall& call, int64_t row0, int rows, int row_len,
                                       const RowBroken& row_broken) {
#pragma unroll 1
  for (int p = threadIdx.x; p < rows * row_len; p += kThreads) {
    const int r = p / row_len;
    if (!row_broken(r)) continue;
    const RowGeometry g = row_geometry(call.layout, row0 + r);
    copy_concatenated<Bits, kPayload, Value>(call, tile_ranges(g, 0, row_len, 0, g.m),
                                             p - r * row_len);
  }
}

// One block per tile: load the tile's exact A and B ranges, merge, store. Tiles without a ragged
// tail inside them (every tile of a full-length merge) take the branch-free thread merge.
// splits: the partition pass's, or null when the block searches its own (tuning/merge.h
// merge_splits_in_tiles, merge_early_tiles). chain_flags: the partition's (merge_checks_order),
// else null (no check: a sort pass's runs, searchsorted's ranks). Returns true iff the merge's
// partition splits do not chain up.
template <typename Traits, PayloadKind kPayload, typename Value, typename Policy>
__device__ __forceinline__ bool tiled_block(const MergeCall& call, const int32_t* splits,
                                            typename Traits::Bits flip, const TileMap& map,
                                            const int32_t* chain_flags) {
  using Bits = typename Traits::Bits;
  constexpr int kThreads = Policy::kThreads, kItems = Policy::kItems;
  constexpr bool kRanks = is_ranks(kPayload);
  __shared__ MergeShared<kPayload, Bits, Value, kThreads, kItems> shared;
  __shared__ SpanChain<kThreads> chain;
  __shared__ int32_t found_splits[2];
  __shared__ GapRanks gap;
  Bits* keys = shared.keys();
  const bool separate = call.layout.mode == RowMode::kSeparate;
  const Bits* a_all = static_cast<const Bits*>(call.a);
  const Bits* b_all = static_cast<const Bits*>(separate ? call.b : call.a);
  const Value* va_all = static_cast<const Value*>(call.a_values);
  const Value* vb_all = static_cast<const Value*>(separate ? call.b_values : call.a_values);
  if (row_done_of_tile(call.layout, blockIdx.x, map)) return false;
  int next_start;
  const TileRanges r =
      splits != nullptr ? tile_ranges_of(call.layout, splits, blockIdx.x, map, false, next_start)
                        : tile_ranges_searched<Traits>(call.layout, a_all, b_all, flip,
                                                       blockIdx.x, map, found_splits, next_start);
  const int count = r.a_count + r.b_count;
  if (count == 0) return false;  // a spare tile of a short run pair
  const bool checked = !kRanks && chain_flags != nullptr;  // (uniform)
  // cp.async only with values (tile_io.cuh load_two_ranges: keys alone keep staged loads).
  const TileLocs locs = load_tile<kThreads, kPayload == PayloadKind::kValue>(
      shared, a_all + r.a_begin, b_all + r.b_begin, va_all + r.a_begin, vb_all + r.b_begin,
      r.a_count, r.b_count);
  // Ranks: the gap after the tile waits in shared memory for store_gap_ranks (what it needs,
  // kept in registers through the merge, made ptxas spill; so did computing it before the loads).
  if (kRanks && threadIdx.x == 0) gap = gap_after_tile<kPayload>(r, next_start);
  __syncthreads();
  Bits key_reg[kItems];
  int src_reg[kItems];
  int32_t index_reg[kItems];
  const int p0 = static_cast<int>(threadIdx.x) * kItems;
  auto started = [&](int a_begin) {
    if (checked) chain.publish(a_begin);
  };
  MergeEnd end;
  if (r.mv == r.a_count && r.nv == r.b_count) {
    int pos_reg[kItems];
    const int loc[2] = {locs.key_loc1, locs.key_loc2}, n[2] = {r.a_count, r.b_count};
    end = merge_full_sorted<kItems, Traits>(
        sorted_ranges_nan_free<Traits>(keys, loc, n), keys, locs.key_loc1, r.a_count,
        locs.key_loc2, r.b_count, p0, flip,
        [&](int c, Bits raw, int pos) {
          key_reg[c] = raw;
          pos_reg[c] = pos;
        },
        started);
    end.open = p0 + kItems < count;
#pragma unroll
    for (int c = 0; c < kItems; ++c) {  // key position -> row index and value position
      const bool from_b = pos_reg[c] >= locs.key_loc2;
      const int e = pos_reg[c] - (from_b ? locs.key_loc2 : locs.key_loc1);
      if constexpr (kRanks) {  // index_reg: the ranked element or -1; src_reg: its rank
        index_reg[c] = p0 + c < count ? rank_of<kPayload>(r, p0 + c, from_b, e, src_reg[c]) : -1;
        continue;
      }
      // (unsigned: outputs past `count` are never stored and may wrap near 2^31)
      index_reg[c] = static_cast<int32_t>(static_cast<uint32_t>(e) +
                                          static_cast<uint32_t>(from_b ? r.b_index_base
                                                                       : r.a_index_base));
      src_reg[c] = e + (from_b ? locs.val_loc2 : locs.val_loc1);
    }
  } else {
#pragma unroll
    for (int c = 0; c < kItems; ++c) {
      key_reg[c] = Bits(0);
      src_reg[c] = 0;
      index_reg[c] = kRanks ? -1 : 0;
    }
    auto segment_at = [&](int p, int& diag) {
      diag = p;
      return Segment{{locs.key_loc1, locs.key_loc2, r.a_count, r.b_count, r.mv, r.nv, count},
                     r.a_index_base, r.b_index_base, locs.val_loc1, locs.val_loc2};
    };
    end = merge_general<kItems, Traits>(
        flip, p0, count, segment_at, [&](int pos) { return keys[pos]; },
        [&](int c, Bits raw, bool from_b, int e, const Segment& s) {
          if constexpr (kRanks) {
            index_reg[c] = rank_of<kPayload>(r, p0 + c, from_b, e, src_reg[c]);
            return;
          }
          key_reg[c] = raw;
          src_reg[c] = (from_b ? s.b_src_base : s.a_src_base) + e;
          index_reg[c] = (from_b ? s.b_index_base : s.a_index_base) + e;
        },
        started);
  }
  __syncthreads();  // every thread is done merging (and has published its start)
  if (checked && __syncthreads_or(chain.breaks(end))) {
    // Unsorted input: the tile's ranges, still staged, emitted as A then B instead.
#pragma unroll
    for (int c = 0; c < kItems; ++c) {
      const int p = p0 + c;
      const bool from_b = p >= r.a_count;
      const int e = from_b ? p - r.a_count : p;
      key_reg[c] = keys[(from_b ? locs.key_loc2 : locs.key_loc1) + (p < count ? e : 0)];
      src_reg[c] = (from_b ? locs.val_loc2 : locs.val_loc1) + e;
      index_reg[c] = (from_b ? r.b_index_base : r.a_index_base) + e;
    }
    __syncthreads();  // every thread is done reading the keys in shared.stage
  }
  if constexpr (kRanks) {
    // A tile's unemitted elements get its start rank.
    const bool of_a = kPayload == PayloadKind::kRanksOfA;
    store_ranks<kItems, kThreads>(
        reinterpret_cast<int32_t*>(shared.stage), index_reg, src_reg,
        of_a ? r.a_count : r.b_count, of_a ? r.k_begin - r.a_index_base : r.a_index_base,
        static_cast<int32_t*>(call.out_payload) + (of_a ? r.a_begin : r.b_begin));
    store_gap_ranks<kThreads>(gap, call.out_payload);
  } else {
    store_tile_outputs(shared, key_reg, src_reg, index_reg,
                       static_cast<Bits*>(call.out) + r.out_begin,
                       kPayload == PayloadKind::kNone
                           ? nullptr
                           : static_cast<void*>(static_cast<Value*>(call.out_payload) +
                                                r.out_begin),
                       count);
  }
  // The partition's flags are read last, when they cost no register through the merge.
  return checked && __syncthreads_or(threadIdx.x < 32 &&
                                     chain_broken_in_merge(chain_flags, blockIdx.x, map));
}

// The tiled merge of a batch. Tiles [0, early_tiles) (tuning/merge.h merge_early_tiles: large sort
// passes, after a partition pass) search their own splits and start without waiting for the
// pass before them, which waited first (grid_launch.cuh); the others wait and read its splits.
template <typename Traits, PayloadKind kPayload, typename Value, typename Policy>
__global__ void __launch_bounds__(Policy::kThreads, Policy::kMinBlocks)
    merge_tiled_kernel(MergeCall call, const int32_t* splits, typename Traits::Bits flip,
                       TileMap map, const int32_t* chain_flags, uint32_t early_tiles) {
  const bool early = blockIdx.x < early_tiles;
  if (early) {
    grid_let_next_start();
  } else {
    grid_prologue();
  }
  if (tiled_block<Traits, kPayload, Value, Policy>(call, early ? nullptr : splits, flip, map,
                                                   chain_flags)) {
    if constexpr (!is_ranks(kPayload)) {  // unsorted input: the merge's inputs concatenated
      int end;  // (A first: every tile's end is the next one's start)
      const TileRanges r = tile_ranges_of(call.layout, splits, blockIdx.x, map, true, end);
#pragma unroll 1
      for (int p = threadIdx.x; p < r.a_count + r.b_count; p += Policy::kThreads) {
        copy_concatenated<typename Traits::Bits, kPayload, Value>(call, r, p);
      }
    }
  }
}

// Stages every thread's valid outputs (reg[c] for c < valid: outputs d0 + c of row `row` of the
// block's `rows` rows of row_len), then the block stores them to dst: as strided rows
// (tile_io.cuh) where may_stride, their stride differs from row_len, they fit kStageBytes and
// dst is 16-byte aligned, else contiguous (store_block_staged). Starts with a barrier: every
// earlier read of `stage` is done (and every earlier shared store seen). Returns the block's OR
// of vote(), asked after that barrier and gathered at the next one, which is there anyway.
template <int kThreads, int kItems, int kStageBytes, typename T, typename Vote>
__device__ __forceinline__ bool store_rows_staged(unsigned char* stage_bytes, const T (&reg)[kItems],
                                                  int row, int d0, int valid, int rows,
                                                  int row_len, bool may_stride, T* dst,
                                                  const Vote& vote) {
  const int count = rows * row_len;
  const int stride = strided_row_stride<T>(row_len);
  const bool strided = may_stride && stride != row_len &&
                       rows * stride <= kStageBytes / int(sizeof(T)) &&
                       aligned16(dst);
  const RangePlan<T> plan(dst, count, 0);
  T* stage = reinterpret_cast<T*>(stage_bytes);
  __syncthreads();
  const bool mine = vote();
  const int at = strided ? row * stride + d0 : plan.loc + row * row_len + d0;
#pragma unroll
  for (int c = 0; c < kItems; ++c) {
    if (c < valid) stage[at + c] = reg[c];
  }
  const bool any = __syncthreads_or(mine) != 0;
  if (strided) {
    store_rows_strided<kThreads>(stage, rows, row_len, stride, dst);
  } else {
    store_block_staged<kThreads>(plan, stage, dst);
  }
  return any;
}

// Full rows no longer than a tile (kSeparate without valid lengths, or kRuns): thread t merges
// outputs [local * kItems, local * kItems + kItems) of row t / threads_per_row (local: its rank
// in the row's group); threads past the block's rows only help load and store. Returns true
// iff some thread's span did not chain up (unsorted input); `chain` then tells whose. Ranks
// payloads (searchsorted's short rows, kSeparate) store the ranked side's ranks, rows after
// rows, and no keys; they have no order check (a row's unemitted elements get rank 0).
template <typename Traits, PayloadKind kPayload, typename Value, typename Policy>
__device__ __forceinline__ bool rows_block(const MergeCall& call, typename Traits::Bits flip,
                                           const RowsShape& shape,
                                           SpanChainWithEnds<Policy::kThreads>& chain) {
  using Bits = typename Traits::Bits;
  constexpr int kThreads = Policy::kThreads, kItems = Policy::kItems;
  using Shared = MergeShared<kPayload, Bits, Value, kThreads, kItems,
                             shared_budget_per_block(Policy::kMinBlocks),
                             int(sizeof(SpanChainWithEnds<kThreads>))>;
  __shared__ Shared shared;
  constexpr int kStageSlots = Shared::kStageBytes / int(sizeof(Bits));
  Bits* keys = shared.keys();
  const MergeLayout& layout = call.layout;
  const bool runs = layout.mode == RowMode::kRuns;
  const int row_len = static_cast<int>(layout.row_length());
  const int64_t row0 = int64_t{blockIdx.x} * shape.rows_per_block;
  const int rows_here = static_cast<int>(
      layout.rows - row0 < shape.rows_per_block ? layout.rows - row0 : shape.rows_per_block);
  // Inputs: kRuns reads whole rows of x; kSeparate reads the rows of a, then the rows of b.
  const int m = runs ? 0 : static_cast<int>(layout.m);
  const int n = runs ? 0 : static_cast<int>(layout.n);
  const int count = rows_here * row_len;
  const int64_t in1 = runs ? row0 * row_len : row0 * m;
  const int64_t in2 = row0 * n;
  const Bits* keys1 = static_cast<const Bits*>(call.a) + in1;
  const Bits* keys2 = static_cast<const Bits*>(runs ? call.a : call.b) + in2;
  const Value* vals1 = static_cast<const Value*>(call.a_values) + in1;
  const Value* vals2 = static_cast<const Value*>(runs ? call.a_values : call.b_values) + in2;
  // The keys' rows in shared memory: range 1's (kRuns: whole rows; kSeparate: a's) at stride1,
  // then b's at stride2; strided (tile_io.cuh) where rows are short enough that a warp holds
  // several (tuning/merge.h kRowsStridedMaxThreadsPerRow), that spreads them over the banks,
  // they fit (with kItems slots past the last row: a row's last thread steps through all its
  // items, reading up to that far past its row, as merge_rows_shape allows for) and their
  // sources allow 16-byte copies, else contiguous. The outputs are staged strided under the
  // same first condition where their own stride, room and alignment allow (store_rows_staged).
  constexpr int kPer = kPerVector<Bits>;
  const bool short_rows = shape.threads_per_row <= kRowsStridedMaxThreadsPerRow;
  const int len1 = runs ? row_len : m;
  int stride1 = strided_row_stride<Bits>(len1), stride2 = strided_row_stride<Bits>(n);
  const bool strided =
      short_rows && len1 % kPer == 0 && n % kPer == 0 && (stride1 != len1 || stride2 != n) &&
      rows_here * (stride1 + stride2) + kItems <= kStageSlots &&
      aligned16(keys1) && aligned16(keys2);
  TileLocs locs;
  if (strided) {
    locs = load_tile_rows_strided<kThreads>(shared, keys1, keys2, vals1, vals2, rows_here, len1,
                                            stride1, n, stride2);
  } else {
    stride1 = len1;
    stride2 = n;
    locs = load_tile<kThreads, true>(shared, keys1, keys2, vals1, vals2,
                                     runs ? count : rows_here * m, runs ? 0 : rows_here * n);
  }
  // This thread's row and first output in it; its split of the row from the row's geometry.
  const int per_row = static_cast<int>(shape.threads_per_row);
  const int r = static_cast<int>(threadIdx.x) / per_row;
  const int d0 = (static_cast<int>(threadIdx.x) - r * per_row) * kItems;
  const bool active = r < rows_here;
  const int valid = active ? (row_len - d0 < kItems ? row_len - d0 : kItems) : 0;
  int rm = m, rn = n;  // the row's A and B lengths (batch_geometry.h; kRuns: its split)
  if (runs && active) {
    const RowGeometry g = row_geometry(layout, row0 + r);
    rm = static_cast<int>(g.m);
    rn = static_cast<int>(g.n);
  }
  const int a_row = runs ? r * row_len : r * m;  // values' element offsets in the loaded ranges
  const int b_row = runs ? a_row + rm : r * n;
  const int a_loc = locs.key_loc1 + r * stride1;  // the keys' (strided or not)
  const int b_loc = runs ? a_loc + rm : locs.key_loc2 + r * stride2;
  const int va_loc = locs.val_loc1 + a_row;
  const int vb_loc = (runs ? locs.val_loc1 : locs.val_loc2) + b_row;
  __syncthreads();
  constexpr bool kRanks = is_ranks(kPayload);
  const int ranked_len = kPayload == PayloadKind::kRanksOfA ? m : n;
  Bits key_reg[kItems];
  // kIndex: row-local index; kValue: value position in shared.vals; ranks: the ranked element's
  // slot in the block's ranked rows, or -1 (then rank_reg: the other side's outputs before it).
  int32_t index_reg[kItems];
  int rank_reg[kItems];
  if constexpr (kRanks) {
#pragma unroll
    for (int c = 0; c < kItems; ++c) index_reg[c] = -1;
  }
  MergeEnd end{0, false};
  if (active) {
    end = merge_full<kItems, Traits>(
        keys, a_loc, rm, b_loc, rn, d0, 0, flip,
        [&](int c, Bits raw, int pos) {
          key_reg[c] = raw;
          const bool from_b = pos >= b_loc;
          const int e = pos - (from_b ? b_loc : a_loc);
          if constexpr (kRanks) {
            const bool ranked = (kPayload == PayloadKind::kRanksOfB) == from_b;
            index_reg[c] = ranked && c < valid ? r * ranked_len + e : -1;
            rank_reg[c] = d0 + c - e;
          } else {
            index_reg[c] = kPayload == PayloadKind::kValue ? e + (from_b ? vb_loc : va_loc)
                                                           : e + (from_b ? rm : 0);
          }
        },
        [&](int a_begin) {
          if constexpr (!kRanks) chain.publish(a_begin);
        });
    end.open = d0 + kItems < row_len;
  }
  if constexpr (kRanks) {
    __syncthreads();  // every thread is done reading the keys in shared.stage
    store_ranks<kItems, kThreads>(reinterpret_cast<int32_t*>(shared.stage), index_reg, rank_reg,
                                  rows_here * ranked_len, 0,
                                  static_cast<int32_t*>(call.out_payload) + row0 * ranked_len);
    return false;
  }
  constexpr int kStageBytes = Shared::kStageBytes;
  const int64_t out_begin = row0 * row_len;
  auto no_vote = [] { return false; };
  const bool any_broken = store_rows_staged<kThreads, kItems, kStageBytes>(
      shared.stage, key_reg, r, d0, valid, rows_here, row_len, short_rows,
      static_cast<Bits*>(call.out) + out_begin,
      [&] { return chain.breaks_and_keep(end); });  // (after a barrier: every start published)
  if constexpr (kPayload == PayloadKind::kIndex) {
    store_rows_staged<kThreads, kItems, kStageBytes>(
        shared.stage, index_reg, r, d0, valid, rows_here, row_len, short_rows,
        static_cast<int32_t*>(call.out_payload) + out_begin, no_vote);
  } else if constexpr (kPayload == PayloadKind::kValue) {
    Value value_reg[kItems];
#pragma unroll
    for (int c = 0; c < kItems; ++c) value_reg[c] = c < valid ? shared.vals[index_reg[c]] : Value(0);
    store_rows_staged<kThreads, kItems, kStageBytes>(
        shared.stage, value_reg, r, d0, valid, rows_here, row_len, short_rows,
        static_cast<Value*>(call.out_payload) + out_begin, no_vote);
  }
  return any_broken;
}

template <typename Traits, PayloadKind kPayload, typename Value, typename Policy>
__global__ void __launch_bounds__(Policy::kThreads, Policy::kMinBlocks)
    merge_rows_kernel(MergeCall call, typename Traits::Bits flip, RowsShape shape) {
  grid_prologue();
  __shared__ SpanChainWithEnds<Policy::kThreads> chain;
  const bool broken = rows_block<Traits, kPayload, Value, Policy>(call, flip, shape, chain);
  if constexpr (!is_ranks(kPayload)) {  // (ranks: no order check, never broken)
    if (broken) {
      __syncthreads();  // the block's stores are done before the copy overwrites them
      const int64_t row0 = int64_t{blockIdx.x} * shape.rows_per_block;
      const int64_t rows_left = call.layout.rows - row0;
      const int per_row = static_cast<int>(shape.threads_per_row);  // row r: its own threads
      copy_rows_concatenated<typename Traits::Bits, kPayload, Value, Policy::kThreads>(
          call, row0,
          static_cast<int>(rows_left < shape.rows_per_block ? rows_left : shape.rows_per_block),
          static_cast<int>(call.layout.row_length()),
          [&](int r) { return chain.any_broken(r * per_row, r * per_row + per_row); });
    }
  }
}

// Ragged rows no longer than a tile, packed whole: kSeparate or kRuns rows, not run pairs or
// ranks. Returns true iff some thread's span did not chain up (unsorted input); `chain` then
// tells whose.
template <typename Traits, PayloadKind kPayload, typename Value, typename Policy>
__device__ __forceinline__ bool packed_block(const MergeCall& call, typename Traits::Bits flip,
                                             SpanChainWithEnds<Policy::kThreads>& chain) {
  using Bits = typename Traits::Bits;
  constexpr int kThreads = Policy::kThreads, kItems = Policy::kItems, kTile = kThreads * kItems;
  __shared__ MergeShared<kPayload, Bits, Value, kThreads, kItems> shared;
  __shared__ int row_split[kMaxRowsPerTile], row_mv[kMaxRowsPerTile], row_nv[kMaxRowsPerTile];
  Bits* keys = shared.keys();
  const MergeLayout& layout = call.layout;
  const bool runs = layout.mode == RowMode::kRuns;
  const Bits* a_all = static_cast<const Bits*>(call.a);
  const Bits* b_all = static_cast<const Bits*>(runs ? call.a : call.b);
  const Value* va_all = static_cast<const Value*>(call.a_values);
  const Value* vb_all = static_cast<const Value*>(runs ? call.a_values : call.b_values);
  const int row_len = static_cast<int>(layout.row_length());
  const int64_t per_tile = merge_rows_per_tile(kTile, row_len);
  const int64_t row0 = int64_t{blockIdx.x} * per_tile;
  const int rows_here =
      static_cast<int>(layout.rows - row0 < per_tile ? layout.rows - row0 : per_tile);
  for (int r = threadIdx.x; r < rows_here; r += kThreads) {
    const RowGeometry rg = row_geometry(layout, row0 + r);
    row_split[r] = static_cast<int>(rg.m);
    row_mv[r] = static_cast<int>(rg.mv);
    row_nv[r] = static_cast<int>(rg.nv);
  }
  // Inputs: kRuns reads whole rows of x; kSeparate reads the rows of a, then the rows of b.
  const int count = rows_here * row_len;
  const int m = runs ? 0 : static_cast<int>(layout.m);
  const int n = runs ? 0 : static_cast<int>(layout.n);
  const int64_t in1 = runs ? row0 * row_len : row0 * m;
  const int64_t in2 = row0 * n;
  const int c1 = runs ? count : rows_here * m;
  const int c2 = runs ? 0 : rows_here * n;
  const int64_t out_begin = row0 * row_len;
  const TileLocs locs =
      load_tile<Policy::kThreads, true>(shared, a_all + in1, b_all + in2, va_all + in1,
                                        vb_all + in2, c1, c2);
  __syncthreads();

  auto segment_at = [&](int p, int& diag) {
    const int r = p / row_len;
    diag = p - r * row_len;
    Segment s;
    s.m = row_split[r];
    s.n = row_len - s.m;
    s.mv = row_mv[r];
    s.nv = row_nv[r];
    const int a_row = runs ? r * row_len : r * m;  // element offsets in the loaded ranges
    const int b_row = runs ? a_row + s.m : r * n;
    s.a_loc = locs.key_loc1 + a_row;
    s.b_loc = (runs ? locs.key_loc1 : locs.key_loc2) + b_row;
    s.a_index_base = 0;
    s.b_index_base = s.m;
    s.a_src_base = locs.val_loc1 + a_row;
    s.b_src_base = (runs ? locs.val_loc1 : locs.val_loc2) + b_row;
    s.length = row_len;
    return s;
  };
  Bits key_reg[kItems];
  int src_reg[kItems];
  int32_t index_reg[kItems];
  clear_outputs(key_reg, src_reg, index_reg);
  const int p0 = static_cast<int>(threadIdx.x) * kItems;
  const MergeEnd end = merge_general<kItems, Traits>(
      flip, p0, count, segment_at, [&](int pos) { return keys[pos]; },
      [&](int c, Bits raw, bool from_b, int e, const Segment& s) {
        key_reg[c] = raw;
        src_reg[c] = (from_b ? s.b_src_base : s.a_src_base) + e;
        index_reg[c] = (from_b ? s.b_index_base : s.a_index_base) + e;
      },
      [&](int a_begin) { chain.publish(a_begin); });
  __syncthreads();  // every thread is done reading the keys in shared.stage
  const bool span_broken = chain.breaks_and_keep(end);
  store_tile_outputs(shared, key_reg, src_reg, index_reg,
                     static_cast<Bits*>(call.out) + out_begin,
                     kPayload == PayloadKind::kNone
                         ? nullptr
                         : static_cast<void*>(static_cast<Value*>(call.out_payload) + out_begin),
                     count);
  return __syncthreads_or(span_broken) != 0;
}

template <typename Traits, PayloadKind kPayload, typename Value, typename Policy>
__global__ void __launch_bounds__(Policy::kThreads)  // uncapped: its general merge spills at 32
    merge_packed_kernel(MergeCall call, typename Traits::Bits flip) {
  grid_prologue();
  __shared__ SpanChainWithEnds<Policy::kThreads> chain;
  if (packed_block<Traits, kPayload, Value, Policy>(call, flip, chain)) {
    constexpr int kItems = Policy::kItems;
    const int row_len = static_cast<int>(call.layout.row_length());
    // Thread t's break lies in the row of the next thread's first output (t + 1) * kItems: row
    // r's are those of threads [ceil(r row_len / kItems) - 1, ceil((r + 1) row_len / kItems) - 1).
    auto row_broken = [&](int r) {
      const int first = (r * row_len + kItems - 1) / kItems - 1;
      const int end = ((r + 1) * row_len + kItems - 1) / kItems - 1;
      return chain.any_broken(first < 0 ? 0 : first,
                              end < Policy::kThreads ? end : Policy::kThreads);
    };
    const int64_t per_tile = merge_rows_per_tile(Policy::kTile, row_len);
    const int64_t row0 = int64_t{blockIdx.x} * per_tile;
    const int64_t rows_left = call.layout.rows - row0;
    copy_rows_concatenated<typename Traits::Bits, kPayload, Value, Policy::kThreads>(
        call, row0, static_cast<int>(rows_left < per_tile ? rows_left : per_tile), row_len,
        row_broken);
  }
}

}  // namespace jax_mergepath
