// topk_regs.cuh (level: kernels): the registers strategy of the CUDA top_k (tuning/topk.h kRegs):
// a group of kGroup threads a row (a warp, kTopkRegsWarps rows a block, or the whole block), each
// thread holding kItems keys of its row in registers, so the row is read once and every later
// step works on registers and a small shared buffer:
//   1. the loads: kVec keys a load (16 bytes, fewer for a few narrow keys), item i of thread t the
//      key (i / kVec) kGroup kVec + t kVec + i % kVec of the row; order keys as they load
//      (TopkOrder::key), keys past the row 0 and never taken;
//   2. T, the k-th largest of the threads' largest order keys: for k <= 32 group_kth_of_32 (a
//      warp's bitonic sort by shuffles; a block's warps' sorted 32 merged pairwise in shared
//      memory), else a bitwise search, one __syncthreads_count a bit. At least k keys are >= T
//      (the k threads whose largest key is), so the k first are among them: T = 0 (fewer than k
//      threads hold keys) takes every key;
//   3. the keys >= T appended to the row's shared buffer (one shared atomic a thread that has
//      some), each ranked by counting the buffered pairs before it (order key descending, index
//      ascending: a total order, so the ranks are distinct) and written at its rank when below
//      k, its value the key's bits read again at its index;
//   4. more than kTopkRegsRankFactor x k keys >= T (heavy ties): the exact path: the k-th largest
//      order key (T itself when fewer than k keys are above T, one group sum; else the same
//      search over every key, group sums of each thread's count), the keys above it (fewer than
//      k) and the first ties in index order (a group scan of each load's ties), exactly k pairs,
//      ranked as in 3;
//   5. 8-byte keys: a register holds a 32-bit word of an order key (RegsWord), so a thread's
//      keys take the registers of 4-byte keys; the buffer holds whole order keys, read again at
//      their indices. The word: the high word, or, where the row's high words span fewer than
//      2^kTopkRegsNarrowBits values (a group's min and max), the key's offset from the lowest
//      high word shifted right by the span's bits (the row read again). Steps 2-4 run on the
//      words; in step 4 the words' ties are not ties of the keys: the keys above the k-th word
//      are buffered (fewer than k), and the ties' shifted-out bits, read again (the row's other
//      items out), take the registers for a second level of steps 2-4, which selects the
//      remaining pairs among them.
// Every thread of a group calls every group step (warps: ballots and shuffles of all 32 lanes,
// __syncwarp; blocks: __syncthreads). The kernel starts with grid_prologue() (grid_launch.cuh).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "topk_kernels.cuh"

namespace jax_mergepath {
namespace topk {

// What a group of kGroup threads (a warp, or the whole block) does together. `sums`: kGroup / 32
// ints of shared memory (block groups).
template <int kGroup>
struct RegsGroup {
  static constexpr bool kWarp = kGroup == 32;
  int* sums;

  __device__ void sync() const {
    if constexpr (kWarp) {
      __syncwarp();
    } else {
      __syncthreads();
    }
  }

  // The group's threads with pred true.
  __device__ int count(bool pred) const {
    if constexpr (kWarp) {
      return __popc(__ballot_sync(kFullMask, pred));
    } else {
      return __syncthreads_count(pred ? 1 : 0);
    }
  }

  // The sum of v over the group, for every thread.
  __device__ int sum(int v) const {
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) v += __shfl_xor_sync(kFullMask, v, d);
    if constexpr (kWarp) {
      return v;
    } else {
      if ((threadIdx.x & 31u) == 0) sums[threadIdx.x >> 5] = v;
      __syncthreads();
      int total = 0;
#pragma unroll
      for (int w = 0; w < kGroup / 32; ++w) total += sums[w];
      __syncthreads();  // (sums is written again by the next sum)
      return total;
    }
  }

  // The lowest lo and the highest hi of the group, for every thread. `spans`: 2 kGroup / 32
  // words of shared memory (block groups), written again only after the group has synced.
  __device__ void min_max(uint32_t& lo, uint32_t& hi, uint32_t* spans) const {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    lo = __reduce_min_sync(kFullMask, lo);
    hi = __reduce_max_sync(kFullMask, hi);
#else
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) {
      lo = min(lo, __shfl_xor_sync(kFullMask, lo, d));
      hi = max(hi, __shfl_xor_sync(kFullMask, hi, d));
    }
#endif
    if constexpr (!kWarp) {
      constexpr int kWarps = kGroup / 32;
      if ((threadIdx.x & 31u) == 0) {
        spans[threadIdx.x >> 5] = lo;
        spans[kWarps + (threadIdx.x >> 5)] = hi;
      }
      __syncthreads();
#pragma unroll
      for (int w = 0; w < kWarps; ++w) {
        lo = min(lo, spans[w]);
        hi = max(hi, spans[kWarps + w]);
      }
    }
  }

