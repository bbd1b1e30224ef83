// topk_kernels.cuh (level: kernels): the CUDA top_k kernels (topk.h's result; tuning/topk.h's
// strategies):
//   * block level: block_radix_select (the k-th largest order key of a set, digit by digit in
//     shared memory), block_topk (a row's k first: a sampled threshold, the keys >= it appended to
//     a shared buffer as the row streams by, or the exact path; then a bitonic sort of the buffer
//     by (order key descending, index ascending));
//   * topk_rows_kernel: block_topk, a block a row (the block strategy);
//   * the grid of a long row: topk_sample_kernel, topk_filter_kernel, topk_decide_kernel, the
//     exact path's topk_probe_kernel, topk_radix_pass_kernel, topk_tie_count_kernel,
//     topk_tie_scan_kernel, topk_tie_write_kernel (they return at once for rows that do not
//     need it), then topk_final_kernel (block_topk over the candidates) or topk_compose_kernel,
//     the merge sort and topk_emit_kernel.
// Order keys are made as keys load (TopkOrder::key); values are written as the keys' own bits,
// read at the result's indices. Every kernel starts with grid_prologue() (grid_launch.cuh).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "../block/block_scan.cuh"
#include "../block/grid_launch.cuh"
#include "jax_mergepath/topk.h"
#include "jax_mergepath/tuning/topk.h"

