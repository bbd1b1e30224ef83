// tile_io.cuh (level: block): a merge block's global <-> shared-memory traffic, in as few
// instructions as the data allows (the merge kernels are bound by instruction issue, not only by
// DRAM).
//
//   * load_two_ranges: copies two arbitrary ranges of global memory into shared memory, 16
//     bytes a load for each range's 16-byte-aligned interior and one element a load for its
//     unaligned head and tail. A range is placed at the same address modulo 16 as in global
//     memory, so its shared position ("loc") is the first free 16-byte boundary plus its
//     misalignment; the caller reads element e of range r at loc_r + e.
//   * load_ranges_packed (the quad merge with values or 8-byte keys): any number of ranges of
//     one array, one element a load, packed one after the other in shared memory;
//   * load_ranges_chunked (the quad merge of 4-byte keys alone): any number of ranges of one
//     array, each at its source's alignment modulo 16, 16 bytes a load for the interiors.
//   * store_warp_striped: each warp transposes its threads' consecutive outputs through its own
//     part of shared memory (only __syncwarp), then stores them coalesced: 16 bytes a store when
//     the destination is 16-byte aligned and the warp's outputs are all in range, else one
//     element a store;
//   * store_block_staged: a block's contiguous output staged in shared memory, stored with
//     16-byte stores (rows merged by thread groups, whose outputs are not thread-striped).
//   * load_rows_strided / store_rows_strided: whole rows of a block, 16 bytes a copy, each row
//     at its own stride in shared memory (strided_row_stride: rows on different banks).
// Invariants: every global read is inside [src, src + count) of its range; every shared write
// is inside the buffer sizes given by kSharedSlots (load_two_ranges) or the ranges' total count
// (load_ranges_packed) or the counts plus kChunkedSlack a range (load_ranges_chunked) or rows x
// stride (load_rows_strided, which its callers check against their buffer); nothing
// here synchronizes the whole block.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace jax_mergepath {

// Elements of T in 16 bytes (1 for types wider than 16 bytes, which we do not have).
template <typename T>
inline constexpr int kPerVector = 16 / int(sizeof(T)) > 0 ? 16 / int(sizeof(T)) : 1;

// Shared-memory slots that load_two_ranges may use for kTile elements: the first range's
// misalignment, the gap to the second range's 16-byte boundary and its misalignment (each under
// 16 bytes), and room for the merge's one read past the last element.
template <typename T, int kTile>
inline constexpr int kSharedSlots = kTile + 3 * kPerVector<T> + 1;

// Where one range goes and how it splits into an unaligned head, aligned 16-byte chunks, and an
// unaligned tail.
template <typename T>
struct RangePlan {
  const T* src;
  int count, loc;  // elements; shared position of src[0]
  int head;        // elements before the first aligned chunk (<= count)
  int chunks;      // aligned 16-byte chunks after the head
  int tail;        // elements after the chunks

  __device__ RangePlan(const T* s, int c, int region_start) : src(s), count(c) {
    constexpr int kPer = kPerVector<T>;
    const int misalign = static_cast<int>((reinterpret_cast<uintptr_t>(s) & 15u) / sizeof(T));
    loc = region_start + misalign;
    head = misalign == 0 ? 0 : kPer - misalign;
    head = head < count ? head : count;
    chunks = (count - head) / kPer;
    tail = count - head - chunks * kPer;
  }
  // One past the last slot used, rounded up to a 16-byte boundary: where a next range may start.
  __device__ int region_end() const {
    constexpr int kPer = kPerVector<T>;
    return (loc + count + kPer - 1) / kPer * kPer;
  }
};

// Copies kBytes (4, 8 or 16; 16 bypasses L1) from global to shared memory without registers
// (cp.async); wait_async_copies() waits for this thread's copies. Before sm_80 (no cp.async: a
// build for older GPUs) the copy is a load and a shared store, and the wait does nothing.
template <int kBytes>
__device__ __forceinline__ void copy_async(uint32_t shared_address, const void* global) {
  static_assert(kBytes == 4 || kBytes == 8 || kBytes == 16, "4-, 8- or 16-byte copies");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  if constexpr (kBytes == 4) {
    const unsigned int v = __ldg(static_cast<const unsigned int*>(global));
    asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(shared_address), "r"(v) : "memory");
  } else if constexpr (kBytes == 8) {
    const unsigned long long v = __ldg(static_cast<const unsigned long long*>(global));
    asm volatile("st.shared.b64 [%0], %1;\n" ::"r"(shared_address), "l"(v) : "memory");
  } else {
    const uint4 v = __ldg(static_cast<const uint4*>(global));
    asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(shared_address), "r"(v.x),
                 "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
  }
