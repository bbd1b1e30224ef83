// merge_kernels.cu: the CUDA batched merge (merge_p) on the shared merge-path core.
//
// Rows longer than a tile ("tiled"), on `stream`, no allocation, no host sync:
//   1. partition (partition.cuh): co_rank of every tile boundary of every row into the caller's
//      workspace, (tiles + 1) int32 per row;
//   2. merge: one block per tile loads the tile's exact A and B ranges into shared memory
//      (tile_io.cuh: 16-byte loads), every thread finds its split by co_rank in shared memory
//      and merges kItems outputs serially into registers (branch-free when the tile has no
//      ragged tail), and each warp stores its outputs through shared memory, coalesced;
//      indices or values follow.
// Rows no longer than a tile ("packed"): one kernel; a block merges up to kMaxRowsPerTile whole
// rows, its threads crossing row boundaries, so a vmap of tiny merges fills the GPU too.
// Invariants: all reads stay inside the block's ranges (unsorted input only reorders);
// in-block positions are int32, global offsets int64. NOTES.md has what was measured and tried.
#include <cuda_runtime.h>

#include <algorithm>

#include "jax_mergepath/merge_path.h"
#include "jax_mergepath/tuning.h"
#include "merge_launch.h"
#include "partition.cuh"
#include "tile_io.cuh"