namespace jax_mergepath {
namespace topk {

inline constexpr unsigned kFullMask = 0xffffffffu;
inline constexpr int64_t kMaxGrid = (int64_t{1} << 31) - 1;  // blocks a grid's x dimension holds

// Whether every row of the call starts 16-byte aligned: the keys, and each row's length in bytes
// when there are several rows (a launch's choice of whole-word loads).
inline bool rows_aligned16(const TopkCall& call) {
  return aligned16(call.keys) &&
         (call.rows == 1 || (call.length * int64_t{call.key_bytes}) % 16 == 0);
}

// The largest order key c with at_least(c) >= k, decided a bit at a time from the top (at_least
// counts keys >= c over the group that calls it and is non-increasing in c; every thread of the
// group calls it alike).
template <typename Bits, typename AtLeast>
__device__ __forceinline__ Bits bitwise_kth(int k, const AtLeast& at_least) {
  Bits kth = 0;
  for (int bit = 8 * int(sizeof(Bits)) - 1; bit >= 0; --bit) {
    const Bits c = static_cast<Bits>(kth | static_cast<Bits>(Bits(1) << bit));
    if (at_least(c) >= k) kth = c;
  }
  return kth;
}

// Scalars a block shares (static shared memory).
struct BlockScalars {
  int count;  // candidates appended
  int digit;  // a radix pass's digit
  int above;  // keys in the digits above it
  int last;   // the block is the last of its row (grid radix passes)
  int ties;   // ties appended (the exact path of candidates)
};

// ------------------------------------------------------------------ the digit of a histogram

// Warp 0 (every lane calls it): the digit d of `bins` (read by bin(b)) such that the counts of
// the digits above d are fewer than `remaining` and with d's at least `remaining`, and that count
// above; lane 0 writes them to sc.digit / sc.above. The bins' total must be >= remaining.
template <int kBins, typename Bin>
__device__ void warp_find_digit(const Bin& bin, int remaining, BlockScalars& sc) {
  static_assert(kBins % 32 == 0, "whole bins a lane");
  constexpr int kPer = kBins / 32;
  const int lane = static_cast<int>(threadIdx.x & 31u);
  int sum = 0;
  for (int j = 0; j < kPer; ++j) sum += bin(kBins - 1 - (lane * kPer + j));
  const int inclusive = warp_inclusive_sum(sum);
  const unsigned reached = __ballot_sync(kFullMask, inclusive >= remaining);
  const int first = reached ? __ffs(reached) - 1 : 31;
  if (lane == first) {
    int before = inclusive - sum;
    int digit = kBins - 1 - (lane * kPer + kPer - 1);
    for (int j = 0; j < kPer; ++j) {
      const int b = kBins - 1 - (lane * kPer + j);
      const int c = bin(b);
      if (before + c >= remaining) {
        digit = b;
        break;
      }
      before += c;
    }
    sc.digit = digit;
    sc.above = before;
  }
}

// The digit of kBits at `shift` (width bits: the last digit of a key may be narrower).
template <typename Bits>
__device__ __forceinline__ Bits digit_mask(int width) {
  return static_cast<Bits>((uint64_t{1} << width) - 1);
}

// The bits above the digit at shift + width.
template <typename Bits>
__device__ __forceinline__ Bits high_mask(int top) {
  return top >= 8 * int(sizeof(Bits)) ? Bits(0) : static_cast<Bits>(~Bits(0) << top);
}

// ------------------------------------------------------------------ block radix select

// The k-th largest (1 <= k <= count) of the order keys key_at(p), p < count, and how many keys
// equal to it are among the k largest (`need`), for every thread. Digits of kBits from the top;
// hist holds 1 << kBits ints (shared memory). Ends with a __syncthreads.
template <typename Bits, int kThreads, int kBits, typename KeyAt>
__device__ void block_radix_select(int64_t count, int k, const KeyAt& key_at, int* hist,
                                   BlockScalars& sc, Bits& kth, int& need) {
  constexpr int kBins = 1 << kBits;
  constexpr int kWidth = 8 * int(sizeof(Bits));
  Bits prefix = Bits(0);
  int remaining = k;
  for (int top = kWidth; top > 0; top -= kBits) {
    const int shift = top > kBits ? top - kBits : 0;
    const int width = top - shift;
    const Bits above_mask = high_mask<Bits>(top);
    const Bits dmask = digit_mask<Bits>(width);
    for (int b = threadIdx.x; b < kBins; b += kThreads) hist[b] = 0;
    __syncthreads();
    for (int64_t p = threadIdx.x; p < count; p += kThreads) {
      const Bits u = key_at(p);
      if ((u & above_mask) == prefix) atomicAdd(&hist[(u >> shift) & dmask], 1);
    }
    __syncthreads();
    if (threadIdx.x < 32) warp_find_digit<kBins>([&](int b) { return hist[b]; }, remaining, sc);
    __syncthreads();
    prefix = static_cast<Bits>(prefix | static_cast<Bits>(static_cast<Bits>(sc.digit) << shift));
    remaining -= sc.above;
    __syncthreads();  // (sc and hist are written again by the next digit)
  }
  kth = prefix;
  need = remaining;
}

// ------------------------------------------------------------------ sources of (key, index)

// A row of keys: the order key of position p, its index p, the bits at an index; `base` the
// array of its keys as stored (the vectorized loop's loads), `order_of` their order keys.
template <typename Bits>
struct RowSource {
  const Bits* row;
  TopkOrder<Bits> order;
  __device__ Bits key(int64_t p) const { return order.key(__ldg(row + p)); }
  __device__ int32_t index(int64_t p) const { return static_cast<int32_t>(p); }
  __device__ Bits value(int32_t i) const { return __ldg(row + i); }
  static constexpr bool kReadOnly = true;  // (the operand: never written)
  static constexpr bool kIndexOrdered = true;  // (position p is index p)
  __device__ const Bits* base() const { return row; }
  __device__ Bits stored(int64_t p) const { return __ldg(row + p); }
  __device__ Bits order_of(Bits stored) const { return order.key(stored); }
};

// A grid row's candidates: (order key, index) pairs; the bits at an index are the row's. (The
// candidates are written by the kernels before: plain loads, not the read-only path.)
template <typename Bits>
struct CandidateSource {
  const Bits* keys;
  const int32_t* indices;
  const Bits* row;
  __device__ Bits key(int64_t p) const { return keys[p]; }
  __device__ int32_t index(int64_t p) const { return indices[p]; }
  __device__ Bits value(int32_t i) const { return __ldg(row + i); }
  static constexpr bool kReadOnly = false;
  static constexpr bool kIndexOrdered = false;  // (appended by atomics: in no order)
  __device__ const Bits* base() const { return keys; }
  __device__ Bits stored(int64_t p) const { return keys[p]; }
  __device__ Bits order_of(Bits stored) const { return stored; }
};

// ------------------------------------------------------------------ 16-byte loads

template <typename Bits>
inline constexpr int kVectorKeys = 16 / int(sizeof(Bits));

// The kVectorKeys keys at p (16-byte aligned) in one load (ld.global.nc where read_only).
template <typename Bits, bool kReadOnly>
__device__ __forceinline__ void load_vector(const Bits* p, Bits (&out)[kVectorKeys<Bits>]) {
  uint4 w;
  if constexpr (kReadOnly) {
    w = __ldg(reinterpret_cast<const uint4*>(p));
  } else {
    w = *reinterpret_cast<const uint4*>(p);
  }
  memcpy(out, &w, 16);
}

// 16-byte loads a thread issues at once: `most`, fewer for narrow keys (at most 16 keys a
// thread, a key a register: 1-byte keys one load, 2-byte keys two).
template <typename Bits>
constexpr int vectors_at_once(int most) {
  const int v = 16 / kVectorKeys<Bits>;
  return v < 1 ? 1 : (v < most ? v : most);
}

// This lane's place when `take`: the warp's takers get consecutive places from one atomicAdd on
// *next by the lowest of them, in lane order. Every lane of the warp calls it.
__device__ __forceinline__ int warp_claim(bool take, int* next) {
  const unsigned ballot = __ballot_sync(kFullMask, take);
  if (ballot == 0u) return 0;
  const int lane = static_cast<int>(threadIdx.x & 31u);
  const int leader = __ffs(ballot) - 1;
  int first = 0;
  if (lane == leader) first = atomicAdd(next, __popc(ballot));
  return __shfl_sync(kFullMask, first, leader) + __popc(ballot & ((1u << lane) - 1u));
}

// Appends this thread's `mine` survivors (its items i < kItems with take(i) true) to a buffer
// whose next free place is *next (cap places; the count goes on past them): every lane of the
// warp calls it; the warp's places come from one atomicAdd of its lane 31. write(at, i) stores
// item i at place `at` (< cap). (Unrolled: items live in registers.)
template <int kItems, typename Take, typename Write>
__device__ __forceinline__ void warp_append(int mine, int* next, int64_t cap, const Take& take,
                                            const Write& write) {
  const int lane = static_cast<int>(threadIdx.x & 31u);
  const int inclusive = warp_inclusive_sum(mine);
  int first = 0;
  if (lane == 31) first = atomicAdd(next, inclusive);
  int64_t at = int64_t{__shfl_sync(kFullMask, first, 31)} + inclusive - mine;
#pragma unroll
  for (int i = 0; i < kItems; ++i) {
    if (take(i)) {
      if (at < cap) write(at, i);
      ++at;
    }
  }
}

// filter_stretch's body. Every item of the stretch is in the row where kWhole (no position
// checks compiled) or `whole` (checked at run time, block-uniform).
template <bool kWhole, typename Bits, int kThreads, int kItems, bool kReadOnly, typename Load,
          typename ToOrder, typename Write>
__device__ __forceinline__ void filter_items(const Bits* base, int64_t start, int64_t len,
                                             bool whole, bool vectors, Bits threshold,
                                             const Load& load, const ToOrder& to_order, int* next,
                                             int64_t cap, const Write& write) {
  constexpr int kVec = kVectorKeys<Bits>;
  constexpr int kVecs = kItems / kVec;
  auto position = [&](int i) {
    return start + int64_t{i / kVec} * kThreads * kVec + int64_t{threadIdx.x} * kVec + i % kVec;
  };
  const bool all_in = kWhole || whole;
  Bits u[kItems];
  if (all_in && vectors) {
#pragma unroll
    for (int v = 0; v < kVecs; ++v) {
      Bits raw[kVec];
      load_vector<Bits, kReadOnly>(base + position(v * kVec), raw);
#pragma unroll
      for (int e = 0; e < kVec; ++e) u[v * kVec + e] = raw[e];
    }
  } else {
#pragma unroll
    for (int i = 0; i < kItems; ++i) {
      const int64_t p = position(i);
      u[i] = all_in || p < len ? load(p) : Bits(0);
    }
  }
  auto take = [&](int i) { return (all_in || position(i) < len) && u[i] >= threshold; };
  int mine = 0;
#pragma unroll
  for (int i = 0; i < kItems; ++i) {
    u[i] = to_order(u[i]);
    mine += take(i);
  }
  if (__any_sync(kFullMask, mine > 0)) {
    warp_append<kItems>(mine, next, cap, take,
                        [&](int64_t at, int i) { write(at, u[i], position(i)); });
  }
}

// One stretch of a filtering read, by every thread of a block of kThreads: the kItems keys of
// thread t (item i: key start + (i / kVec) kThreads kVec + t kVec + i % kVec of a row of len
// keys at base), read by 16-byte loads where `vectors` and the stretch is whole, else by
// load(p) (0 past the row); each made an order key by to_order, those >= threshold appended by
// warp_append to the places counted by *next (write(at, order key, position) for at < cap).
template <typename Bits, int kThreads, int kItems, bool kReadOnly, typename Load, typename ToOrder,
          typename Write>
__device__ __forceinline__ void filter_stretch(const Bits* base, int64_t start, int64_t len,
                                               bool vectors, Bits threshold, const Load& load,
                                               const ToOrder& to_order, int* next, int64_t cap,
                                               const Write& write) {
  filter_items<false, Bits, kThreads, kItems, kReadOnly>(
      base, start, len, start + int64_t{kThreads} * kItems <= len, vectors, threshold, load,
      to_order, next, cap, write);
}

// block_topk's shared memory: cap order keys, max_samples samples, cap indices and the
// histogram, carved from the dynamic buffer in that order (every part stays aligned: cap and
// max_samples are powers of two of at least 64).
template <typename Bits>
struct BlockBuffers {
  Bits* keys;
  Bits* samples;
  int32_t* indices;
  int* hist;
  __device__ BlockBuffers(unsigned char* shared, int cap, int max_samples)
      : keys(reinterpret_cast<Bits*>(shared)),
        samples(reinterpret_cast<Bits*>(shared + int64_t{cap} * sizeof(Bits))),
        indices(reinterpret_cast<int32_t*>(shared + int64_t{cap + max_samples} * sizeof(Bits))),
        hist(reinterpret_cast<int*>(shared + int64_t{cap + max_samples} * sizeof(Bits) +
                                    int64_t{cap} * 4)) {}
};

// Sorts buf's first `count` pairs (count <= cap, cap a power of two) by (order key descending,
// index ascending): a bitonic network over the next power of two, padded with pairs that sort
// last (key 0, index INT32_MAX: a real pair of key 0 has a smaller index). Pair t of a stage of
// stride <= 32 compares two places of [64 (t / 32), 64 (t / 32) + 64), and pair t is always
// thread t % kThreads's (kThreads a multiple of 32): between two such stages every place is one
// warp's, and a warp barrier orders them; a block barrier precedes and follows a wider stride.
template <typename Bits, int kThreads>
__device__ void block_bitonic_sort(const BlockBuffers<Bits>& buf, int count) {
  static_assert(kThreads % 32 == 0, "whole warps");
  int padded = 1;
  while (padded < count) padded <<= 1;
  for (int p = count + threadIdx.x; p < padded; p += kThreads) {
    buf.keys[p] = Bits(0);
    buf.indices[p] = 0x7fffffff;
  }
  __syncthreads();
  for (int size = 2; size <= padded; size <<= 1) {
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      for (int t = threadIdx.x; t < padded / 2; t += kThreads) {
        const int i = 2 * t - (t & (stride - 1));
        const int j = i + stride;
        const bool up = (i & size) == 0;
        const Bits ui = buf.keys[i], uj = buf.keys[j];
        const int32_t ii = buf.indices[i], ij = buf.indices[j];
        if (topk_before(uj, ij, ui, ii) == up) {
          buf.keys[i] = uj;
          buf.keys[j] = ui;
          buf.indices[i] = ij;
          buf.indices[j] = ii;
        }
      }
      const int next = stride > 1 ? stride >> 1 : size;  // (the next stage's stride)
      if (stride <= 32 && next <= 32 && next < padded) {
        __syncwarp();
      } else {
        __syncthreads();
      }
    }
  }
}

// buf's first `count` pairs cut to those whose order key is at least the k-th largest (a radix
// select of them): exactly the k first and the ties past them, moved to the front in any order;
// returns how many. A round reads kThreads pairs, then (a barrier later) writes its kept ones at
// the places a warp's atomic gives, all below the round's end: no pair is written before it is
// read. Ends with a __syncthreads.
template <typename Bits, int kThreads>
__device__ int block_keep_first(const BlockBuffers<Bits>& buf, int count, int k,
                                BlockScalars& sc) {
  Bits kth;
  int unused;
  block_radix_select<Bits, kThreads, kTopkBlockRadixBits>(
      count, k, [&](int64_t p) { return buf.keys[p]; }, buf.hist, sc, kth, unused);
  if (threadIdx.x == 0) sc.count = 0;
  __syncthreads();
  for (int base = 0; base < count; base += kThreads) {
    const int p = base + static_cast<int>(threadIdx.x);
    Bits key = 0;
    int32_t index = 0;
    if (p < count) {
      key = buf.keys[p];
      index = buf.indices[p];
    }
    const bool keep = p < count && key >= kth;
    const int at = warp_claim(keep, &sc.count);
    __syncthreads();  // (the round's reads before its writes)
    if (keep) {
      buf.keys[at] = key;
      buf.indices[at] = index;
    }
  }
  __syncthreads();
  const int kept = sc.count;
  __syncthreads();  // (sc is written again by the caller)
  return kept;
}

// The exact path of a block: the k-th order key by a radix select of the source, then the keys
// above it (any order) and the `need` keys equal to it of the lowest indices, into buf: exactly k
// pairs. With `probe` (the caller kept more than its buffer of keys >= threshold, so at least k
// are): one read counting the keys above the threshold first; fewer than k, and the threshold is
// the k-th key (ties at the top): no radix select. A source whose positions are its indices
// (Source::kIndexOrdered: a row) takes its ties in position order, a block scan a round; any other
// (a grid's candidates, appended in no order) first finds the need-th lowest index among its ties
// (a radix select of the complemented indices, every other key counted as 0: below every tie, whose
// complement has the top bit set).
template <typename Bits, int kThreads, typename Source>
__device__ void block_exact(const Source& src, int64_t len, int k, bool probe, Bits threshold,
                            const BlockBuffers<Bits>& buf, BlockScalars& sc,
                            BlockScanStorage<int, kThreads>& scan) {
  Bits kth = threshold;
  int need = 0;
  if (probe) {  // (block-uniform)
    int mine = 0;
    for (int64_t p = threadIdx.x; p < len; p += kThreads) mine += src.key(p) > threshold;
    int above = 0;
    block_exclusive_sum<int, kThreads>(mine, above, scan);
    __syncthreads();  // (the scan's storage is written again below)
    need = k - above;
    probe = need > 0;
  }
  if (!probe) {
    block_radix_select<Bits, kThreads, kTopkBlockRadixBits>(
        len, k, [&](int64_t p) { return src.key(p); }, buf.hist, sc, kth, need);
  }
  const int greater = k - need;
  if constexpr (!Source::kIndexOrdered) {
    uint32_t last_tie;  // the complement of the highest index taken among the ties
    int unused;
    block_radix_select<uint32_t, kThreads, kTopkBlockRadixBits>(
        len, need,
        [&](int64_t p) {
          return src.key(p) == kth ? ~static_cast<uint32_t>(src.index(p)) : 0u;
        },
        buf.hist, sc, last_tie, unused);
    if (threadIdx.x == 0) {
      sc.count = 0;
      sc.ties = 0;
    }
    __syncthreads();
    for (int64_t p = threadIdx.x; p < len; p += kThreads) {
      const Bits u = src.key(p);
      const int32_t index = src.index(p);
      int at = -1;
      if (u > kth) {
        at = atomicAdd(&sc.count, 1);
      } else if (u == kth && ~static_cast<uint32_t>(index) >= last_tie) {
        at = greater + atomicAdd(&sc.ties, 1);
      }
      if (at >= 0) {
        buf.keys[at] = u;
        buf.indices[at] = index;
      }
    }
    __syncthreads();
  } else {
    if (threadIdx.x == 0) sc.count = 0;
    __syncthreads();
    int ties = 0;  // keys equal to kth before this round (every thread holds the same)
    for (int64_t base = 0; base < len; base += kThreads) {
      const int64_t p = base + threadIdx.x;
      const bool valid = p < len;
      const Bits u = valid ? src.key(p) : Bits(0);
      const bool gt = valid && u > kth;
      const bool eq = valid && u == kth;
      if (gt) {
        const int at = atomicAdd(&sc.count, 1);
        buf.keys[at] = u;
        buf.indices[at] = src.index(p);
      }
      int total = 0;
      const int ordinal = block_exclusive_sum<int, kThreads>(eq ? 1 : 0, total, scan);
      if (eq && ties + ordinal < need) {
        buf.keys[greater + ties + ordinal] = u;
        buf.indices[greater + ties + ordinal] = src.index(p);
      }
      ties += total;
      __syncthreads();  // (the scan's storage)
    }
  }
}

// block_topk's vectorized loop: the keys >= threshold of src's len keys appended to buf (up to
// cap places; sc.count goes on past them), kTopkBlockVecs 16-byte loads a thread at a time where
// the source is 16-byte aligned (scalar loads elsewhere and at the end), a count a thread and one
// warp_append a round when a lane of the warp has survivors. Stops (warp-uniform) once past the
// buffer: the exact path runs anyway. Item i of thread t in the round at `start` is key
// start + (i / kVec) kThreads kVec + t kVec + i % kVec.
template <typename Bits, int kThreads, typename Source>
__device__ void stream_vectors(const Source& src, int64_t len, Bits threshold, int cap,
                               const BlockBuffers<Bits>& buf, BlockScalars& sc) {
  constexpr int kVec = kVectorKeys<Bits>;
  constexpr int kVecs = vectors_at_once<Bits>(kTopkBlockVecs);
  constexpr int kItems = kVecs * kVec;
  constexpr int64_t kStep = int64_t{kThreads} * kItems;
  const int lane = static_cast<int>(threadIdx.x & 31u);
  const Bits* base = src.base();
  const bool aligned = aligned16(base);
  auto load = [&](int64_t p) { return src.stored(p); };
  auto to_order = [&](Bits b) { return src.order_of(b); };
  auto write = [&](int64_t at, Bits key, int64_t p) {
    buf.keys[at] = key;
    buf.indices[at] = src.index(p);
  };
  constexpr bool kSplit = topk_whole_stretches_apart(int(sizeof(Bits)));
  int64_t start = 0;
  for (; start < len && (!kSplit || start + kStep <= len); start += kStep) {
    filter_items<kSplit, Bits, kThreads, kItems, Source::kReadOnly>(
        base, start, len, start + kStep <= len, aligned, threshold, load, to_order, &sc.count,
        cap, write);
    int seen = 0;
    if (lane == 0) seen = *static_cast<volatile int*>(&sc.count);
    if (__shfl_sync(kFullMask, seen, 0) > cap) return;
  }
  if (kSplit && start < len) {  // the part stretch after the whole ones
    filter_items<false, Bits, kThreads, kItems, Source::kReadOnly>(
        base, start, len, false, aligned, threshold, load, to_order, &sc.count, cap, write);
  }
}

// The k first (order key descending, index ascending) of src's len pairs (1 <= k <= len,
// k <= cap) into out_values / out_indices; every thread of the block calls it. A source that
// fits the buffer is sorted whole; otherwise a sampled threshold (s samples, their r-th largest)
// keeps the keys >= it, appended a warp at a time as the source streams by (kTopkBlockUnroll
// loads in flight a thread; kVector: stream_vectors, the samples placed by shifts), and the
// exact path runs when fewer than k or more than cap were kept. Ends with a __syncthreads.
template <typename Bits, int kThreads, bool kVector, typename Source>
__device__ void block_topk(const Source& src, int64_t len, int k, int cap, int max_samples,
                           const BlockBuffers<Bits>& buf, BlockScalars& sc,
                           BlockScanStorage<int, kThreads>& scan, Bits* out_values,
                           int32_t* out_indices) {
  int count = 0;
  if (len <= cap) {
    for (int64_t p = threadIdx.x; p < len; p += kThreads) {
      buf.keys[p] = src.key(p);
      buf.indices[p] = src.index(p);
    }
    count = static_cast<int>(len);
    __syncthreads();
  } else {
    int64_t s = topk_block_samples(len);
    s = s < max_samples ? s : max_samples;
    const int r = static_cast<int>(topk_block_sample_rank(k, len, s));
    const int shift = kVector ? topk_log2_exact(s) : -1;
    for (int64_t j = threadIdx.x; j < s; j += kThreads) {
      buf.samples[j] = src.key(shift >= 0 ? topk_sample_position_pow2(j, len, shift)
                                          : topk_sample_position(j, len, s));
    }
    __syncthreads();
    Bits threshold;
    int unused;
    block_radix_select<Bits, kThreads, kTopkBlockRadixBits>(
        s, r, [&](int64_t j) { return buf.samples[j]; }, buf.hist, sc, threshold, unused);
    if (threadIdx.x == 0) sc.count = 0;
    __syncthreads();
    const int lane = static_cast<int>(threadIdx.x & 31u);
    if constexpr (kVector) stream_vectors<Bits, kThreads>(src, len, threshold, cap, buf, sc);
    for (int64_t base = 0; !kVector && base < len; base += int64_t{kThreads} * kTopkBlockUnroll) {
      Bits u[kTopkBlockUnroll];
#pragma unroll
      for (int i = 0; i < kTopkBlockUnroll; ++i) {
        const int64_t p = base + int64_t{i} * kThreads + threadIdx.x;
        u[i] = p < len ? src.key(p) : Bits(0);
      }
#pragma unroll
      for (int i = 0; i < kTopkBlockUnroll; ++i) {
        const int64_t p = base + int64_t{i} * kThreads + threadIdx.x;
        const bool take = p < len && u[i] >= threshold;
        const int at = warp_claim(take, &sc.count);
        if (take && at < cap) {
          buf.keys[at] = u[i];
          buf.indices[at] = src.index(p);
        }
      }
      // Past the buffer already: the exact path runs anyway (a warp-uniform exit).
      int seen = 0;
      if (lane == 0) seen = *static_cast<volatile int*>(&sc.count);
      if (__shfl_sync(kFullMask, seen, 0) > cap) break;
    }
    __syncthreads();
    count = sc.count;
    __syncthreads();
    if (count < k || count > cap) {
      block_exact<Bits, kThreads>(src, len, k, count > cap, threshold, buf, sc, scan);
      count = k;
    }
  }
  if (count > kTopkBlockSortFactor * k && count > kTopkBlockKeepMin) {
    count = block_keep_first<Bits, kThreads>(buf, count, k, sc);
  }
  block_bitonic_sort<Bits, kThreads>(buf, count);
  for (int j = threadIdx.x; j < k; j += kThreads) {
    const int32_t index = buf.indices[j];
    out_indices[j] = index;
    out_values[j] = src.value(index);
  }
  __syncthreads();
}

// ------------------------------------------------------------------ the block strategy

// A block a row: block_topk of the row (buffer of `cap`, `max_samples` samples); kVector: its
// vectorized loop (kBlockVec; registers capped for kTopkBlockVecThreadsPerSm threads an SM),
// else the scalar one (kBlock).
template <typename Bits, int kThreads, bool kVector>
__global__ void __launch_bounds__(kThreads, kVector ? kTopkBlockVecThreadsPerSm / kThreads : 1)
    topk_rows_kernel(TopkCall call, TopkOrder<Bits> order, int cap, int max_samples) {
  grid_prologue();
  extern __shared__ __align__(16) unsigned char shared[];
  __shared__ BlockScalars sc;
  __shared__ BlockScanStorage<int, kThreads> scan;
  const BlockBuffers<Bits> buf(shared, cap, max_samples);
  const Bits* keys = static_cast<const Bits*>(call.keys);
  Bits* values = static_cast<Bits*>(call.out_values);
  const int k = static_cast<int>(call.k);
  for (int64_t row = blockIdx.x; row < call.rows; row += gridDim.x) {
    const RowSource<Bits> src{keys + row * call.length, order};
    block_topk<Bits, kThreads, kVector>(src, call.length, k, cap, max_samples, buf, sc, scan,
                                        values + row * call.k, call.out_indices + row * call.k);
  }
}

// ------------------------------------------------------------------ the grid of a row

// Where a grid call's rows keep their state and candidates (tuning/workspace.h TopkLayout).
template <typename Bits>
struct GridRows {
  TopkRowState* states;
  Bits* cand_keys;         // rows x capacity
  int32_t* cand_indices;   // rows x capacity
  int32_t* tile_ties;      // rows x tiles
  int64_t capacity, tiles;
};

// 1. A block a row: kTopkGridSamples samples (fewer in a short row), the threshold their
// rank-th largest; the row's state reset (and the stream filter's count of blocks done, in row
// 0's). kFast (the stream strategy): samples placed by shifts where their count is a power of
// two, four loads in flight a thread.
template <typename Bits, bool kFast>
__global__ void __launch_bounds__(kTopkSampleThreads)
    topk_sample_kernel(TopkCall call, TopkOrder<Bits> order, GridRows<Bits> g, int64_t samples,
                       int rank) {
  grid_prologue();
  extern __shared__ __align__(16) unsigned char shared[];
  __shared__ BlockScalars sc;
  constexpr int kBins = 1 << kTopkBlockRadixBits;
  int* hist = reinterpret_cast<int*>(shared);  // (first: aligned whatever the samples' count)
  Bits* sample = reinterpret_cast<Bits*>(shared + kBins * 4);
  const int64_t row = blockIdx.x;
  const Bits* x = static_cast<const Bits*>(call.keys) + row * call.length;
  const int shift = kFast ? topk_log2_exact(samples) : -1;
  if (shift >= 0) {
#pragma unroll 4
    for (int64_t j = threadIdx.x; j < samples; j += kTopkSampleThreads) {
      sample[j] = order.key(__ldg(x + topk_sample_position_pow2(j, call.length, shift)));
    }
  } else {
    for (int64_t j = threadIdx.x; j < samples; j += kTopkSampleThreads) {
      sample[j] = order.key(__ldg(x + topk_sample_position(j, call.length, samples)));
    }
  }
  __syncthreads();
  Bits threshold;
  int unused;
  block_radix_select<Bits, kTopkSampleThreads, kTopkBlockRadixBits>(
      samples, rank, [&](int64_t j) { return sample[j]; }, hist, sc, threshold, unused);
  TopkRowState& st = g.states[row];
  if (threadIdx.x == 0) {
    st.threshold = threshold;
    st.prefix = 0;
    st.count = 0;
    st.exact = 0;
    st.need = static_cast<int32_t>(call.k);
    st.above = 0;
    st.ticket = 0;
    st.filtered = 0;
    st.greater = 0;
    st.settled = 0;
  }
  for (int b = threadIdx.x; b < (1 << kTopkRadixBits); b += kTopkSampleThreads) st.hist[b] = 0;
}

// The order keys of a tile's keys, kTopkFilterItems a thread, strided by the block (coalesced):
// item i of thread t is key tile * kTopkTile + i * kTopkFilterThreads + t; past the row: valid
// false.
template <typename Bits>
__device__ __forceinline__ void load_tile(const Bits* x, int64_t length, int64_t tile,
                                          TopkOrder<Bits> order, Bits (&u)[kTopkFilterItems],
                                          bool (&valid)[kTopkFilterItems]) {
  const int64_t start = tile * kTopkTile + threadIdx.x;
#pragma unroll
  for (int i = 0; i < kTopkFilterItems; ++i) {
    const int64_t p = start + int64_t{i} * kTopkFilterThreads;
    valid[i] = p < length;
    u[i] = valid[i] ? order.key(__ldg(x + p)) : Bits(0);
  }
}

__device__ __forceinline__ int64_t tile_key(int64_t tile, int i) {
  return tile * kTopkTile + int64_t{i} * kTopkFilterThreads + threadIdx.x;
}

// 2. A block a tile (row-major over rows x tiles): the keys >= the row's threshold, counted, a
// block scan for their places, one atomic a block for the block's first place among the row's
// candidates (written while below the capacity).
template <typename Bits>
__global__ void __launch_bounds__(kTopkFilterThreads)
    topk_filter_kernel(TopkCall call, TopkOrder<Bits> order, GridRows<Bits> g) {
  grid_prologue();
  __shared__ BlockScanStorage<int, kTopkFilterThreads> scan;
  __shared__ int first;
  const int64_t row = blockIdx.x / g.tiles, tile = blockIdx.x % g.tiles;
  const Bits threshold = static_cast<Bits>(g.states[row].threshold);
  const Bits* x = static_cast<const Bits*>(call.keys) + row * call.length;
  Bits u[kTopkFilterItems];
  bool valid[kTopkFilterItems];
  load_tile(x, call.length, tile, order, u, valid);
  int mine = 0;
#pragma unroll
  for (int i = 0; i < kTopkFilterItems; ++i) mine += valid[i] && u[i] >= threshold;
  if (!__syncthreads_or(mine > 0)) return;
  int total = 0;
  int at = block_exclusive_sum<int, kTopkFilterThreads>(mine, total, scan);
  if (threadIdx.x == 0) first = atomicAdd(&g.states[row].count, total);
  __syncthreads();
  at += first;
  Bits* keys = g.cand_keys + row * g.capacity;
  int32_t* indices = g.cand_indices + row * g.capacity;
#pragma unroll
  for (int i = 0; i < kTopkFilterItems; ++i) {
    if (valid[i] && u[i] >= threshold) {
      if (at < g.capacity) {
        keys[at] = u[i];
        indices[at] = static_cast<int32_t>(tile_key(tile, i));
      }
      ++at;
    }
  }
}

// 2s. The stream strategy's filtering read (tuning/topk.h): one wave of blocks striding over
// chunks of kTopkStreamThreads x kVecs 16-byte vectors of a row (a row's chunks_per_row chunks,
// its last one partial), every load of a chunk issued before any is used (16-byte loads where
// `aligned`: the keys 16-byte aligned and, for several rows, every row; scalar loads at a row's
// end); each key's order key compared with its row's threshold, a count a thread, and a warp's
// survivors appended to the row's candidates with one atomic (places past the capacity counted,
// not written). The last block to finish flags the rows for the exact path (fewer than k
// candidates, or more than the capacity): the grid's decide kernel, without its launch.
template <typename Bits>
__global__ void __launch_bounds__(kTopkStreamThreads, kTopkStreamBlocksPerSm)
    topk_stream_filter_kernel(TopkCall call, TopkOrder<Bits> order, GridRows<Bits> g,
                              int64_t chunks_per_row, bool aligned) {
  grid_prologue();
  constexpr int kVec = kVectorKeys<Bits>;
  constexpr int kVecs = vectors_at_once<Bits>(kTopkStreamVecs);
  constexpr int kItems = kVecs * kVec;
  constexpr int64_t kChunk = int64_t{kTopkStreamThreads} * kItems;
  __shared__ int last;
  const int64_t chunks = call.rows * chunks_per_row;
  const int64_t length = call.length;
  int64_t row = -1;
  Bits threshold = 0;
  const Bits* x = nullptr;
  for (int64_t c = blockIdx.x; c < chunks; c += gridDim.x) {
    const int64_t r = c / chunks_per_row;
    if (r != row) {  // (block-uniform)
      row = r;
      threshold = static_cast<Bits>(g.states[row].threshold);
      x = static_cast<const Bits*>(call.keys) + row * length;
    }
    const int64_t start = (c - r * chunks_per_row) * kChunk;
    Bits* keys = g.cand_keys + row * g.capacity;
    int32_t* indices = g.cand_indices + row * g.capacity;
    filter_stretch<Bits, kTopkStreamThreads, kItems, true>(
        x, start, length, aligned, threshold, [&](int64_t p) { return __ldg(x + p); },
        [&](Bits b) { return order.key(b); }, &g.states[row].count, g.capacity,
        [&](int64_t at, Bits key, int64_t p) {
          keys[at] = key;
          indices[at] = static_cast<int32_t>(p);
        });
  }
  // The rows' flags, by the last block done (every thread's writes fenced before the count).
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    last = atomicAdd(&g.states[0].filtered, 1) == static_cast<int>(gridDim.x) - 1 ? 1 : 0;
  }
  __syncthreads();
  if (last) {
    __threadfence();
    for (int64_t r = threadIdx.x; r < call.rows; r += kTopkStreamThreads) {
      TopkRowState& st = g.states[r];
      const int count = *static_cast<volatile int*>(&st.count);
      st.exact = count < call.k || count > g.capacity ? 1 : 0;
    }
  }
}