#else
  if constexpr (kBytes == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(shared_address),
                 "l"(global));
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(shared_address),
                 "l"(global), "n"(kBytes));
  }
#endif
}

__device__ __forceinline__ void wait_async_copies() {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}

// Element e of a shared array at `to` (its shared address; `stage` the same array) from `from`:
// cp.async for 4 and 8 bytes, a plain load and store for smaller elements (the ragged merge's
// 1- and 2-byte keys; the sort's passes never copy them so).
template <typename T>
__device__ __forceinline__ void copy_element(uint32_t to, T* stage, int e, const T* from) {
  if constexpr (sizeof(T) == 4 || sizeof(T) == 8) {
    copy_async<int(sizeof(T))>(to + static_cast<uint32_t>(e * sizeof(T)), from);
  } else {
    stage[e] = *from;
  }
}

// Copies [src1, src1 + c1) and [src2, src2 + c2) (c1 + c2 <= kTile) into `shared`, returning
// their shared positions in loc1 / loc2, 16 bytes a copy for the aligned chunks and one element
// for the edges. Two ways, both with every load of the tile in flight at once:
//   * kAsync: global -> shared without registers (cp.async). The caller issues all its copies
//     (keys and values), then waits (wait_async_copies) and synchronizes the block. Used where
//     staging through registers cost round trips: under a register cap ptxas stored some chunks
//     (or a tile's values) before issuing the other loads (tile_sweep, H100: int64 keys with
//     int32 / int64 values 10-12% faster, the rows kernel 3-9%, the block sort 0-10%).
//   * staged: every chunk loaded into registers, then stored (the source issues every load
//     before the first store); the keys-alone tiled merges keep it (cp.async was 1-9% slower
//     there: int32 256 x 19 414 vs 400 us, spilling under its 32-register cap; int64 800 vs 780).
// Needs kThreads >= 128 (warps 0-3 copy the four unaligned edges).
template <int kThreads, int kTile, bool kAsync, typename T>
__device__ __forceinline__ void load_two_ranges(const T* src1, int c1, const T* src2, int c2,
                                                T* shared, int& loc1, int& loc2) {
  static_assert(kThreads >= 128, "the edge loads need four warps");
  constexpr int kPer = kPerVector<T>;
  constexpr int kIters = (kTile / kPer + 2 + kThreads - 1) / kThreads;
  const RangePlan<T> r1(src1, c1, 0);
  const RangePlan<T> r2(src2, c2, r1.region_end());
  loc1 = r1.loc;
  loc2 = r2.loc;
  const int tid = static_cast<int>(threadIdx.x);
  const int total_chunks = r1.chunks + r2.chunks;
  const uint32_t to = static_cast<uint32_t>(__cvta_generic_to_shared(shared));
  auto chunk_dst = [&](int q) {
    return q < r1.chunks ? r1.loc + r1.head + q * kPer : r2.loc + r2.head + (q - r1.chunks) * kPer;
  };
  uint4 chunk[kAsync ? 1 : kIters];
#pragma unroll
  for (int s = 0; s < kIters; ++s) {
    const int q = s * kThreads + tid;
    const T* g = q < r1.chunks ? r1.src + r1.head + q * kPer
                               : r2.src + r2.head + (q - r1.chunks) * kPer;
    if (q < total_chunks) {
      if constexpr (kAsync) {
        copy_async<16>(to + static_cast<uint32_t>(chunk_dst(q) * sizeof(T)), g);
      } else {
        chunk[s] = __ldg(reinterpret_cast<const uint4*>(g));
      }
    }
  }
  // Edges: warp 0 / 1 take range 1's head / tail, warps 2 / 3 range 2's.
  const int warp = tid >> 5, lane = tid & 31;
  const bool first = warp < 2, is_head = (warp & 1) == 0;
  const int e_head = first ? r1.head : r2.head;
  const int e_begin = is_head ? 0 : e_head + (first ? r1.chunks : r2.chunks) * kPer;
  const int e_count = is_head ? e_head : (first ? r1.tail : r2.tail);
  const int e_slot = (first ? r1.loc : r2.loc) + e_begin + lane;
  const bool has_edge = warp < 4 && lane < e_count;
  const T* e_src = (first ? r1.src : r2.src) + e_begin + lane;
  if constexpr (kAsync) {
    if (has_edge) copy_element(to, shared, e_slot, e_src);
  } else {
    T edge = T(0);
    if (has_edge) edge = __ldg(e_src);
#pragma unroll
    for (int s = 0; s < kIters; ++s) {
      const int q = s * kThreads + tid;
      if (q < total_chunks) *reinterpret_cast<uint4*>(shared + chunk_dst(q)) = chunk[s];
    }
    if (has_edge) shared[e_slot] = edge;
  }
}