  // The sum of v over the threads before this one (thread order); total: over all.
  __device__ int exclusive(int v, int& total, BlockScanStorage<int, kGroup>& scan) const {
    if constexpr (kWarp) {
      const int inclusive = warp_inclusive_sum(v);
      total = __shfl_sync(kFullMask, inclusive, 31);
      return inclusive - v;
    } else {
      const int before = block_exclusive_sum<int, kGroup>(v, total, scan);
      __syncthreads();  // (the scan's storage)
      return before;
    }
  }
};

// A warp's lanes exchange a word of up to 4 bytes: lane `lane`'s, or with xor_lanes the word of
// this lane XOR `lane`.
template <typename Bits>
__device__ __forceinline__ Bits shfl_key(Bits v, int lane, bool xor_lanes) {
  static_assert(sizeof(Bits) <= 4, "registers hold words of up to 4 bytes");
  const unsigned w = static_cast<unsigned>(v);
  return static_cast<Bits>(xor_lanes ? __shfl_xor_sync(kFullMask, w, lane)
                                     : __shfl_sync(kFullMask, w, lane));
}

// The bitonic merge of a warp's 32 keys (a lane each) that form a bitonic sequence, largest
// first, strides from `stride` down (sequences of 2 stride keys each sorted: lanes with
// `size` set descending where `alternate`, else all largest first).
template <typename Bits>
__device__ __forceinline__ Bits warp_bitonic_merge(Bits v, int size, bool alternate) {
  const int lane = static_cast<int>(threadIdx.x & 31u);
  const bool largest_first = !alternate || (lane & size) == 0;
#pragma unroll
  for (int stride = size >> 1; stride > 0; stride >>= 1) {
    const Bits other = shfl_key(v, stride, true);
    const bool lower = (lane & stride) == 0;
    v = (lower == largest_first) == (other > v) ? other : v;
  }
  return v;
}

// The warp's 32 keys (a lane each) sorted largest first: lane j gets the (j + 1)-th largest.
template <typename Bits>
__device__ __forceinline__ Bits warp_sort_largest_first(Bits v) {
#pragma unroll
  for (int size = 2; size < 32; size <<= 1) v = warp_bitonic_merge(v, size, true);
  return warp_bitonic_merge(v, 32, false);
}

// The k-th largest (1 <= k <= 32) of the group's `most` (a key a thread), for every thread of
// the group, as bitwise_kth finds it: a warp sorts its 32 (bitonic, by shuffles); a block's
// warps' sorted 32 are merged pairwise in `lists` (kGroup keys of shared memory), each merge
// keeping the 32 largest (the larger of a's j-th and b's (33 - j)-th, a bitonic sequence holding
// them, then sorted), log2(kGroup / 32) rounds.
template <typename Bits, int kGroup>
__device__ __forceinline__ Bits group_kth_of_32(Bits most, int k, Bits* lists) {
  const int lane = static_cast<int>(threadIdx.x & 31u);
  Bits v = warp_sort_largest_first(most);
  if constexpr (kGroup == 32) {
    return shfl_key(v, k - 1, false);
  } else {
    const int warp = static_cast<int>(threadIdx.x >> 5);
    lists[threadIdx.x] = v;
#pragma unroll
    for (int width = 1; width < kGroup / 32; width <<= 1) {
      __syncthreads();
      if (warp % (2 * width) == 0) {  // (warp + width < kGroup / 32: kGroup / 32 a power of two)
        const Bits b = lists[(warp + width) * 32 + 31 - lane];
        v = warp_bitonic_merge(v > b ? v : b, 32, false);
        lists[threadIdx.x] = v;
      }
    }
    __syncthreads();
    const Bits kth = lists[k - 1];
    __syncthreads();  // (lists is the next row's)
    return kth;
  }
}

// The word a load of kBytes (4, 8 or 16) reads.
template <int kBytes>
struct LoadWord;
template <>
struct LoadWord<4> {
  using type = uint32_t;
};
template <>
struct LoadWord<8> {
  using type = uint2;
};
template <>
struct LoadWord<16> {
  using type = uint4;
};

// kKeys keys at p (aligned to their bytes) in one read-only load.
template <typename Bits, int kKeys>
__device__ __forceinline__ void load_keys(const Bits* p, Bits (&out)[kKeys]) {
  using Word = typename LoadWord<kKeys * int(sizeof(Bits))>::type;
  const Word w = __ldg(reinterpret_cast<const Word*>(p));
  memcpy(out, &w, sizeof(Word));
}