// 3. A thread a row: the exact path for rows with fewer than k candidates or more than the
// capacity. (static, as the other kernel that is no template: the header is in two translation
// units.)
static __global__ void topk_decide_kernel(TopkRowState* states, int64_t rows, int64_t k,
                                          int64_t capacity) {
  grid_prologue();
  const int64_t row = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  TopkRowState& st = states[row];
  st.exact = st.count < k || st.count > capacity ? 1 : 0;
}

// The exact path's kernels run `per_row` blocks a row: block b takes the tiles b % per_row,
// b % per_row + per_row, ... of the rows b / per_row, b / per_row + gridDim.x / per_row, ...
// (gridDim.x a multiple of per_row); a row that does not take the exact path is skipped at once.
__device__ __forceinline__ int64_t first_row(int64_t per_row) { return blockIdx.x / per_row; }
__device__ __forceinline__ int64_t row_step(int64_t per_row) { return gridDim.x / per_row; }
__device__ __forceinline__ int64_t first_tile(int64_t per_row) { return blockIdx.x % per_row; }

// 3b. The flagged rows with more keys >= T than the capacity (T is at most their k-th key): a
// read counting the keys above T, and each tile's keys equal to it (tile_ties). Fewer than k
// above: the k-th key is T itself (ties at the top: equal keys, a few distinct values, a coarse
// distribution such as bfloat16 normals), and the row's last block settles it (prefix T, need k
// - above): the radix passes skip the row, and so does the tie count when no key is above T
// (the tiles' tie counts are this kernel's).
template <typename Bits>
__global__ void __launch_bounds__(kTopkFilterThreads, kTopkFallbackBlocksPerSm)
    topk_probe_kernel(TopkCall call, TopkOrder<Bits> order, GridRows<Bits> g, int64_t per_row) {
  grid_prologue();
  __shared__ BlockScanStorage<int, kTopkFilterThreads> scan;
  __shared__ int block_above;
  __shared__ int last;
  for (int64_t row = first_row(per_row); row < call.rows; row += row_step(per_row)) {
    TopkRowState& st = g.states[row];
    // (uniform) the other flagged rows have fewer than k keys >= T: T is above their k-th key
    if (!st.exact || st.count <= g.capacity) continue;
    const Bits threshold = static_cast<Bits>(st.threshold);
    const Bits* x = static_cast<const Bits*>(call.keys) + row * call.length;
    int32_t* ties = g.tile_ties + row * g.tiles;
    if (threadIdx.x == 0) block_above = 0;
    __syncthreads();
    int above = 0;
    // kAtOnce of the block's tiles at a time (keys of up to 4 bytes: two), their loads in flight
    // together before the block sum (tile j's ties, at most kTopkTile, in bits 16 j of one int;
    // a tile past the row: no keys)
    constexpr int kAtOnce = sizeof(Bits) <= 4 ? 2 : 1;
    static_assert(kTopkTile < (1 << 15), "a tile's tie count in 16 bits");
    for (int64_t tile = first_tile(per_row); tile < g.tiles; tile += kAtOnce * per_row) {
      Bits u[kAtOnce][kTopkFilterItems];
      bool valid[kAtOnce][kTopkFilterItems];
#pragma unroll
      for (int j = 0; j < kAtOnce; ++j) {
        load_tile(x, call.length, tile + j * per_row, order, u[j], valid[j]);
      }
      int equal = 0;
#pragma unroll
      for (int j = 0; j < kAtOnce; ++j) {
#pragma unroll
        for (int i = 0; i < kTopkFilterItems; ++i) {
          above += valid[j][i] && u[j][i] > threshold;
          equal += (valid[j][i] && u[j][i] == threshold) << (16 * j);
        }
      }
      int total = 0;
      block_exclusive_sum<int, kTopkFilterThreads>(equal, total, scan);
      if (threadIdx.x == 0) {
#pragma unroll
        for (int j = 0; j < kAtOnce; ++j) {
          if (tile + j * per_row < g.tiles) ties[tile + j * per_row] = (total >> (16 * j)) & 0xffff;
        }
      }
      __syncthreads();  // (the scan's storage)
    }
    const int warp_above = warp_inclusive_sum(above);  // (lane 31: the warp's)
    if ((threadIdx.x & 31u) == 31u && warp_above != 0) atomicAdd(&block_above, warp_above);
    __syncthreads();
    if (threadIdx.x == 0 && block_above != 0) atomicAdd(&st.greater, block_above);
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
      last = atomicAdd(&st.ticket, 1) == static_cast<int>(per_row) - 1 ? 1 : 0;
    }
    __syncthreads();
    if (last && threadIdx.x == 0) {
      __threadfence();
      const int greater = *static_cast<volatile int*>(&st.greater);
      if (greater < call.k) {
        st.prefix = st.threshold;
        st.need = static_cast<int32_t>(call.k) - greater;
        st.settled = 1;
      }
      st.ticket = 0;
    }
    __syncthreads();
  }
}