namespace jax_mergepath {
namespace {

// ------------------------------------------------------------------ shared pieces

// One merge segment in shared memory: a row (packed) or a row's tile (tiled).
struct Segment {
  int a_loc, b_loc;                // shared-memory positions of its A[0] and B[0]
  int m, n, mv, nv;                // lengths and valid lengths
  int a_index_base, b_index_base;  // row positions of A[0] and B[0] (index payload)
  int a_src_base, b_src_base;      // value-staging positions of A[0] and B[0] (value payload)
  int length;                      // outputs of the segment (m + n)
};

// The thread's kItems consecutive outputs starting at in-block position p0 (< count).
// segment_at(p, diag) gives the segment holding output p and p's diagonal in it; a thread moves
// to the next segment when it reaches a segment's end (packed rows). load(pos) reads the key
// bits at shared position s.a_loc + i or s.b_loc + j.
template <typename Traits, int kItems, typename SegmentAt, typename Load>
__device__ __forceinline__ void merge_items(typename Traits::Bits flip, int p0, int count,
                                            const SegmentAt& segment_at, const Load& load,
                                            typename Traits::Bits (&key_reg)[kItems],
                                            int (&src_reg)[kItems],
                                            int32_t (&index_reg)[kItems]) {
  using Bits = typename Traits::Bits;
  int diag = 0;
  Segment s = segment_at(p0 < count ? p0 : 0, diag);
  auto key_a = [&](int i) { return directed_key<Traits>(load(s.a_loc + i), flip); };
  auto key_b = [&](int j) { return directed_key<Traits>(load(s.b_loc + j), flip); };
  int i = co_rank(diag, s.m, s.n, s.mv, s.nv, key_a, key_b);
  int j = diag - i;
  // A[i] and B[j] (raw bits and order keys) stay in registers: an output costs one
  // shared-memory load, of the side that advanced, and one order-key transform.
  Bits raw_a = Bits(0), raw_b = Bits(0), ord_a = Bits(0), ord_b = Bits(0);
  auto fetch_both = [&]() {
    raw_a = i < s.m ? load(s.a_loc + i) : Bits(0);
    raw_b = j < s.n ? load(s.b_loc + j) : Bits(0);
    ord_a = directed_key<Traits>(raw_a, flip);
    ord_b = directed_key<Traits>(raw_b, flip);
  };
  fetch_both();
#pragma unroll
  for (int c = 0; c < kItems; ++c) {
    if (p0 + c < count) {
      if (diag == s.length) {  // packed rows: continue with the next row
        s = segment_at(p0 + c, diag);
        i = 0;
        j = 0;
        fetch_both();
      }
      // b_first(i, j), on the cached keys
      const bool from_b =
          j < s.n && (i >= s.m || (j < s.nv && (i >= s.mv || ord_b < ord_a)));
      key_reg[c] = from_b ? raw_b : raw_a;
      src_reg[c] = from_b ? s.b_src_base + j : s.a_src_base + i;
      index_reg[c] = from_b ? s.b_index_base + j : s.a_index_base + i;
      i += from_b ? 0 : 1;
      j += from_b ? 1 : 0;
      ++diag;
      const bool more = from_b ? j < s.n : i < s.m;
      const Bits raw = more ? load(from_b ? s.b_loc + j : s.a_loc + i) : Bits(0);
      const Bits ord = directed_key<Traits>(raw, flip);
      raw_a = from_b ? raw_a : raw;
      ord_a = from_b ? ord_a : ord;
      raw_b = from_b ? raw : raw_b;
      ord_b = from_b ? ord : ord_b;
    } else {
      key_reg[c] = Bits(0);
      src_reg[c] = 0;
      index_reg[c] = 0;
    }
  }
}

// Shared-memory layout of a merge block: `stage` holds the tile's keys (as load_two_ranges places
// them) and later every warp's output transposes; `vals` holds the tile's values (kValue only).
template <PayloadKind kPayload, typename Bits, typename Value, int kThreads, int kItems>
struct MergeShared {
  static constexpr int kTile = kThreads * kItems;
  static constexpr int kValueSlots = kPayload == PayloadKind::kValue ? kSharedSlots<Value, kTile> : 1;
  static constexpr int kElemBytes = std::max({int(sizeof(Bits)),
                                              kPayload == PayloadKind::kIndex ? 4 : 0,
                                              kPayload == PayloadKind::kValue ? int(sizeof(Value)) : 0});
  static constexpr int kRegionBytes = 32 * kItems * kElemBytes;  // one warp's transpose
  static constexpr int kStageBytes =
      std::max(kSharedSlots<Bits, kTile> * int(sizeof(Bits)), kTile * kElemBytes);
  alignas(16) unsigned char stage[(kStageBytes + 15) / 16 * 16];
  alignas(16) Value vals[kValueSlots];
  __device__ Bits* keys() { return reinterpret_cast<Bits*>(stage); }
};

// Where a block's two input ranges sit in shared memory: keys at key_loc1 / key_loc2, values at
// val_loc1 / val_loc2 (kValue only).
struct TileLocs {
  int key_loc1 = 0, key_loc2 = 0, val_loc1 = 0, val_loc2 = 0;
};

// Loads a block's two input ranges (keys, and values when the payload is kValue) into shared
// memory, values first. (The compiled kernels with values, under their register cap, store the
// values before issuing the key loads: two round trips a tile, not one; NOTES.md.)
template <int kThreads, PayloadKind kPayload, typename Bits, typename Value, int kItems>
__device__ __forceinline__ TileLocs load_tile(
    MergeShared<kPayload, Bits, Value, kThreads, kItems>& shared, const Bits* keys1,
    const Bits* keys2, const Value* vals1, const Value* vals2, int c1, int c2) {
  constexpr int kTile = kThreads * kItems;
  TileLocs locs;
  if constexpr (kPayload == PayloadKind::kValue) {
    load_two_ranges<kThreads, kTile>(vals1, c1, vals2, c2, shared.vals, locs.val_loc1,
                                     locs.val_loc2);
  }
  load_two_ranges<kThreads, kTile>(keys1, c1, keys2, c2, shared.keys(), locs.key_loc1,
                                   locs.key_loc2);
  return locs;
}

// The block's outputs: keys, then the payload (indices, or values gathered from `vals` at the
// value positions in src_reg). Call after a barrier that ends every read of the keys in `stage`.
template <PayloadKind kPayload, typename Bits, typename Value, int kThreads, int kItems>
__device__ __forceinline__ void store_tile_outputs(
    MergeShared<kPayload, Bits, Value, kThreads, kItems>& shared, const Bits (&key_reg)[kItems],
    const int (&src_reg)[kItems], const int32_t (&index_reg)[kItems], Bits* out,
    void* out_payload, int count) {
  constexpr int kRegion = MergeShared<kPayload, Bits, Value, kThreads, kItems>::kRegionBytes;
  store_warp_striped<kItems, kRegion>(key_reg, shared.stage, out, count);
  if constexpr (kPayload == PayloadKind::kIndex) {
    store_warp_striped<kItems, kRegion>(index_reg, shared.stage,
                                        static_cast<int32_t*>(out_payload), count);
  } else if constexpr (kPayload == PayloadKind::kValue) {
    Value value_reg[kItems];
#pragma unroll
    for (int c = 0; c < kItems; ++c) value_reg[c] = shared.vals[src_reg[c]];
    store_warp_striped<kItems, kRegion>(value_reg, shared.stage, static_cast<Value*>(out_payload),
                                        count);
  }
}

// A thread's kItems consecutive outputs from diagonal `diag` of a tile whose A (m keys) sits at
// shared position a_loc and B (n keys) at b_loc >= a_loc + m, every key valid (no ragged tail
// inside the tile). key_reg gets the raw bits, pos_reg each output's shared position. The step is
// branch-free: the next key always comes from pos + 1, the successor on the side just taken
// (past a side's end it reads a gap or spare slot, never used), so reads stay inside the
// kSharedSlots of load_two_ranges whatever the input (i + j = output position < kTile).
template <typename Traits, int kItems>
__device__ __forceinline__ void merge_thread_full(const typename Traits::Bits* keys, int a_loc,
                                                  int m, int b_loc, int n, int diag,
                                                  typename Traits::Bits flip,
                                                  typename Traits::Bits (&key_reg)[kItems],
                                                  int (&pos_reg)[kItems]) {
  using Bits = typename Traits::Bits;
  auto order = [&](Bits raw) { return directed_key<Traits>(raw, flip); };
  const Bits* a = keys + a_loc;
  const Bits* b_diag = keys + b_loc + diag - 1;  // B[diag - 1 - mid] = b_diag[-mid]
  int lo = diag > n ? diag - n : 0;
  int hi = diag < m ? diag : m;
  while (lo < hi) {  // co_rank: the first mid whose A[mid] comes after B[diag - 1 - mid]
    const int mid = (lo + hi) >> 1;
    const bool b_before = order(b_diag[-mid]) < order(a[mid]);
    hi = b_before ? mid : hi;
    lo = b_before ? lo : mid + 1;
  }
  int i = lo, j = diag - lo;
  Bits raw_a = a[i], raw_b = keys[b_loc + j];
  Bits ord_a = order(raw_a), ord_b = order(raw_b);
#pragma unroll
  for (int c = 0; c < kItems; ++c) {
    const bool from_b = (j < n) & ((i >= m) | (ord_b < ord_a));
    const int pos = from_b ? b_loc + j : a_loc + i;
    key_reg[c] = from_b ? raw_b : raw_a;
    pos_reg[c] = pos;
    i += from_b ? 0 : 1;
    j += from_b ? 1 : 0;
    const Bits raw = keys[pos + 1];
    const Bits ord = order(raw);
    raw_a = from_b ? raw_a : raw;
    ord_a = from_b ? ord_a : ord;
    raw_b = from_b ? raw : raw_b;
    ord_b = from_b ? ord : ord_b;
  }
}

// ------------------------------------------------------------------ tiled (long rows, few tiles)

// Where one tile of a long row reads and writes, from the partition pass's splits.
struct TileRanges {
  int64_t a_begin, b_begin, out_begin;  // global element offsets
  int a_count, b_count;
  int a_index_base, b_index_base;  // row positions of the first A / B element
  int mv, nv;                      // valid lengths inside the tile
};

__device__ __forceinline__ TileRanges tile_ranges(const MergeLayout& layout,
                                                  const int32_t* splits, int64_t tile_id,
                                                  int64_t tile, int64_t tiles_per_row) {
  // Both fit 32 bits (the launch checks tiles < 2^31): a 32-bit division is ~5x cheaper.
  const uint32_t row32 = static_cast<uint32_t>(tile_id) / static_cast<uint32_t>(tiles_per_row);
  const int64_t row = row32, t = tile_id - int64_t{row32} * tiles_per_row;
  const RowGeometry g = row_geometry(layout, row);
  const int64_t row_len = g.m + g.n;
  const int64_t k0 = t * tile;
  const int64_t k1 = k0 + tile < row_len ? k0 + tile : row_len;
  const int32_t* row_splits = splits + row * (tiles_per_row + 1);
  const int64_t i0 = row_splits[t];
  const int64_t i1 = clamp_split_end<int64_t>(i0, k0, row_splits[t + 1], k1, g.m, g.n);
  const int64_t j0 = k0 - i0;
  TileRanges r;
  r.a_begin = g.a_offset + i0;
  r.b_begin = g.b_offset + j0;
  r.out_begin = g.out_offset + k0;
  r.a_count = static_cast<int>(i1 - i0);
  r.b_count = static_cast<int>((k1 - i1) - j0);
  r.a_index_base = static_cast<int>(i0);
  r.b_index_base = static_cast<int>(g.m + j0);
  r.mv = static_cast<int>(clamp_length(g.mv - i0, r.a_count));
  r.nv = static_cast<int>(clamp_length(g.nv - j0, r.b_count));
  return r;
}

// One block per tile: load the tile's exact A and B ranges, merge, store. Tiles without a ragged
// tail inside them (every tile of a full-length merge) take the branch-free thread merge.
template <typename Traits, PayloadKind kPayload, typename Value, typename Policy>
__global__ void __launch_bounds__(Policy::kThreads, Policy::kMinBlocks)
    merge_tiled_kernel(MergeCall call, const int32_t* splits, typename Traits::Bits flip,
                       int64_t tiles_per_row) {
  using Bits = typename Traits::Bits;
  constexpr int kThreads = Policy::kThreads, kItems = Policy::kItems, kTile = kThreads * kItems;
  __shared__ MergeShared<kPayload, Bits, Value, kThreads, kItems> shared;
  Bits* keys = shared.keys();
  const bool runs = call.layout.mode == RowMode::kRuns;
  const Bits* a_all = static_cast<const Bits*>(call.a);
  const Bits* b_all = static_cast<const Bits*>(runs ? call.a : call.b);
  const Value* va_all = static_cast<const Value*>(call.a_values);
  const Value* vb_all = static_cast<const Value*>(runs ? call.a_values : call.b_values);
  const TileRanges r = tile_ranges(call.layout, splits, blockIdx.x, kTile, tiles_per_row);
  const int count = r.a_count + r.b_count;
  const TileLocs locs = load_tile(shared, a_all + r.a_begin, b_all + r.b_begin,
                                  va_all + r.a_begin, vb_all + r.b_begin, r.a_count, r.b_count);
  __syncthreads();
  Bits key_reg[kItems];
  int src_reg[kItems];
  int32_t index_reg[kItems];
  const int p0 = static_cast<int>(threadIdx.x) * kItems;
  if (r.mv == r.a_count && r.nv == r.b_count) {
    int pos_reg[kItems];
    merge_thread_full<Traits, kItems>(keys, locs.key_loc1, r.a_count, locs.key_loc2, r.b_count,
                                      p0, flip, key_reg, pos_reg);
#pragma unroll
    for (int c = 0; c < kItems; ++c) {  // key position -> row index and value position
      const bool from_b = pos_reg[c] >= locs.key_loc2;
      const int e = pos_reg[c] - (from_b ? locs.key_loc2 : locs.key_loc1);
      // (unsigned: outputs past `count` are never stored and may wrap near 2^31)
      index_reg[c] = static_cast<int32_t>(static_cast<uint32_t>(e) +
                                          static_cast<uint32_t>(from_b ? r.b_index_base
                                                                       : r.a_index_base));
      src_reg[c] = e + (from_b ? locs.val_loc2 : locs.val_loc1);
    }
  } else {
    auto segment_at = [&](int p, int& diag) {
      diag = p;
      return Segment{locs.key_loc1, locs.key_loc2, r.a_count, r.b_count, r.mv, r.nv,
                     r.a_index_base, r.b_index_base, locs.val_loc1, locs.val_loc2, count};
    };
    merge_items<Traits, kItems>(flip, p0, count, segment_at, [&](int pos) { return keys[pos]; },
                                key_reg, src_reg, index_reg);
  }
  __syncthreads();  // every thread is done reading the keys in shared.stage
  store_tile_outputs(shared, key_reg, src_reg, index_reg,
                     static_cast<Bits*>(call.out) + r.out_begin,
                     kPayload == PayloadKind::kNone
                         ? nullptr
                         : static_cast<void*>(static_cast<Value*>(call.out_payload) + r.out_begin),
                     count);
}

// ------------------------------------------------------------------ packed (short rows)

template <typename Traits, PayloadKind kPayload, typename Value, typename Policy>
__global__ void __launch_bounds__(Policy::kThreads)  // uncapped: its general merge spills at 32
    merge_packed_kernel(MergeCall call, typename Traits::Bits flip) {
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
      load_tile(shared, a_all + in1, b_all + in2, va_all + in1, vb_all + in2, c1, c2);
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
  merge_items<Traits, kItems>(flip, static_cast<int>(threadIdx.x) * kItems, count, segment_at,
                              [&](int pos) { return keys[pos]; }, key_reg, src_reg, index_reg);
  __syncthreads();  // every thread is done reading the keys in shared.stage
  store_tile_outputs(shared, key_reg, src_reg, index_reg,
                     static_cast<Bits*>(call.out) + out_begin,
                     kPayload == PayloadKind::kNone
                         ? nullptr
                         : static_cast<void*>(static_cast<Value*>(call.out_payload) + out_begin),
                     count);
}

// ------------------------------------------------------------------ launch

// The merge's default tile policy for a key type and payload (tuning.h).
template <typename Traits, PayloadKind kPayload, typename Value>
using DefaultPolicy =
    MergePolicy<int(sizeof(typename Traits::Bits)),
                kPayload == PayloadKind::kNone ? 0 : int(sizeof(Value))>;

// Enqueues one merge with the tile policy `Policy` (kThreads, kItems, kTile, kMinBlocks); the
// workspace holds merge_workspace_elements() int32 for Policy's tile.
template <typename Traits, PayloadKind kPayload, typename Value,
          typename Policy = DefaultPolicy<Traits, kPayload, Value>>
cudaError_t launch(const MergeCall& call, int32_t* workspace, cudaStream_t stream) {
  using Bits = typename Traits::Bits;
  constexpr int kTile = static_cast<int>(Policy::kTile);
  const MergeLayout& layout = call.layout;
  const int64_t row_len = layout.row_length();
  if (layout.rows == 0 || row_len == 0) return cudaSuccess;
  const Bits flip = direction_mask<Traits>(call.descending);
  if (merge_rows_are_packed(kTile, row_len)) {
    const int64_t per_tile = merge_rows_per_tile(kTile, row_len);
    const int64_t blocks = (layout.rows + per_tile - 1) / per_tile;
    if (blocks >= (int64_t{1} << 31)) return cudaErrorInvalidConfiguration;
    merge_packed_kernel<Traits, kPayload, Value, Policy>
        <<<static_cast<unsigned>(blocks), Policy::kThreads, 0, stream>>>(call, flip);
    return cudaGetLastError();
  }
  const int64_t tiles_per_row = merge_tiles_per_row(kTile, row_len);
  const int64_t num_tiles = layout.rows * tiles_per_row;
  if (num_tiles >= (int64_t{1} << 31)) return cudaErrorInvalidConfiguration;
  if (cudaError_t err = launch_partition<Traits>(call, kTile, workspace, stream);
      err != cudaSuccess) {
    return err;
  }
  merge_tiled_kernel<Traits, kPayload, Value, Policy>
      <<<static_cast<unsigned>(num_tiles), Policy::kThreads, 0, stream>>>(call, workspace, flip,
                                                                           tiles_per_row);
  return cudaGetLastError();
}

}  // namespace

cudaError_t merge_cuda(const MergeCall& call, int32_t* workspace, cudaStream_t stream) {
  return visit_key_type(call.key_type, [&](auto traits) -> cudaError_t {
    using Traits = decltype(traits);
    switch (call.payload) {
      case PayloadKind::kIndex:
        return launch<Traits, PayloadKind::kIndex, int32_t>(call, workspace, stream);
      case PayloadKind::kValue:
        return visit_payload_bits(call.value_bytes, [&](auto value) {
          return launch<Traits, PayloadKind::kValue, decltype(value)>(call, workspace, stream);
        });
      case PayloadKind::kNone:
      default:
        return launch<Traits, PayloadKind::kNone, uint8_t>(call, workspace, stream);
    }
  });
}

}  // namespace jax_mergepath