// Copies kRanges ranges of one array, [base + start[r], base + start[r] + count[r]) (counts
// summing to at most kThreads * kPerThread), into shared[0, total) one after the other: range r
// at loc[r], the sum of the counts before it; with kValues, `values` from the same positions into
// value_stage at the same slots. One element a copy: the tile's element e, thread e % kThreads's
// copy e / kThreads, is range r's element e - loc[r] for the last r with loc[r] <= e, found by
// unrolled compares (a runtime index would put the arrays in local memory). The copies go global
// -> shared without registers (cp.async), all in flight at once, and are waited for here (staged
// through registers, ptxas interleaved the shared stores with the loads: more round trips to
// memory); the caller synchronizes the block before reading `shared`. (16-byte loads of four
// ranges cost the quad merge ~490 instructions a thread: per-range alignment, heads and tails.)
template <int kThreads, int kPerThread, int kRanges, bool kValues, typename T, typename V>
__device__ __forceinline__ void load_ranges_packed(const T* base, const V* values,
                                                   const int (&start)[kRanges],
                                                   const int (&count)[kRanges], T* shared,
                                                   V* value_stage, int (&loc)[kRanges]) {
  uint32_t shift[kRanges];  // element e of range r is base[e + shift[r]] (mod 2^32)
  int total = 0;
#pragma unroll
  for (int r = 0; r < kRanges; ++r) {
    loc[r] = total;
    shift[r] = static_cast<uint32_t>(start[r] - total);
    total += count[r];
  }
  const int tid = static_cast<int>(threadIdx.x);
  const uint32_t key_to = static_cast<uint32_t>(__cvta_generic_to_shared(shared));
  const uint32_t value_to = static_cast<uint32_t>(__cvta_generic_to_shared(value_stage));
#pragma unroll
  for (int s = 0; s < kPerThread; ++s) {
    const int e = s * kThreads + tid;
    uint32_t shift_e = shift[0];
#pragma unroll
    for (int r = 1; r < kRanges; ++r) {
      if (e >= loc[r]) shift_e = shift[r];
    }
    const uint32_t at = static_cast<uint32_t>(e) + shift_e;  // < 2^31
    if (e < total) {
      copy_element(key_to, shared, e, base + at);
      if constexpr (kValues) copy_element(value_to, value_stage, e, values + at);
    }
  }
  wait_async_copies();
}

// Copies kRanges ranges of one array, [base + start[r], base + start[r] + count[r]), into
// `shared` with 16-byte cp.async chunks: range r at its source's alignment modulo 16 after the
// 16-byte region of the range before it (loc[r]: the shared position of its element 0), its
// unaligned head and tail one element a copy (by the block's first threads). Chunk q of the
// tile, thread q % kThreads's copy q / kThreads, belongs to the last range whose first chunk is
// at or before q (unrolled compares). Shared slots used: the counts plus at most
// kChunkedSlack<T> a range. Waits for its copies; the caller synchronizes.
// Slots a range of load_ranges_chunked may leave unused: its misalignment before it and the
// rounding up to a 16-byte boundary after it (each under kPerVector<T>).
template <typename T>
inline constexpr int kChunkedSlack = 2 * kPerVector<T> - 2;