// 4. One radix pass of kTopkRadixBits at `shift` (width bits) over the flagged rows: the
// block's histogram of the keys matching the prefix, added to the row's; the row's last block
// picks the digit (the row's histogram and ticket reset for the next pass).
template <typename Bits>
__global__ void __launch_bounds__(kTopkFilterThreads)
    topk_radix_pass_kernel(TopkCall call, TopkOrder<Bits> order, GridRows<Bits> g,
                           int64_t per_row, int shift, int width) {
  grid_prologue();
  constexpr int kBins = 1 << kTopkRadixBits;
  __shared__ int hist[kBins];
  __shared__ BlockScalars sc;
  const Bits above_mask = high_mask<Bits>(shift + width);
  const Bits dmask = digit_mask<Bits>(width);
  for (int64_t row = first_row(per_row); row < call.rows; row += row_step(per_row)) {
    TopkRowState& st = g.states[row];
    if (!st.exact || st.settled) continue;
    const Bits prefix = static_cast<Bits>(st.prefix);
    for (int b = threadIdx.x; b < kBins; b += kTopkFilterThreads) hist[b] = 0;
    __syncthreads();
    const Bits* x = static_cast<const Bits*>(call.keys) + row * call.length;
    for (int64_t tile = first_tile(per_row); tile < g.tiles; tile += per_row) {
      Bits u[kTopkFilterItems];
      bool valid[kTopkFilterItems];
      load_tile(x, call.length, tile, order, u, valid);
#pragma unroll
      for (int i = 0; i < kTopkFilterItems; ++i) {
        if (valid[i] && (u[i] & above_mask) == prefix) {
          atomicAdd(&hist[(u[i] >> shift) & dmask], 1);
        }
      }
    }
    __syncthreads();
    for (int b = threadIdx.x; b < kBins; b += kTopkFilterThreads) {
      if (hist[b] != 0) atomicAdd(&st.hist[b], hist[b]);
    }
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
      sc.last = atomicAdd(&st.ticket, 1) == static_cast<int>(per_row) - 1 ? 1 : 0;
    }
    __syncthreads();
    if (sc.last) {
      __threadfence();
      volatile int* row_hist = st.hist;
      if (threadIdx.x < 32) {
        warp_find_digit<kBins>([&](int b) { return row_hist[b]; }, st.need, sc);
      }
      __syncthreads();
      if (threadIdx.x == 0) {
        st.prefix = static_cast<uint64_t>(
            static_cast<Bits>(prefix | static_cast<Bits>(static_cast<Bits>(sc.digit) << shift)));
        st.need -= sc.above;
        st.ticket = 0;
      }
      for (int b = threadIdx.x; b < kBins; b += kTopkFilterThreads) st.hist[b] = 0;
    }
    __syncthreads();
  }
}

