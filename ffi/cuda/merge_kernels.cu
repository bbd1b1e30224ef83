// merge_kernels.cu: the CUDA batched merge (merge_p) on the shared merge-path core.
//
// Two passes per call, both on `stream`, no allocation, no host sync:
//   1. partition (rows longer than a tile only): co_rank of every tile boundary of every row,
//      written to the caller's workspace, (tiles + 1) int32 per row;
//   2. merge: one block per tile. A block loads its tile's A and B ranges into shared memory
//      with coalesced loads, every thread finds its own split by co_rank in shared memory,
//      merges kItems outputs serially into registers, and the block stores them back through
//      shared memory with coalesced stores; indices or values follow the same permutation.
//      Rows no longer than a tile are PACKED: a block merges up to kMaxRowsPerTile whole rows,
//      its threads crossing row boundaries, so a vmap of tiny merges fills the GPU too.
// Invariants: all reads stay inside the block's ranges (unsorted input only reorders);
// in-block positions are int32, global offsets int64.
#include <cuda_runtime.h>

#include "jax_mergepath/merge_path.h"
#include "jax_mergepath/tuning.h"
#include "merge_launch.h"

namespace jax_mergepath {
namespace {

template <typename Traits>
__global__ void partition_kernel(MergeLayout layout, const typename Traits::Bits* a_all,
                                 const typename Traits::Bits* b_all, typename Traits::Bits flip,
                                 int64_t tile, int64_t tiles_per_row, int32_t* splits) {
  using Bits = typename Traits::Bits;
  const int64_t id = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (id >= layout.rows * (tiles_per_row + 1)) return;
  const int64_t row = id / (tiles_per_row + 1), t = id % (tiles_per_row + 1);
  const RowGeometry g = row_geometry(layout, row);
  const Bits* a = a_all + g.a_offset;
  const Bits* b = b_all + g.b_offset;
  auto key_a = [&](int64_t i) { return directed_key<Traits>(__ldg(a + i), flip); };
  auto key_b = [&](int64_t j) { return directed_key<Traits>(__ldg(b + j), flip); };
  const int64_t row_len = g.m + g.n;
  const int64_t k = t * tile < row_len ? t * tile : row_len;
  splits[id] = static_cast<int32_t>(co_rank(k, g.m, g.n, g.mv, g.nv, key_a, key_b));
}

// One merge segment in shared memory: a row (packed) or a row's tile (tiled).
struct Segment {
  int a_loc, b_loc;              // shared-memory positions of its A and B
  int m, n, mv, nv;              // lengths and valid lengths
  int a_index_base, b_index_base;  // row positions of A[0] and B[0] (index payload)
  int length;                    // outputs of the segment (m + n)
};

// Copies [src1, src1 + c1) then [src2, src2 + c2) into dst[0, c1 + c2), coalesced, with
// kItems independent loads in flight per thread.
template <int kThreads, int kItems, typename T>
__device__ __forceinline__ void load_two_ranges(const T* src1, int c1, const T* src2, int c2,
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

// Stores each thread's kItems values (its consecutive outputs) to dst[0, count), coalesced,
// transposing through shared memory `stage` (which the caller may reuse afterwards).
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
}

template <typename Traits, PayloadKind kPayload, typename Value, int kThreads, int kItems>
__global__ void __launch_bounds__(kThreads) merge_kernel(MergeCall call, const int32_t* splits,
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
  const int64_t row_len = layout.row_length();
  const bool packed = merge_rows_are_packed(kTile, row_len);

  // ---- the block's input ranges and output range
  int64_t in1 = 0, in2 = 0, out_base = 0;  // global element offsets
  int c1 = 0, c2 = 0, count = 0;
  int64_t row0 = 0, tile_i0 = 0, tile_j0 = 0;
  int rows_here = 0;
  RowGeometry g{};
  if (packed) {
    const int64_t per_tile = merge_rows_per_tile(kTile, row_len);
    row0 = int64_t{blockIdx.x} * per_tile;
    rows_here = static_cast<int>(layout.rows - row0 < per_tile ? layout.rows - row0 : per_tile);
    for (int r = threadIdx.x; r < rows_here; r += kThreads) {
      const RowGeometry rg = row_geometry(layout, row0 + r);
      row_split[r] = static_cast<int>(rg.m);
      row_mv[r] = static_cast<int>(rg.mv);
      row_nv[r] = static_cast<int>(rg.nv);
    }
    out_base = row0 * row_len;
    count = static_cast<int>(rows_here * row_len);
    if (runs) {
      in1 = row0 * row_len;
      c1 = count;
    } else {
      in1 = row0 * layout.m;
      c1 = static_cast<int>(rows_here * layout.m);
      in2 = row0 * layout.n;
      c2 = static_cast<int>(rows_here * layout.n);
    }
  } else {
    const int64_t tiles_per_row = merge_tiles_per_row(kTile, row_len);
    const int64_t row = blockIdx.x / tiles_per_row, t = blockIdx.x % tiles_per_row;
    g = row_geometry(layout, row);
    const int64_t k0 = t * kTile;
    const int64_t k1 = k0 + kTile < row_len ? k0 + kTile : row_len;
    const int32_t* row_splits = splits + row * (tiles_per_row + 1);
    tile_i0 = row_splits[t];
    const int64_t i1 = clamp_split_end<int64_t>(tile_i0, k0, row_splits[t + 1], k1, g.m, g.n);
    tile_j0 = k0 - tile_i0;
    in1 = g.a_offset + tile_i0;
    c1 = static_cast<int>(i1 - tile_i0);
    in2 = g.b_offset + tile_j0;
    c2 = static_cast<int>((k1 - i1) - tile_j0);
    out_base = g.out_offset + k0;
    count = static_cast<int>(k1 - k0);
  }
  load_two_ranges<kThreads, kItems>(a_all + in1, c1, b_all + in2, c2, keys);
  __syncthreads();

  // ---- the segment holding in-block output position p
  auto segment_at = [&](int p, int& diag) {
    Segment s;
    if (packed) {
      const int r = p / static_cast<int>(row_len);
      diag = p - r * static_cast<int>(row_len);
      s.m = row_split[r];
      s.n = static_cast<int>(row_len) - s.m;
      s.mv = row_mv[r];
      s.nv = row_nv[r];
      s.a_loc = runs ? r * static_cast<int>(row_len) : r * static_cast<int>(layout.m);
      s.b_loc = runs ? s.a_loc + s.m
                     : rows_here * static_cast<int>(layout.m) + r * static_cast<int>(layout.n);
      s.a_index_base = 0;
      s.b_index_base = s.m;
      s.length = static_cast<int>(row_len);
    } else {
      diag = p;
      s.a_loc = 0;
      s.b_loc = c1;
      s.m = c1;
      s.n = c2;
      s.mv = static_cast<int>(clamp_length(g.mv - tile_i0, c1));
      s.nv = static_cast<int>(clamp_length(g.nv - tile_j0, c2));
      s.a_index_base = static_cast<int>(tile_i0);
      s.b_index_base = static_cast<int>(g.m + tile_j0);
      s.length = count;
    }
    return s;
  };

  // ---- per-thread split and serial merge into registers
  const int p0 = static_cast<int>(threadIdx.x) * kItems;
  Bits key_reg[kItems];
  int src_reg[kItems];
  int32_t index_reg[kItems];
  int diag = 0;
  Segment s = segment_at(p0 < count ? p0 : 0, diag);
  auto key_a = [&](int i) { return directed_key<Traits>(keys[s.a_loc + i], flip); };
  auto key_b = [&](int j) { return directed_key<Traits>(keys[s.b_loc + j], flip); };
  int i = co_rank(diag, s.m, s.n, s.mv, s.nv, key_a, key_b);
  int j = diag - i;
#pragma unroll
  for (int c = 0; c < kItems; ++c) {
    if (p0 + c < count) {
      if (diag == s.length) {  // packed rows: continue with the next row
        s = segment_at(p0 + c, diag);
        i = 0;
        j = 0;
      }
      const bool from_b = j < s.n && (i >= s.m || b_first(i, j, s.mv, s.nv, key_a, key_b));
      const int src = from_b ? s.b_loc + j : s.a_loc + i;
      key_reg[c] = keys[src];
      src_reg[c] = src;
      index_reg[c] = from_b ? s.b_index_base + j : s.a_index_base + i;
      i += from_b ? 0 : 1;
      j += from_b ? 1 : 0;
      ++diag;
    } else {
      key_reg[c] = Bits(0);
      src_reg[c] = 0;
      index_reg[c] = 0;
    }
  }
  store_through_shared<kThreads, kItems>(key_reg, keys, static_cast<Bits*>(call.out) + out_base,
                                         count);

  if constexpr (kPayload == PayloadKind::kIndex) {
    store_through_shared<kThreads, kItems>(
        index_reg, reinterpret_cast<int32_t*>(stage_bytes),
        static_cast<int32_t*>(call.out_payload) + out_base, count);
  } else if constexpr (kPayload == PayloadKind::kValue) {
    Value* vals = reinterpret_cast<Value*>(stage_bytes);
    __syncthreads();
    load_two_ranges<kThreads, kItems>(va_all + in1, c1, vb_all + in2, c2, vals);
    __syncthreads();
    Value value_reg[kItems];
#pragma unroll
    for (int c = 0; c < kItems; ++c) value_reg[c] = vals[src_reg[c]];
    store_through_shared<kThreads, kItems>(value_reg, vals,
                                           static_cast<Value*>(call.out_payload) + out_base,
                                           count);
  }
}

template <typename Traits, PayloadKind kPayload, typename Value>
cudaError_t launch(const MergeCall& call, int32_t* workspace, cudaStream_t stream) {
  using Bits = typename Traits::Bits;
  constexpr int kPayloadBytes = kPayload == PayloadKind::kNone ? 0 : int(sizeof(Value));
  using Policy = MergePolicy<int(sizeof(Bits)), kPayloadBytes>;
  const MergeLayout& layout = call.layout;
  const int64_t row_len = layout.row_length();
  if (layout.rows == 0 || row_len == 0) return cudaSuccess;
  const Bits flip = direction_mask<Traits>(call.descending);
  int64_t blocks = 0;
  if (merge_rows_are_packed(Policy::kTile, row_len)) {
    const int64_t per_tile = merge_rows_per_tile(Policy::kTile, row_len);
    blocks = (layout.rows + per_tile - 1) / per_tile;
  } else {
    const int64_t tiles_per_row = merge_tiles_per_row(Policy::kTile, row_len);
    const int64_t boundaries = layout.rows * (tiles_per_row + 1);
    const Bits* a = static_cast<const Bits*>(call.a);
    const Bits* b = layout.mode == RowMode::kRuns ? a : static_cast<const Bits*>(call.b);
    partition_kernel<Traits>
        <<<static_cast<unsigned>((boundaries + kPartitionThreads - 1) / kPartitionThreads),
           kPartitionThreads, 0, stream>>>(layout, a, b, flip, Policy::kTile, tiles_per_row,
                                           workspace);
    if (cudaError_t err = cudaGetLastError(); err != cudaSuccess) return err;
    blocks = layout.rows * tiles_per_row;
  }
  if (blocks >= (int64_t{1} << 31)) return cudaErrorInvalidConfiguration;
  merge_kernel<Traits, kPayload, Value, Policy::kThreads, Policy::kItems>
      <<<static_cast<unsigned>(blocks), Policy::kThreads, 0, stream>>>(call, workspace, flip);
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