template <int kThreads, int kSlots, int kRanges, typename T>
__device__ __forceinline__ void load_ranges_chunked(const T* base, const int (&start)[kRanges],
                                                    const int (&count)[kRanges], T* shared,
                                                    int (&loc)[kRanges]) {
  static_assert(kThreads >= 2 * kPerVector<T> * kRanges, "a thread for every edge element");
  constexpr int kPer = kPerVector<T>;
  constexpr int kIters = (kSlots / kPer + kThreads - 1) / kThreads;
  int first_chunk[kRanges], head[kRanges], chunks[kRanges];
  int src_shift[kRanges], dst_shift[kRanges];  // chunk q of range r: q * kPer + shift
  int region = 0, total_chunks = 0;
#pragma unroll
  for (int r = 0; r < kRanges; ++r) {
    const int misalign =
        static_cast<int>((reinterpret_cast<uintptr_t>(base + start[r]) & 15u) / sizeof(T));
    loc[r] = region + misalign;
    head[r] = misalign == 0 ? 0 : kPer - misalign;
    head[r] = head[r] < count[r] ? head[r] : count[r];
    chunks[r] = (count[r] - head[r]) / kPer;
    first_chunk[r] = total_chunks;
    src_shift[r] = start[r] + head[r] - total_chunks * kPer;
    dst_shift[r] = loc[r] + head[r] - total_chunks * kPer;
    total_chunks += chunks[r];
    region = (loc[r] + count[r] + kPer - 1) / kPer * kPer;
  }
  const int tid = static_cast<int>(threadIdx.x);
  const uint32_t to = static_cast<uint32_t>(__cvta_generic_to_shared(shared));
#pragma unroll
  for (int s = 0; s < kIters; ++s) {
    const int q = s * kThreads + tid;
    int src = src_shift[0], dst = dst_shift[0];
#pragma unroll
    for (int r = 1; r < kRanges; ++r) {
      if (q >= first_chunk[r]) {
        src = src_shift[r];
        dst = dst_shift[r];
      }
    }
    if (q < total_chunks) {
      copy_async<16>(to + static_cast<uint32_t>((q * kPer + dst) * int(sizeof(T))),
                     base + (q * kPer + src));
    }
  }
  // Edges (each under kPer elements): threads 2 kPer r + e copy element e of range r's head (e <
  // kPer) or of its tail. (Written per range, with no select by a runtime range index: ptxas
  // turned such selects into indexed arrays in local memory, an 80-byte stack frame.)
#pragma unroll
  for (int r = 0; r < kRanges; ++r) {
    const int e = tid - 2 * kPer * r;
    const int tail_begin = head[r] + chunks[r] * kPer;
    const int i = e < kPer ? e : tail_begin + (e - kPer);
    const bool edge = e >= 0 && (e < kPer ? e < head[r] : e < 2 * kPer && i < count[r]);
    if (edge) copy_element(to, shared, loc[r] + i, base + start[r] + i);
  }
  wait_async_copies();
}

// A block's contiguous output [dst, dst + count) staged in shared memory at the same address
// modulo 16 (element p at stage[loc + p], loc = dst's misalignment): the block stores it with
// 16-byte stores for the aligned interior and one element a store for the head and tail. The
// caller stages with plan.loc and synchronizes the block before and after.
template <int kThreads, typename T>
__device__ __forceinline__ void store_block_staged(const RangePlan<T>& plan, const T* stage,
                                                   T* dst) {
  constexpr int kPer = kPerVector<T>;
  const int tid = static_cast<int>(threadIdx.x);
  const uint4* from = reinterpret_cast<const uint4*>(stage + plan.loc + plan.head);
  uint4* to = reinterpret_cast<uint4*>(dst + plan.head);
  for (int q = tid; q < plan.chunks; q += kThreads) to[q] = from[q];
  const int tail_begin = plan.head + plan.chunks * kPer;
  if (tid < plan.head) dst[tid] = stage[plan.loc + tid];
  if (tid < plan.tail) dst[tail_begin + tid] = stage[plan.loc + tail_begin + tid];
}

// Rows staged one after another in shared memory at a stride ("strided rows"): the stride of
// rows of `len` elements is an odd number of 16-byte chunks, so eight consecutive rows start in
// eight different 16-byte bank groups of a 128-byte bank row, and a warp whose threads each work
// in their own row (the rows kernel) spreads over the banks instead of meeting in a few. len
// itself where rows of it cannot move 16 bytes at a time (len % kPer != 0) or already do.
template <typename T>
__host__ __device__ constexpr int strided_row_stride(int len) {
  constexpr int kPer = kPerVector<T>;
  return len == 0 || len % kPer != 0 || (len / kPer) % 2 == 1 ? len : len + kPer;
}