// Keys a load of kRegs: 16 bytes, or kItems keys where they are fewer (at least 4 bytes).
template <typename Bits, int kItems>
constexpr int regs_load_keys() {
  constexpr int full = kVectorKeys<Bits>;
  constexpr int keys = kItems < full ? kItems : full;
  return keys * int(sizeof(Bits)) >= 4 ? keys : 4 / int(sizeof(Bits));
}

// The word a register holds of an order key: all of it, or the high word of 8 bytes.
template <typename Bits>
using RegsWord = std::conditional_t<sizeof(Bits) == 8, uint32_t, Bits>;

template <typename Word, typename Bits>
__device__ __forceinline__ Word regs_word(Bits key) {
  if constexpr (sizeof(Word) == sizeof(Bits)) {
    return key;
  } else {
    return static_cast<Word>(key >> (8 * (sizeof(Bits) - sizeof(Word))));
  }
}

// kRegs: a group of kGroup threads a row, kItems keys a thread (the file's top comment). aligned:
// every row starts 16-byte aligned (the keys' loads may be whole words; else one key a load).
// Block groups' register cap: tuning/topk.h (blocks an SM; 0, for warp groups, none).
template <typename Bits, int kGroup, int kItems>
__global__ void __launch_bounds__(kGroup == 32 ? 32 * kTopkRegsWarps : kGroup,
                                  kGroup == 32 ? 0 : topk_regs_block_groups_per_sm(sizeof(Bits),
                                                                                   kGroup))
    topk_regs_kernel(TopkCall call, TopkOrder<Bits> order, bool aligned) {
  grid_prologue();
  constexpr bool kWarp = kGroup == 32;
  constexpr int kRows = kWarp ? kTopkRegsWarps : 1;  // rows a block at once
  constexpr int kVec = regs_load_keys<Bits, kItems>();
  constexpr int kLoads = kItems / kVec;
  constexpr int kCap = 2 * kGroup;  // buffered pairs a row
  static_assert(kItems % kVec == 0 && kItems <= 32, "whole loads a thread, a bit an item");
  static_assert(kTopkRegsRankFactor * kGroup <= kCap * kTopkRegsKDivisor,
                "the buffer holds kTopkRegsRankFactor x k pairs for every k of the group");
  // 8-byte keys: the registers hold 32-bit words of the order keys (the file's top comment, 5.)
  constexpr bool kSplit = sizeof(Bits) == 8;
  using Word = RegsWord<Bits>;
  __shared__ Bits cand_keys[kRows][kCap];
  __shared__ int32_t cand_indices[kRows][kCap];
  __shared__ int counts[kRows];
  __shared__ Word thresholds[kRows];
  __shared__ int sums[kGroup / 32];
  __shared__ uint32_t spans[kSplit && kGroup > 32 ? 2 * kGroup / 32 : 1];
  __shared__ Bits bases[kSplit ? kRows : 1];  // (kSplit's words: the row's base and shift)
  __shared__ int shifts[kSplit ? kRows : 1];
  __shared__ Word lists[kGroup == 32 ? 1 : kGroup];  // (block groups: group_kth_of_32)
  __shared__ BlockScanStorage<int, kGroup> scan;
  const int slot = kWarp ? static_cast<int>(threadIdx.x >> 5) : 0;
  const int t = kWarp ? static_cast<int>(threadIdx.x & 31u) : static_cast<int>(threadIdx.x);
  const RegsGroup<kGroup> group{sums};
  const int k = static_cast<int>(call.k);
  const int64_t length = call.length;
  Bits* keys = cand_keys[slot];
  int32_t* indices = cand_indices[slot];
  auto position = [&](int i) {
    return int64_t{i / kVec} * kGroup * kVec + int64_t{t} * kVec + i % kVec;
  };
  for (int64_t row = int64_t{blockIdx.x} * kRows + slot; row < call.rows;
       row += int64_t{gridDim.x} * kRows) {
    const Bits* x = static_cast<const Bits*>(call.keys) + row * length;
    // 1. the keys (kSplit: each one's word as it loads; narrower keys made order keys below, as
    // they were before the words: the same registers)
    Word u[kItems];
#pragma unroll
    for (int v = 0; v < kLoads; ++v) {
      const int64_t p0 = position(v * kVec);
      Bits raw[kVec];
      if (aligned && p0 + kVec <= length) {
        load_keys<Bits, kVec>(x + p0, raw);
      } else {
#pragma unroll
        for (int e = 0; e < kVec; ++e) raw[e] = p0 + e < length ? __ldg(x + p0 + e) : Bits(0);
      }
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        u[v * kVec + e] = kSplit ? regs_word<Word>(order.key(raw[e])) : regs_word<Word>(raw[e]);
      }
    }
    unsigned valid = 0;  // bit i: item i is a key of the row (kSplit's second level: a tie)
#pragma unroll
    for (int i = 0; i < kItems; ++i) {
      valid |= static_cast<unsigned>(position(i) < length) << i;
      const Word key = kSplit ? u[i] : regs_word<Word>(order.key(static_cast<Bits>(u[i])));
      u[i] = (valid >> i) & 1u ? key : Word(0);
    }
    auto in_row = [&](int i) { return ((valid >> i) & 1u) != 0; };
    // An item's whole order key (kSplit: read again).
    auto whole_key = [&](int i) -> Bits {
      if constexpr (kSplit) {
        return order.key(__ldg(x + position(i)));
      } else {
        return u[i];
      }
    };
    // kSplit: a word is (order key - base) >> shift; the second level's, of the first's ties,
    // (order key - base) mod 2^shift. The high words (base 0, shift 32), unless the row's span
    // fewer than 2^kTopkRegsNarrowBits values: then the keys' offsets from the lowest high word
    // (base), shifted to 32 bits (shift: the span's bits), read again. (Both kept in shared
    // memory for the second level: no registers held for them.)
    if constexpr (kSplit) {
      uint32_t lowest = ~0u, highest = 0;
#pragma unroll
      for (int i = 0; i < kItems; ++i) {
        lowest = in_row(i) ? min(lowest, u[i]) : lowest;
        highest = in_row(i) ? max(highest, u[i]) : highest;
      }
      group.min_max(lowest, highest, spans);  // (spans: the next row's after the row's syncs)
      const uint32_t span = highest - lowest;  // (every row holds a key: k <= length)
      const bool narrow = span < (1u << kTopkRegsNarrowBits);
      const Bits base = narrow ? static_cast<Bits>(lowest) << 32 : Bits(0);
      const int shift = narrow ? 32 - __clz(span) : 32;
      if (t == 0) {
        bases[slot] = base;
        shifts[slot] = shift;
      }
      if (narrow) {
#pragma unroll
        for (int i = 0; i < kItems; ++i) {
          u[i] = in_row(i) ? static_cast<Word>((whole_key(i) - base) >> shift) : Word(0);
        }
      }
    }
    int settled = 0;  // pairs buffered by kSplit's first level, all in the result
    int need = k;     // the result's pairs still to find among the registers' words
    int count;
    for ([[maybe_unused]] bool first = true;; first = false) {
      // 2. T: the need-th largest of the threads' largest words
      Word most = 0;
#pragma unroll
      for (int i = 0; i < kItems; ++i) most = u[i] > most ? u[i] : most;
      const Word threshold =
          need <= 32 ? group_kth_of_32<Word, kGroup>(most, need, lists)
                     : bitwise_kth<Word>(need, [&](Word c) { return group.count(most >= c); });
      // 3. the keys >= T, buffered
      int mine = 0;
#pragma unroll
      for (int i = 0; i < kItems; ++i) mine += in_row(i) && u[i] >= threshold;
      if (t == 0) {
        counts[slot] = settled;
        thresholds[slot] = threshold;
      }
      group.sync();
      if (mine > 0) {
        int at = atomicAdd(&counts[slot], mine);
#pragma unroll
        for (int i = 0; i < kItems; ++i) {
          if (in_row(i) && u[i] >= threshold) {
            if (at < kCap) {
              keys[at] = whole_key(i);
              indices[at] = static_cast<int32_t>(position(i));
            }
            ++at;
          }
        }
      }
      group.sync();
      count = counts[slot];
      if (count <= kTopkRegsRankFactor * k) break;
      // 4. the exact path: the need-th largest word, the words above it, the first ties. At
      // least need words are >= T, so T is the need-th when fewer than need are above it (ties
      // at the top): one group sum settles the row; else the bitwise search.
      auto at_least = [&](Word c) {
        int n = 0;
#pragma unroll
        for (int i = 0; i < kItems; ++i) n += in_row(i) && u[i] >= c;
        return group.sum(n);
      };
      const Word tie = thresholds[slot];  // (T from shared memory: no register held for it)
      const bool probed = tie == Word(~Word(0)) || at_least(Word(tie + 1)) < need;
      const Word kth = probed ? tie : bitwise_kth<Word>(need, at_least);
      int above = 0;
#pragma unroll
      for (int i = 0; i < kItems; ++i) above += in_row(i) && u[i] > kth;
      const int greater = group.sum(above);  // < need
      group.sync();  // (every thread has read counts[slot] and is done with the buffer)
      if (t == 0) counts[slot] = settled;
      group.sync();
      if (above > 0) {
        int at = atomicAdd(&counts[slot], above);
#pragma unroll
        for (int i = 0; i < kItems; ++i) {
          if (in_row(i) && u[i] > kth) {
            keys[at] = whole_key(i);
            indices[at] = static_cast<int32_t>(position(i));
            ++at;
          }
        }
      }
      if constexpr (kSplit) {
        const int shift = shifts[slot];
        if (first && shift > 0) {  // 5. the words' ties: their low bits, the second level
          settled += greater;
          need -= greater;
          const Bits base = bases[slot];
          const Bits low_bits = (Bits(1) << shift) - 1;
#pragma unroll
          for (int i = 0; i < kItems; ++i) {
            const bool tied = in_row(i) && u[i] == kth;
            valid &= ~(static_cast<unsigned>(!tied) << i);
            u[i] = tied ? static_cast<Word>((whole_key(i) - base) & low_bits) : Word(0);
          }
          group.sync();  // (counts[slot] is the next level's)
          continue;
        }
      }
      int ties = 0;  // the ties in the loads before this one, all threads
#pragma unroll
      for (int v = 0; v < kLoads; ++v) {
        int equal = 0;
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          equal += in_row(v * kVec + e) && u[v * kVec + e] == kth;
        }
        int total = 0;
        int rank = ties + group.exclusive(equal, total, scan);
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          const int i = v * kVec + e;
          if (in_row(i) && u[i] == kth) {
            if (rank < need - greater) {
              keys[settled + greater + rank] = whole_key(i);
              indices[settled + greater + rank] = static_cast<int32_t>(position(i));
            }
            ++rank;
          }
        }
        ties += total;
      }
      group.sync();
      count = k;
      break;
    }
    // the ranks: the pairs before each one
    Bits* out_values = static_cast<Bits*>(call.out_values) + row * call.k;
    int32_t* out_indices = call.out_indices + row * call.k;
    for (int j = t; j < count; j += kGroup) {
      const Bits key = keys[j];
      const int32_t index = indices[j];
      int rank = 0;
      for (int c = 0; c < count; ++c) {
        const Bits other = keys[c];
        rank += other > key || (other == key && indices[c] < index);
      }
      if (rank < k) {
        out_indices[rank] = index;
        out_values[rank] = __ldg(x + index);
      }
    }
    group.sync();  // (the buffer and counts[slot] are the next row's)
  }
}