// A row on the exact path: its state, its k-th order key (the radix passes' prefix), its keys,
// its candidates and its tiles' tie counts.
template <typename Bits>
struct FlaggedRow {
  TopkRowState& st;
  Bits kth;
  const Bits* x;
  Bits* keys;
  int32_t* indices;
  int32_t* ties;
};

template <typename Bits>
__device__ FlaggedRow<Bits> flagged_row(const TopkCall& call, const GridRows<Bits>& g,
                                        int64_t row) {
  TopkRowState& st = g.states[row];
  return {st, static_cast<Bits>(st.prefix),
          static_cast<const Bits*>(call.keys) + row * call.length, g.cand_keys + row * g.capacity,
          g.cand_indices + row * g.capacity, g.tile_ties + row * g.tiles};
}

// body(the row) for every row on the exact path among this block's (per_row blocks a row); a row
// off it is skipped at once (uniform: every thread reads the same flag).
template <typename Bits, typename Body>
__device__ void each_flagged_row(const TopkCall& call, const GridRows<Bits>& g, int64_t per_row,
                                 const Body& body) {
  for (int64_t row = first_row(per_row); row < call.rows; row += row_step(per_row)) {
    if (g.states[row].exact) body(flagged_row(call, g, row));
  }
}

// 5. A flagged row's tiles: the keys above the k-th (in any order, one atomic a block) to the
// front of the candidates, and each tile's count of keys equal to it.
template <typename Bits>
__global__ void __launch_bounds__(kTopkFilterThreads)
    topk_tie_count_kernel(TopkCall call, TopkOrder<Bits> order, GridRows<Bits> g,
                          int64_t per_row) {
  grid_prologue();
  __shared__ BlockScanStorage<int, kTopkFilterThreads> scan;
  __shared__ int first;
  each_flagged_row(call, g, per_row, [&](const FlaggedRow<Bits>& r) {
    // (uniform) a settled row with no key above T: the probe counted the tiles' ties; with
    // keys above T this kernel writes them and counts the same ties again
    if (r.st.settled && r.st.greater == 0) return;
    const Bits kth = r.kth;
    for (int64_t tile = first_tile(per_row); tile < g.tiles; tile += per_row) {
      Bits u[kTopkFilterItems];
      bool valid[kTopkFilterItems];
      load_tile(r.x, call.length, tile, order, u, valid);
      int above = 0, equal = 0;
#pragma unroll
      for (int i = 0; i < kTopkFilterItems; ++i) {
        above += valid[i] && u[i] > kth;
        equal += valid[i] && u[i] == kth;
      }
      int total = 0;
      int at = block_exclusive_sum<int, kTopkFilterThreads>(above, total, scan);
      __syncthreads();
      int ties = 0;
      block_exclusive_sum<int, kTopkFilterThreads>(equal, ties, scan);
      if (threadIdx.x == 0) {
        r.ties[tile] = ties;
        first = total > 0 ? atomicAdd(&r.st.above, total) : 0;
      }
      __syncthreads();
      at += first;
#pragma unroll
      for (int i = 0; i < kTopkFilterItems; ++i) {
        if (valid[i] && u[i] > kth) {
          r.keys[at] = u[i];
          r.indices[at] = static_cast<int32_t>(tile_key(tile, i));
          ++at;
        }
      }
    }
  });
}