// The block's threads visit the 16-byte chunks q of `rows` contiguous rows of `len` elements
// (kPer a chunk; len % kPer == 0), each with its slot in the strided rows: f(q, slot).
template <int kThreads, int kPer, typename F>
__device__ __forceinline__ void for_strided_chunks(int rows, int len, int stride, const F& f) {
  const unsigned chunks_per_row = static_cast<unsigned>(len / kPer);
  const int total = rows * (len / kPer);
  for (int q = static_cast<int>(threadIdx.x); q < total; q += kThreads) {
    const int row = static_cast<int>(static_cast<unsigned>(q) / chunks_per_row);
    f(q, row * stride + (q - row * static_cast<int>(chunks_per_row)) * kPer);
  }
}

// Copies `rows` rows of `len` elements from src (contiguous, 16-byte aligned; len % kPer == 0)
// into shared[row * stride, row * stride + len) (stride % kPer == 0, shared 16-byte aligned),
// 16 bytes a copy without registers (cp.async); the caller waits (wait_async_copies) and
// synchronizes the block.
template <int kThreads, typename T>
__device__ __forceinline__ void load_rows_strided(const T* src, int rows, int len, int stride,
                                                  T* shared) {
  constexpr int kPer = kPerVector<T>;
  const uint32_t to = static_cast<uint32_t>(__cvta_generic_to_shared(shared));
  for_strided_chunks<kThreads, kPer>(rows, len, stride, [&](int q, int slot) {
    copy_async<16>(to + static_cast<uint32_t>(slot * sizeof(T)), src + q * kPer);
  });
}

// The inverse store: `rows` strided rows of `len` elements in `stage` (as load_rows_strided places
// them) to dst (contiguous, 16-byte aligned), 16 bytes a store. The caller synchronizes the
// block before (every row staged).
template <int kThreads, typename T>
__device__ __forceinline__ void store_rows_strided(const T* stage, int rows, int len, int stride,
                                                   T* dst) {
  for_strided_chunks<kThreads, kPerVector<T>>(rows, len, stride, [&](int q, int slot) {
    reinterpret_cast<uint4*>(dst)[q] = *reinterpret_cast<const uint4*>(stage + slot);
  });
}

// Stores the block's outputs [0, count) to dst, thread t holding [t * kItems, t * kItems + kItems)
// in reg. A warp's outputs are contiguous, so each warp transposes its own through its own
// kRegionBytes of `stage` (16-byte aligned); the caller makes sure no warp still reads `stage`.
template <int kItems, int kRegionBytes, typename T>
__device__ __forceinline__ void store_warp_striped(const T (&reg)[kItems], unsigned char* stage,
                                                   T* dst, int count) {
  constexpr int kPer = kPerVector<T>;
  constexpr int kWarpItems = 32 * kItems;
  static_assert(kWarpItems * int(sizeof(T)) <= kRegionBytes, "stage region too small");
  static_assert(kRegionBytes % 16 == 0, "stage regions must stay 16-byte aligned");
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  T* region = reinterpret_cast<T*>(stage + warp * kRegionBytes);
  const int base = warp * kWarpItems;
  __syncwarp();
#pragma unroll
  for (int c = 0; c < kItems; ++c) region[lane * kItems + c] = reg[c];
  __syncwarp();
  T* out = dst + base;
  const bool vector = kWarpItems % kPer == 0 && base + kWarpItems <= count &&
                      aligned16(out);
  if (vector) {
    constexpr int kChunks = kWarpItems / kPer;
#pragma unroll
    for (int s = 0; s < (kChunks + 31) / 32; ++s) {
      const int q = s * 32 + lane;
      if (q < kChunks) {
        reinterpret_cast<uint4*>(out)[q] = reinterpret_cast<const uint4*>(region)[q];
      }
    }
  } else {
#pragma unroll
    for (int s = 0; s < kItems; ++s) {
      const int q = s * 32 + lane;
      if (base + q < count) out[q] = region[q];
    }
  }
}

}  // namespace jax_mergepath