template <typename Bits, int kGroup, int kItems>
cudaError_t launch_regs(const TopkCall& call, TopkOrder<Bits> order, bool aligned,
                        cudaStream_t stream) {
  constexpr int kRows = kGroup == 32 ? kTopkRegsWarps : 1;
  constexpr int kThreads = kGroup == 32 ? 32 * kTopkRegsWarps : kGroup;
  const int64_t blocks = ceil_div(call.rows, kRows);
  return launch_kernel(topk_regs_kernel<Bits, kGroup, kItems>,
                       static_cast<unsigned>(blocks < kMaxGrid ? blocks : kMaxGrid),
                       kThreads, stream, call, order, aligned);
}

// The registers strategy's launch for rows of `Bits` (topk_regs_shape's group and items); an
// invalid value where that shape cannot run the call. (Instantiated in instances/topk_regs.cu.)
template <typename Bits>
cudaError_t topk_regs_launch(const TopkCall& call, TopkOrder<Bits> order, cudaStream_t stream) {
  const TopkRegsShape shape = topk_regs_shape(call.k, call.length);
  const bool aligned = rows_aligned16(call);
  switch (shape.group) {
    case 32:
      switch (shape.items) {
        case 4: return launch_regs<Bits, 32, 4>(call, order, aligned, stream);
        case 8: return launch_regs<Bits, 32, 8>(call, order, aligned, stream);
        case kTopkRegsItems: return launch_regs<Bits, 32, kTopkRegsItems>(call, order, aligned, stream);
        default: return cudaErrorInvalidValue;
      }
    case 64: return launch_regs<Bits, 64, kTopkRegsItems>(call, order, aligned, stream);
    case 128: return launch_regs<Bits, 128, kTopkRegsItems>(call, order, aligned, stream);
    case 256: return launch_regs<Bits, 256, kTopkRegsItems>(call, order, aligned, stream);
    case kTopkRegsMaxGroup:
      return launch_regs<Bits, kTopkRegsMaxGroup, kTopkRegsItems>(call, order, aligned, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace topk
}  // namespace jax_mergepath