// 6. A block a flagged row: the tiles' tie counts made exclusive prefixes (in place); the row's
// candidates will be k.
static __global__ void __launch_bounds__(kTopkSampleThreads)
    topk_tie_scan_kernel(TopkRowState* states, int32_t* tile_ties, int64_t rows, int64_t tiles,
                         int64_t k) {
  grid_prologue();
  __shared__ BlockScanStorage<int, kTopkSampleThreads> scan;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    TopkRowState& st = states[row];
    if (!st.exact) continue;
    int32_t* ties = tile_ties + row * tiles;
    int carry = 0;
    for (int64_t base = 0; base < tiles; base += kTopkSampleThreads) {
      const int64_t t = base + threadIdx.x;
      const int mine = t < tiles ? ties[t] : 0;
      int total = 0;
      const int before = block_exclusive_sum<int, kTopkSampleThreads>(mine, total, scan);
      if (t < tiles) ties[t] = carry + before;
      carry += total;
      __syncthreads();
    }
    if (threadIdx.x == 0) st.count = static_cast<int32_t>(k);
  }
}

// 7. A flagged row's tiles: the keys equal to the k-th, in index order, while their rank among
// the row's is below `need`, after the keys above it.
template <typename Bits>
__global__ void __launch_bounds__(kTopkFilterThreads)
    topk_tie_write_kernel(TopkCall call, TopkOrder<Bits> order, GridRows<Bits> g,
                          int64_t per_row) {
  grid_prologue();
  __shared__ BlockScanStorage<int, kTopkFilterThreads> scan;
  each_flagged_row(call, g, per_row, [&](const FlaggedRow<Bits>& r) {
    const int need = r.st.need;
    const int greater = static_cast<int>(call.k) - need;
    for (int64_t tile = first_tile(per_row); tile < g.tiles; tile += per_row) {
      int rank = r.ties[tile];
      if (rank >= need) continue;  // (uniform: every thread reads the same count)
      for (int i = 0; i < kTopkFilterItems; ++i) {
        const int64_t p = tile_key(tile, i);
        const bool eq = p < call.length && order.key(__ldg(r.x + p)) == r.kth;
        int total = 0;
        const int ordinal = block_exclusive_sum<int, kTopkFilterThreads>(eq ? 1 : 0, total, scan);
        if (eq && rank + ordinal < need) {
          r.keys[greater + rank + ordinal] = r.kth;
          r.indices[greater + rank + ordinal] = static_cast<int32_t>(p);
        }
        rank += total;
        __syncthreads();
      }
    }
  });
}

