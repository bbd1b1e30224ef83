// merge_kernels.cu: the CUDA batched merge (merge_p) on the shared merge-path core.
//
// Rows longer than a tile ("tiled"): two kernels on `stream`, no allocation, no host sync:
//   1. partition: co_rank of every tile boundary of every row into the caller's workspace,
//      (tiles + 1) int32 per row; a warp (32-ary search) or a thread (binary search) each;
//   2. merge: one block per tile loads the tile's exact A and B ranges into shared memory
//      (coalesced, kItems loads in flight per thread), every thread finds its split by co_rank
//      in shared memory and merges kItems outputs serially into registers, and the block
//      stores them back through shared memory, coalesced; indices or values follow.
// Rows no longer than a tile ("packed"): one kernel; a block merges up to kMaxRowsPerTile whole
// rows, its threads crossing row boundaries, so a vmap of tiny merges fills the GPU too.
// Invariants: all reads stay inside the block's ranges (unsorted input only reorders);
// in-block positions are int32, global offsets int64. NOTES.md has what was measured and tried.
#include <cuda_runtime.h>

#include "jax_mergepath/merge_path.h"
#include "jax_mergepath/tuning.h"
#include "merge_launch.h"

namespace jax_mergepath {
namespace {

// ------------------------------------------------------------------ partition

// co_rank(k) of one row by a whole warp: a 32-ary search (32 probes a step, ~6 dependent steps
// for 2^27 instead of 27) for the smallest i in [lo, hi) with b_first(i, k - 1 - i), else hi:
// the same split as co_rank's binary search for sorted input. All lanes return it.
template <typename KeyA, typename KeyB>
__device__ int64_t warp_co_rank(int64_t k, int64_t m, int64_t n, int64_t mv, int64_t nv,
                                const KeyA& key_a, const KeyB& key_b) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  int64_t lo = co_rank_lower(k, n);
  int64_t hi = co_rank_upper(k, m);
  while (lo < hi) {
    const int64_t step = (hi - lo + 31) / 32;
    const int64_t probe = lo + lane * step;
    const bool in_range = probe < hi;
    const bool hit = in_range && b_first(probe, k - 1 - probe, mv, nv, key_a, key_b);
    const unsigned hits = __ballot_sync(0xffffffffu, hit);
    const unsigned probed = __ballot_sync(0xffffffffu, in_range);
    if (hits) {
      const int first = __ffs(hits) - 1;
      hi = lo + first * step;
      lo = first > 0 ? lo + (first - 1) * step + 1 : lo;
    } else {
      lo = lo + (31 - __clz(probed)) * step + 1;
    }
  }
  return lo;
}

// Partition: one thread (binary search) or one warp (32-ary search) per tile boundary. Few
// boundaries: warps cut the latency (~6 dependent steps instead of ~27). Many boundaries: the
// search is bound by random DRAM reads, and a thread each reads 16x less.
template <typename Traits, bool kWarpSearch>
__global__ void partition_kernel(MergeLayout layout, const typename Traits::Bits* a_all,
                                 const typename Traits::Bits* b_all, typename Traits::Bits flip,
                                 int64_t tile, int64_t tiles_per_row, int32_t* splits) {
  using Bits = typename Traits::Bits;
  const int64_t thread = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  const int64_t id = kWarpSearch ? thread >> 5 : thread;
  if (id >= layout.rows * (tiles_per_row + 1)) return;  // (whole warps exit together)
  const int64_t row = id / (tiles_per_row + 1), t = id % (tiles_per_row + 1);
  const RowGeometry g = row_geometry(layout, row);
  const Bits* a = a_all + g.a_offset;
  const Bits* b = b_all + g.b_offset;
  auto key_a = [&](int64_t i) { return directed_key<Traits>(__ldg(a + i), flip); };
  auto key_b = [&](int64_t j) { return directed_key<Traits>(__ldg(b + j), flip); };
  const int64_t k = t * tile < g.m + g.n ? t * tile : g.m + g.n;
  if constexpr (kWarpSearch) {
    const int64_t split = warp_co_rank(k, g.m, g.n, g.mv, g.nv, key_a, key_b);
    if ((threadIdx.x & 31) == 0) splits[id] = static_cast<int32_t>(split);
  } else {
    splits[id] = static_cast<int32_t>(co_rank(k, g.m, g.n, g.mv, g.nv, key_a, key_b));
  }
}

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

// Stores each thread's kItems values (its consecutive outputs) to dst[0, count), coalesced,
// transposing through shared memory `stage`. Starts and ends with a barrier.
template <int kThreads, int kItems, typename T>
__device__ __forceinline__ void store_through_shared(const T (&reg)[kItems], T* stage, T* dst,
                                                     int count) {
  __syncthreads();
#pragma unroll
  for (int c = 0; c < kItems; ++c) stage[threadIdx.x * kItems + c] = reg[c];
  __syncthreads();
#pragma unroll
  for (int s = 0; s < kItems; ++s) {
    const int p = s * kThreads + static_cast<int>(threadIdx.x);
    if (p < count) dst[p] = stage[p];
  }
  __syncthreads();
}

// Copies [src1, src1 + c1) then [src2, src2 + c2) into dst[0, c1 + c2) <= kThreads * kItems,
// coalesced, with kItems independent loads in flight per thread.
template <int kThreads, int kItems, typename T>
__device__ __forceinline__ void copy_two_ranges(const T* src1, int c1, const T* src2, int c2,
                                                T* dst) {
  T reg[kItems];
#pragma unroll
  for (int s = 0; s < kItems; ++s) {
    const int p = s * kThreads + static_cast<int>(threadIdx.x);
    reg[s] = p < c1 ? __ldg(src1 + p) : (p < c1 + c2 ? __ldg(src2 + (p - c1)) : T(0));
  }
#pragma unroll
  for (int s = 0; s < kItems; ++s) {
    const int p = s * kThreads + static_cast<int>(threadIdx.x);
    if (p < c1 + c2) dst[p] = reg[s];
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
  const int64_t row = tile_id / tiles_per_row, t = tile_id % tiles_per_row;
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

// One block per tile: load the tile's exact A and B ranges, merge, store.
template <typename Traits, PayloadKind kPayload, typename Value, int kThreads, int kItems>
__global__ void __launch_bounds__(kThreads)
    merge_tiled_kernel(MergeCall call, const int32_t* splits, typename Traits::Bits flip,
                       int64_t tiles_per_row) {
  using Bits = typename Traits::Bits;
  constexpr int kTile = kThreads * kItems;
  constexpr int kStageBytes =
      kTile * int(sizeof(Bits) > 4 || kPayload != PayloadKind::kIndex ? sizeof(Bits) : 4);
  __shared__ __align__(16) unsigned char key_stage[kStageBytes];
  __shared__ __align__(16) Value vals[kPayload == PayloadKind::kValue ? kTile : 1];
  Bits* keys = reinterpret_cast<Bits*>(key_stage);
  const bool runs = call.layout.mode == RowMode::kRuns;
  const Bits* a_all = static_cast<const Bits*>(call.a);
  const Bits* b_all = static_cast<const Bits*>(runs ? call.a : call.b);
  const TileRanges r = tile_ranges(call.layout, splits, blockIdx.x, kTile, tiles_per_row);
  const int count = r.a_count + r.b_count;
  copy_two_ranges<kThreads, kItems>(a_all + r.a_begin, r.a_count, b_all + r.b_begin, r.b_count,
                                    keys);
  __syncthreads();
  auto segment_at = [&](int p, int& diag) {
    diag = p;
    return Segment{0, r.a_count, r.a_count, r.b_count, r.mv, r.nv, r.a_index_base,
                   r.b_index_base, 0, r.a_count, count};
  };
  Bits key_reg[kItems];
  int src_reg[kItems];
  int32_t index_reg[kItems];
  merge_items<Traits, kItems>(flip, static_cast<int>(threadIdx.x) * kItems, count, segment_at,
                              [&](int pos) { return keys[pos]; }, key_reg, src_reg, index_reg);
  store_through_shared<kThreads, kItems>(key_reg, keys,
                                         static_cast<Bits*>(call.out) + r.out_begin, count);
  if constexpr (kPayload == PayloadKind::kIndex) {
    store_through_shared<kThreads, kItems>(index_reg, reinterpret_cast<int32_t*>(key_stage),
                                           static_cast<int32_t*>(call.out_payload) + r.out_begin,
                                           count);
  } else if constexpr (kPayload == PayloadKind::kValue) {
    const Value* va_all = static_cast<const Value*>(call.a_values);
    const Value* vb_all = static_cast<const Value*>(runs ? call.a_values : call.b_values);
    copy_two_ranges<kThreads, kItems>(va_all + r.a_begin, r.a_count, vb_all + r.b_begin,
                                      r.b_count, vals);
    __syncthreads();
    Value value_reg[kItems];
#pragma unroll
    for (int c = 0; c < kItems; ++c) value_reg[c] = vals[src_reg[c]];
    store_through_shared<kThreads, kItems>(
        value_reg, vals, static_cast<Value*>(call.out_payload) + r.out_begin, count);
  }
}

// ------------------------------------------------------------------ packed (short rows)

template <typename Traits, PayloadKind kPayload, typename Value, int kThreads, int kItems>
__global__ void __launch_bounds__(kThreads) merge_packed_kernel(MergeCall call,
                                                                typename Traits::Bits flip) {
  using Bits = typename Traits::Bits;
  constexpr int kTile = kThreads * kItems;
  constexpr int kStageBytes =
      kTile * (sizeof(Bits) > sizeof(Value) ? sizeof(Bits) : sizeof(Value));
  __shared__ __align__(16) unsigned char stage_bytes[kStageBytes > 4 * kTile ? kStageBytes
                                                                              : 4 * kTile];
  __shared__ int row_split[kMaxRowsPerTile], row_mv[kMaxRowsPerTile], row_nv[kMaxRowsPerTile];
  Bits* keys = reinterpret_cast<Bits*>(stage_bytes);

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
  copy_two_ranges<kThreads, kItems>(a_all + in1, c1, b_all + in2, c2, keys);
  __syncthreads();

  auto segment_at = [&](int p, int& diag) {
    const int r = p / row_len;
    diag = p - r * row_len;
    Segment s;
    s.m = row_split[r];
    s.n = row_len - s.m;
    s.mv = row_mv[r];
    s.nv = row_nv[r];
    s.a_loc = runs ? r * row_len : r * m;
    s.b_loc = runs ? s.a_loc + s.m : rows_here * m + r * n;
    s.a_index_base = 0;
    s.b_index_base = s.m;
    s.a_src_base = s.a_loc;
    s.b_src_base = s.b_loc;
    s.length = row_len;
    return s;
  };
  Bits key_reg[kItems];
  int src_reg[kItems];
  int32_t index_reg[kItems];
  merge_items<Traits, kItems>(flip, static_cast<int>(threadIdx.x) * kItems, count, segment_at,
                              [&](int pos) { return keys[pos]; }, key_reg, src_reg, index_reg);
  store_through_shared<kThreads, kItems>(key_reg, keys, static_cast<Bits*>(call.out) + out_begin,
                                         count);
  if constexpr (kPayload == PayloadKind::kIndex) {
    store_through_shared<kThreads, kItems>(
        index_reg, reinterpret_cast<int32_t*>(stage_bytes),
        static_cast<int32_t*>(call.out_payload) + out_begin, count);
  } else if constexpr (kPayload == PayloadKind::kValue) {
    Value* vals = reinterpret_cast<Value*>(stage_bytes);
    copy_two_ranges<kThreads, kItems>(va_all + in1, c1, vb_all + in2, c2, vals);
    __syncthreads();
    Value value_reg[kItems];
#pragma unroll
    for (int c = 0; c < kItems; ++c) value_reg[c] = vals[src_reg[c]];
    store_through_shared<kThreads, kItems>(value_reg, vals,
                                           static_cast<Value*>(call.out_payload) + out_begin,
                                           count);
  }
}

// ------------------------------------------------------------------ launch

// Up to this many tile boundaries, the partition searches with a warp per boundary.
inline constexpr int64_t kWarpSearchMaxBoundaries = 4096;

template <typename Traits, PayloadKind kPayload, typename Value>
cudaError_t launch(const MergeCall& call, int32_t* workspace, cudaStream_t stream) {
  using Bits = typename Traits::Bits;
  constexpr int kPayloadBytes = kPayload == PayloadKind::kNone ? 0 : int(sizeof(Value));
  using Policy = MergePolicy<int(sizeof(Bits)), kPayloadBytes>;
  constexpr int kTile = static_cast<int>(Policy::kTile);
  const MergeLayout& layout = call.layout;
  const int64_t row_len = layout.row_length();
  if (layout.rows == 0 || row_len == 0) return cudaSuccess;
  const Bits flip = direction_mask<Traits>(call.descending);
  if (merge_rows_are_packed(kTile, row_len)) {
    const int64_t per_tile = merge_rows_per_tile(kTile, row_len);
    const int64_t blocks = (layout.rows + per_tile - 1) / per_tile;
    if (blocks >= (int64_t{1} << 31)) return cudaErrorInvalidConfiguration;
    merge_packed_kernel<Traits, kPayload, Value, Policy::kThreads, Policy::kItems>
        <<<static_cast<unsigned>(blocks), Policy::kThreads, 0, stream>>>(call, flip);
    return cudaGetLastError();
  }
  const int64_t tiles_per_row = merge_tiles_per_row(kTile, row_len);
  const int64_t num_tiles = layout.rows * tiles_per_row;

  const int64_t boundaries = layout.rows * (tiles_per_row + 1);
  const Bits* a = static_cast<const Bits*>(call.a);
  const Bits* b = layout.mode == RowMode::kRuns ? a : static_cast<const Bits*>(call.b);
  const bool warp_search = boundaries <= kWarpSearchMaxBoundaries;
  const int64_t per_block = warp_search ? kPartitionThreads / 32 : kPartitionThreads;
  const int64_t partition_blocks = (boundaries + per_block - 1) / per_block;
  if (partition_blocks >= (int64_t{1} << 31) || num_tiles >= (int64_t{1} << 31)) {
    return cudaErrorInvalidConfiguration;
  }
  const unsigned pgrid = static_cast<unsigned>(partition_blocks);
  if (warp_search) {
    partition_kernel<Traits, true><<<pgrid, kPartitionThreads, 0, stream>>>(
        layout, a, b, flip, kTile, tiles_per_row, workspace);
  } else {
    partition_kernel<Traits, false><<<pgrid, kPartitionThreads, 0, stream>>>(
        layout, a, b, flip, kTile, tiles_per_row, workspace);
  }
  if (cudaError_t err = cudaGetLastError(); err != cudaSuccess) return err;
  merge_tiled_kernel<Traits, kPayload, Value, Policy::kThreads, Policy::kItems>
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
