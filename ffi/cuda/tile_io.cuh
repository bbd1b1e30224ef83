// tile_io.cuh: a merge block's global <-> shared-memory traffic, in as few instructions as the
// data allows (the merge kernels are bound by instruction issue, not only by DRAM).
//
//   * load_two_ranges (and load_ranges, any number of them, for the quad merge): copies
//     arbitrary ranges of global memory into shared memory, 16 bytes a load for each range's
//     16-byte-aligned interior and one element a load for its unaligned head and tail. A range
//     is placed at the same address modulo 16 as in global memory, so its shared position
//     ("loc") is the first free 16-byte boundary plus its misalignment; the caller reads
//     element e of range r at loc_r + e.
//   * store_warp_striped: each warp transposes its threads' consecutive outputs through its own
//     part of shared memory (only __syncwarp), then stores them coalesced: 16 bytes a store when
//     the destination is 16-byte aligned and the warp's outputs are all in range, else one
//     element a store;
//   * store_block_staged: a block's contiguous output staged in shared memory, stored with
//     16-byte stores (rows merged by thread groups, whose outputs are not thread-striped).
// Invariants: every global read is inside [src, src + count) of its range; every shared write
// is inside the buffer sizes given by kSharedSlots (load_two_ranges; load_ranges of n ranges
// needs up to 2 n - 1 vectors more, its caller sizes for that); nothing here synchronizes the
// whole block.
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

// Copies [src1, src1 + c1) and [src2, src2 + c2) (c1 + c2 <= kTile) into `shared`, returning
// their shared positions in loc1 / loc2. The source issues every global load before the first
// shared store (under a tight register cap the compiler may interleave them). Needs
// kThreads >= 128 (warps 0-3 load the four unaligned edges).
template <int kThreads, int kTile, typename T>
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
  uint4 chunk[kIters];
#pragma unroll
  for (int s = 0; s < kIters; ++s) {
    const int q = s * kThreads + tid;
    const T* g = q < r1.chunks ? r1.src + r1.head + q * kPer
                               : r2.src + r2.head + (q - r1.chunks) * kPer;
    if (q < total_chunks) chunk[s] = __ldg(reinterpret_cast<const uint4*>(g));
  }
  // Edges: warp 0 / 1 take range 1's head / tail, warps 2 / 3 range 2's.
  const int warp = tid >> 5, lane = tid & 31;
  const bool first = warp < 2, is_head = (warp & 1) == 0;
  const int e_head = first ? r1.head : r2.head;
  const int e_begin = is_head ? 0 : e_head + (first ? r1.chunks : r2.chunks) * kPer;
  const int e_count = is_head ? e_head : (first ? r1.tail : r2.tail);
  const int e_slot = (first ? r1.loc : r2.loc) + e_begin + lane;
  const bool has_edge = warp < 4 && lane < e_count;
  T edge = T(0);
  if (has_edge) edge = __ldg((first ? r1.src : r2.src) + e_begin + lane);
#pragma unroll
  for (int s = 0; s < kIters; ++s) {
    const int q = s * kThreads + tid;
    const int dst = q < r1.chunks ? r1.loc + r1.head + q * kPer
                                  : r2.loc + r2.head + (q - r1.chunks) * kPer;
    if (q < total_chunks) *reinterpret_cast<uint4*>(shared + dst) = chunk[s];
  }
  if (has_edge) shared[e_slot] = edge;
}

// Copies kRanges ranges [src[r], src[r] + count[r]) (counts summing to at most kTile) into
// `shared`, one after the other, returning their shared positions in loc[r]. The source issues
// every global load before the first shared store (under a tight register cap the compiler may
// interleave them): one round trip to memory for all ranges. Needs kThreads >= 64 kRanges
// (warp 2 r / 2 r + 1 load range r's unaligned head / tail).
template <int kThreads, int kTile, int kRanges, typename T>
__device__ __forceinline__ void load_ranges(const T* const (&src)[kRanges],
                                            const int (&count)[kRanges], T* shared,
                                            int (&loc)[kRanges]) {
  static_assert(kThreads >= 64 * kRanges, "the edge loads need two warps a range");
  constexpr int kPer = kPerVector<T>;
  constexpr int kIters = (kTile / kPer + kRanges + kThreads - 1) / kThreads;
  int region = 0, first_chunk[kRanges + 1];
  first_chunk[0] = 0;
  const T* head_src[kRanges];
  int head_dst[kRanges];
#pragma unroll
  for (int r = 0; r < kRanges; ++r) {
    const RangePlan<T> plan(src[r], count[r], region);
    region = plan.region_end();
    loc[r] = plan.loc;
    first_chunk[r + 1] = first_chunk[r] + plan.chunks;
    head_src[r] = plan.src + plan.head;
    head_dst[r] = plan.loc + plan.head;
  }
  const int tid = static_cast<int>(threadIdx.x);
  // Chunk q belongs to the last range r with first_chunk[r] <= q (selected by unrolled
  // compares: a runtime index would put these arrays in local memory).
  uint4 chunk[kIters];
#pragma unroll
  for (int s = 0; s < kIters; ++s) {
    const int q = s * kThreads + tid;
    const T* from = head_src[0] + q * kPer;
#pragma unroll
    for (int r = 1; r < kRanges; ++r) {
      if (q >= first_chunk[r]) from = head_src[r] + (q - first_chunk[r]) * kPer;
    }
    if (q < first_chunk[kRanges]) chunk[s] = __ldg(reinterpret_cast<const uint4*>(from));
  }
  // Edges: warp 2 r takes range r's head, warp 2 r + 1 its tail.
  const int warp = tid >> 5, lane = tid & 31;
  const T* e_src = src[0];
  int e_count = count[0], e_loc = loc[0];
#pragma unroll
  for (int r = 1; r < kRanges; ++r) {
    if (warp / 2 == r) {
      e_src = src[r];
      e_count = count[r];
      e_loc = loc[r];
    }
  }
  const bool is_head = (warp & 1) == 0;
  const RangePlan<T> edge_plan(e_src, e_count, 0);
  const int e_begin = is_head ? 0 : edge_plan.head + edge_plan.chunks * kPer;
  const int e_edge = is_head ? edge_plan.head : edge_plan.tail;
  const bool has_edge = warp < 2 * kRanges && lane < e_edge;
  T edge = T(0);
  if (has_edge) edge = __ldg(e_src + e_begin + lane);
#pragma unroll
  for (int s = 0; s < kIters; ++s) {
    const int q = s * kThreads + tid;
    int to = head_dst[0] + q * kPer;
#pragma unroll
    for (int r = 1; r < kRanges; ++r) {
      if (q >= first_chunk[r]) to = head_dst[r] + (q - first_chunk[r]) * kPer;
    }
    if (q < first_chunk[kRanges]) *reinterpret_cast<uint4*>(shared + to) = chunk[s];
  }
  if (has_edge) shared[e_loc + e_begin + lane] = edge;
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
                      (reinterpret_cast<uintptr_t>(out) & 15u) == 0;
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