// 8a. k <= kTopkFinalMaxK: a block a row, block_topk over the row's candidates (kVector: its
// vectorized loop, the stream strategy's).
template <typename Bits, bool kVector>
__global__ void __launch_bounds__(kTopkFinalThreads)
    topk_final_kernel(TopkCall call, GridRows<Bits> g) {
  grid_prologue();
  extern __shared__ __align__(16) unsigned char shared[];
  __shared__ BlockScalars sc;
  __shared__ BlockScanStorage<int, kTopkFinalThreads> scan;
  const BlockBuffers<Bits> buf(shared, kTopkBlockMaxCap, kTopkBlockMaxSamples);
  const int64_t row = blockIdx.x;
  const CandidateSource<Bits> src{g.cand_keys + row * g.capacity,
                                  g.cand_indices + row * g.capacity,
                                  static_cast<const Bits*>(call.keys) + row * call.length};
  const int64_t count = g.states[row].count;
  block_topk<Bits, kTopkFinalThreads, kVector>(
      src, count, static_cast<int>(call.k), kTopkBlockMaxCap, kTopkBlockMaxSamples, buf, sc, scan,
      static_cast<Bits*>(call.out_values) + row * call.k, call.out_indices + row * call.k);
}

// 8b. Larger k: the candidates as keys of the merge sort (ascending), `capacity` a row, the
// places past the row's count padded to sort last. Keys of up to 4 bytes: one uint64 a
// candidate, (complemented order key) << 32 | index; 8-byte keys: the index (uint32, to sort by
// first) and the order key (uint64, the value).
template <typename Bits>
__global__ void topk_compose_kernel(GridRows<Bits> g, int64_t rows, uint64_t* composite,
                                    uint32_t* by_index, uint64_t* keys_of) {
  grid_prologue();
  const int64_t at = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (at >= rows * g.capacity) return;
  const int64_t row = at / g.capacity, p = at % g.capacity;
  const bool real = p < g.states[row].count;
  const Bits key = real ? g.cand_keys[at] : Bits(0);
  const uint32_t index = real ? static_cast<uint32_t>(g.cand_indices[at]) : 0xffffffffu;
  if constexpr (sizeof(Bits) <= 4) {
    (void)by_index;
    (void)keys_of;
    composite[at] = real ? (static_cast<uint64_t>(static_cast<Bits>(~key)) << 32) | index
                         : ~uint64_t{0};
  } else {
    (void)composite;
    by_index[at] = index;
    keys_of[at] = key;
  }
}

// 8c. The first k of the sorted candidates: their indices (the low half of the composite, or the
// sort's index payload) and the bits at them.
template <typename Bits>
__global__ void topk_emit_kernel(TopkCall call, int64_t capacity, const uint64_t* composite,
                                 const uint32_t* indices) {
  grid_prologue();
  const int64_t at = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (at >= call.rows * call.k) return;
  const int64_t row = at / call.k, j = at % call.k;
  const int64_t from = row * capacity + j;
  const int32_t index = static_cast<int32_t>(
      sizeof(Bits) <= 4 ? static_cast<uint32_t>(composite[from]) : indices[from]);
  call.out_indices[at] = index;
  static_cast<Bits*>(call.out_values)[at] =
      __ldg(static_cast<const Bits*>(call.keys) + row * call.length + index);
}

}  // namespace topk
}  // namespace jax_mergepath
