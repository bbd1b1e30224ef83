// tuning/topk.h (level: shared core, tuning): every tuning constant of the selection (top_k)
// and what is built from them as data: the CPU's filter, the GPU strategy of a call, its
// sampling ranks and candidate capacities, a grid row's state, and the route a call takes (its
// workspace is tuning/workspace.h's, "top_k"). The CUDA kernels, the CPU backend, the handlers
// and the lowering (through the _cpu module) all read these. Values marked "to be measured" are
// first choices, to be set from the GPU bench cases and perf/sweeps/topk_sweep.cu
// (docs/performance.md, "Top-k").
#pragma once

#include <math.h>

#include <cstdint>

#include "jax_mergepath/batch_geometry.h"
#include "jax_mergepath/host_device.h"
#include "jax_mergepath/topk.h"

namespace jax_mergepath {

// ------------------------------------------------------------------ CPU
// A row (or a chunk of one) keeps candidates (order key, index) while it reads its keys: all of
// them until it holds kTopkCpuCapacityFactor x k (at least kTopkCpuMinCapacity), then the best k
// (nth_element) and from then on only keys above the k-th kept key, checked kTopkCpuBlock keys
// at a time (the block's largest order key first: a vectorized max, one branch a block). Rows
// longer than kTopkCpuChunk are cut into chunks for the host threads when there are fewer rows
// than threads; each chunk's best k are merged at the end. For k up to kTopkCpuInsertMaxK the
// best k are kept sorted and a key that beats the k-th is inserted (short rows: no nth_element).
// Measured on the 2-core dev machine (docs/performance.md, "Top-k").
inline constexpr int64_t kTopkCpuBlock = 64;
inline constexpr int64_t kTopkCpuInsertMaxK = 32;
inline constexpr int64_t kTopkCpuMinCapacity = 64;
inline constexpr int64_t kTopkCpuCapacityFactor = 2;
inline constexpr int64_t kTopkCpuChunk = int64_t{1} << 16;

// ------------------------------------------------------------------ GPU: sampling
// A threshold from samples: s keys of a row, the r-th largest of them as the threshold T; the
// keys >= T are the candidates, a superset of the k largest unless the sample misjudged (fewer
// than k above T: the exact path). With m = k s / L the samples expected among the k largest,
//   r = ceil(m + kTopkRankZ sqrt(m) + kTopkRankC)      (clamped to [1, s]),
// so P(fewer than k keys above T) is the chance of kTopkRankZ standard deviations and more. The
// keys above the r-th largest of s samples are about r L / s (a Beta(r, s - r + 1) share of L);
//   capacity = ceil((r + kTopkCapZ sqrt(r) + kTopkCapC) L / s)
// bounds them but with a chance of kTopkCapZ standard deviations (more: the exact path). To be
// measured (how often the exact path runs, against the candidates' sort time).
// A block a row takes kTopkBlockRankZ where that keeps its buffer (topk_block_sample_rank; else
// kTopkRankZ): its exact path is one block's passes over the row, the rest of the grid done (at
// 3, 1024 x 65536 k 256 has about one misjudged row a call: ~80 us more); the grid's exact path
// is the whole grid's. Measured with perf/sweeps/topk_sweep.cu (docs/performance.md, "Top-k").
#ifndef JMP_TOPK_BLOCK_RANK_Z
#define JMP_TOPK_BLOCK_RANK_Z 5.0
#endif
inline constexpr double kTopkRankZ = 3.0;
inline constexpr double kTopkBlockRankZ = JMP_TOPK_BLOCK_RANK_Z;
inline constexpr double kTopkRankC = 2.0;
inline constexpr double kTopkCapZ = 5.0;
inline constexpr double kTopkCapC = 4.0;

// The rank r above for a margin of z standard deviations.
JMP_HD int64_t topk_sample_rank_at(int64_t k, int64_t length, int64_t samples, double z) {
  if (samples <= 0 || length <= 0) return 1;
  const double m = double(k) * double(samples) / double(length);
  const double r = ::ceil(m + z * ::sqrt(m) + kTopkRankC);
  return r < 1.0 ? 1 : (r > double(samples) ? samples : static_cast<int64_t>(r));
}

// The grid's rank (kTopkRankZ).
JMP_HD int64_t topk_sample_rank(int64_t k, int64_t length, int64_t samples) {
  return topk_sample_rank_at(k, length, samples, kTopkRankZ);
}

// The candidates a capacity holds for the r-th largest of s samples of L keys (above).
JMP_HD int64_t topk_candidates_bound(int64_t r, int64_t length, int64_t samples) {
  const double c =
      ::ceil((double(r) + kTopkCapZ * ::sqrt(double(r)) + kTopkCapC) * double(length) /
             double(samples));
  return c >= double(length) ? length : static_cast<int64_t>(c);
}

// The position of sample j of s (s <= length) in a row of `length` keys: a hashed offset into
// the j-th of s equal stretches (strided samples with a jitter, so a period of the keys that
// divides the stride cannot fool them).
JMP_HD int64_t topk_sample_position(int64_t j, int64_t length, int64_t samples) {
  const int64_t begin = j * length / samples;
  const int64_t span = (j + 1) * length / samples - begin;
  const uint32_t hash = static_cast<uint32_t>(j) * 2654435761u;
  return begin + (span > 1 ? static_cast<int64_t>(hash >> 8) % span : 0);
}

// The same stretches for s = 2^shift samples (the vectorized kernels' samples), without 64-bit
// divisions (three a sample above, ~70 instructions each on a GPU): shifts, and the jitter a
// 32-bit multiply-high of the hash by the stretch (another offset in [0, span), as good a jitter).
JMP_HD int64_t topk_sample_position_pow2(int64_t j, int64_t length, int shift) {
  const int64_t begin = (j * length) >> shift;
  const int64_t span = (((j + 1) * length) >> shift) - begin;
  const uint32_t hash = static_cast<uint32_t>(j) * 2654435761u;
  return begin + static_cast<int64_t>((uint64_t{hash} * static_cast<uint64_t>(span)) >> 32);
}

// log2 of s when s is a power of two, else -1.
JMP_HD constexpr int topk_log2_exact(int64_t s) {
  if (s <= 0 || (s & (s - 1)) != 0) return -1;
  int shift = 0;
  while ((int64_t{1} << shift) < s) ++shift;
  return shift;
}

JMP_HD constexpr int64_t topk_pow2_ceil(int64_t x) {
  int64_t p = 1;
  while (p < x) p <<= 1;
  return p;
}

JMP_HD constexpr int64_t topk_pow2_floor(int64_t x) {
  int64_t p = 1;
  while (2 * p <= x) p <<= 1;
  return p;
}

// ------------------------------------------------------------------ GPU: a block a row
// A block selects a row's k (ffi/cuda/kernels/topk_kernels.cuh block_topk): s samples (a sample
// every kTopkBlockSampleDivisor keys, a power of two in [kTopkBlockMinSamples,
// kTopkBlockMaxSamples]), their r-th largest key T (a radix select in shared memory), the keys >= T
// appended to a shared-memory buffer of `cap` (order key, index) pairs while the row streams from
// global memory, then a bitonic sort of them; the exact path (radix select of the row, the keys
// equal to the k-th taken in index order) when fewer than k or more than cap keys were >= T (more
// than cap: first a read counting the keys above T; fewer than k, and T is the k-th, no radix
// select). A row that fits the buffer whole skips the sampling. Threads by row length
// (topk_block_threads). Measured on the rows cases (docs/performance.md, "Top-k").
inline constexpr int kTopkBlockMinSamples = 64;
inline constexpr int kTopkBlockMaxSamples = 1024;
inline constexpr int kTopkBlockSampleDivisor = 8;
inline constexpr int kTopkBlockMinCap = 64;
inline constexpr int kTopkBlockMaxCap = 4096;  // 48 KB of 8-byte keys and int32 indices
inline constexpr int kTopkBlockRadixBits = 8;  // a shared-memory radix select's digit
inline constexpr int kTopkBlockUnroll = 4;      // keys a thread loads at once as a row streams
// More than kTopkBlockSortFactor x k pairs kept: a radix select of the k-th among them first
// cuts them to the k first and their ties, so the bitonic sort orders about k, not all of them
// (1024 x 65536 k 256: ~768 pairs, the sort of 1024 was a third of the block's instructions).
// Measured with perf/sweeps/topk_sweep.cu (docs/performance.md, "Top-k").
#ifndef JMP_TOPK_BLOCK_SORT_FACTOR
#define JMP_TOPK_BLOCK_SORT_FACTOR 2
#endif
inline constexpr int kTopkBlockSortFactor = JMP_TOPK_BLOCK_SORT_FACTOR;
// ... and only past this many pairs: a smaller sort costs less than the select's passes (rows of
// 4096 k 32, of 512 k 8).
#ifndef JMP_TOPK_BLOCK_KEEP_MIN
#define JMP_TOPK_BLOCK_KEEP_MIN 512
#endif
inline constexpr int kTopkBlockKeepMin = JMP_TOPK_BLOCK_KEEP_MIN;

JMP_HD int64_t topk_block_samples(int64_t length) {
  const int64_t every = length / kTopkBlockSampleDivisor;
  int64_t s = topk_pow2_floor(every > 1 ? every : 1);
  s = s < kTopkBlockMinSamples ? kTopkBlockMinSamples : s;
  s = s > kTopkBlockMaxSamples ? kTopkBlockMaxSamples : s;
  return s < length ? s : length;
}

// The candidate buffer of a block whose threshold is the r-th largest of s samples of a row of
// `length` keys: a power of two holding k and the candidates topk_candidates_bound allows for,
// at least kTopkBlockMinCap.
JMP_HD int64_t topk_block_buffer(int64_t r, int64_t k, int64_t length, int64_t samples) {
  const int64_t expected = topk_candidates_bound(r, length, samples > 0 ? samples : 1);
  int64_t want = expected > k ? expected : k;
  want = want < kTopkBlockMinCap ? kTopkBlockMinCap : want;
  return topk_pow2_ceil(want);
}

// A block's rank: block_topk's threshold and topk_block_cap's buffer. kTopkBlockRankZ where its
// buffer is the one kTopkRankZ takes, at most kTopkBlockMaxCap (so no shape changes its buffer,
// its blocks an SM or its strategy); else kTopkRankZ.
JMP_HD int64_t topk_block_sample_rank(int64_t k, int64_t length, int64_t samples) {
  const int64_t narrow = topk_sample_rank(k, length, samples);
  const int64_t wide = topk_sample_rank_at(k, length, samples, kTopkBlockRankZ);
  const int64_t buffer = topk_block_buffer(narrow, k, length, samples);
  const bool same =
      buffer <= kTopkBlockMaxCap && topk_block_buffer(wide, k, length, samples) == buffer;
  return same ? wide : narrow;
}

// The candidate buffer a block takes for a row of `length` keys (its samples and rank above).
JMP_HD int64_t topk_block_cap(int64_t length, int64_t k) {
  const int64_t s = topk_block_samples(length);
  return topk_block_buffer(topk_block_sample_rank(k, length, s), k, length, s);
}

// Threads a block of the rows kernel: 64 up to 1024 keys a row, then 128, 256, 512, at most
// kTopkBlockMaxThreads (64, 128, 256 or 512). The vectorized block's registers are capped for
// kTopkBlockVecThreadsPerSm threads an SM (__launch_bounds__): three blocks of 512 at 40
// registers beat two at 64 (measured with perf/sweeps/topk_sweep.cu: docs/performance.md,
// "Top-k"). (-D overrides on a sweep's line.)
#ifndef JMP_TOPK_BLOCK_MAX_THREADS
#define JMP_TOPK_BLOCK_MAX_THREADS 512
#endif
#ifndef JMP_TOPK_BLOCK_VEC_THREADS_PER_SM
#define JMP_TOPK_BLOCK_VEC_THREADS_PER_SM 1536
#endif
inline constexpr int kTopkBlockMaxThreads = JMP_TOPK_BLOCK_MAX_THREADS;
inline constexpr int kTopkBlockVecThreadsPerSm = JMP_TOPK_BLOCK_VEC_THREADS_PER_SM;
static_assert(kTopkBlockMaxThreads >= 64 && kTopkBlockMaxThreads <= 512 &&
                  (kTopkBlockMaxThreads & (kTopkBlockMaxThreads - 1)) == 0,
              "kTopkBlockMaxThreads: 64, 128, 256 or 512");
static_assert(kTopkBlockVecThreadsPerSm >= 512 && kTopkBlockVecThreadsPerSm <= 2048,
              "kTopkBlockVecThreadsPerSm: at least a block of 512, at most an SM's 2048");

JMP_HD constexpr int topk_block_threads(int64_t length) {
  const int t = length <= 1024 ? 64 : (length <= 4096 ? 128 : (length <= 16384 ? 256 : 512));
  return t < kTopkBlockMaxThreads ? t : kTopkBlockMaxThreads;
}

// Dynamic shared memory of a block_topk of `cap` candidates and `samples` samples.
JMP_HD constexpr int64_t topk_block_shared_bytes(int key_bytes, int64_t cap, int64_t samples) {
  return cap * (key_bytes + 4) + samples * key_bytes + (int64_t{1} << kTopkBlockRadixBits) * 4;
}

// The vectorized block (kBlockVec, and the stream strategy's block over the candidates): the
// same block_topk, its samples placed by shifts (topk_sample_position_pow2), the source streamed
// as kTopkBlockVecs 16-byte vectors a thread at a time (16-byte aligned stretches of it; scalar
// loads elsewhere), each thread counting its keys >= T and a warp appending its survivors with
// one shared atomic (survivors are rare: no ballot a key). kBlock keeps the scalar loop.
inline constexpr int kTopkBlockVecs = 4;
inline constexpr bool kTopkBlockVector = true;  // kBlockVec for the block's rows (false: kBlock)

// Whether the vectorized block streams a row's whole stretches with a loop of their own, its
// items unchecked (then the part stretch at the end, checked), or every stretch through one
// loop that checks each item's position unless the stretch is whole: apart for keys of up to 4
// bytes (fewer instructions a key), together for 8-byte keys (apart, their spills cost more
// than the checks). Measured with perf/sweeps/topk_sweep.cu (docs/performance.md, "Top-k").
JMP_HD constexpr bool topk_whole_stretches_apart(int key_bytes) { return key_bytes <= 4; }

// ------------------------------------------------------------------ GPU: a row in registers
// kRegs (ffi/cuda/kernels/topk_regs.cuh): a group of G threads a row (a warp, kTopkRegsWarps
// rows a block, or a block of 64 to kTopkRegsMaxGroup threads), each thread holding `items` keys of
// the row in registers (16-byte loads), G x items >= the row. The threshold T is the k-th largest
// of the G threads' largest order keys (k <= 32: a warp's bitonic sort of them by shuffles, a
// block's warps' sorted 32 merged pairwise; larger k a bitwise search, one __syncthreads_count a
// bit), so at least k keys are >= T; for k <= G / kTopkRegsKDivisor about 1.1-1.4 k keys are
// (random keys, 16 a thread). Those go to a shared buffer, where each is ranked by counting the
// ones before it (order key descending, index ascending) and written at its rank when below k. More
// than kTopkRegsRankFactor x k of them (ties): the exact k-th key (T when fewer than k keys are
// above it, else the same search over every key, group sums a bit), the keys above it and the first
// ties in index order, then the same ranking of exactly k. Rows of at most kTopkRegsMaxLength keys
// (0: never) and k <= G / kTopkRegsKDivisor take it.
inline constexpr int64_t kTopkRegsMaxLength = 8192;
inline constexpr int kTopkRegsItems = 16;      // keys a thread (the shortest rows: 4 or 8)
inline constexpr int kTopkRegsMaxGroup = 512;  // threads a row
inline constexpr int kTopkRegsWarps = 8;       // rows a block of warp groups
inline constexpr int kTopkRegsKDivisor = 2;    // k <= G / this
inline constexpr int kTopkRegsRankFactor = 4;  // ranked directly up to this x k candidates
// 8-byte keys: the registers hold the order keys' high words, or, where a row's high words span
// fewer than 2^kTopkRegsNarrowBits values (integers near each other, floats within ~2^-12 of
// each other), the keys' offsets from the lowest high word, shifted to 32 bits (read again).
inline constexpr int kTopkRegsNarrowBits = 8;
// Block groups' registers (__launch_bounds__'s blocks an SM): 1-byte keys capped so that 1024
// threads an SM fit (64 a thread), 2-byte keys 1536 (40), 4-byte and 8-byte keys (32-bit words in
// registers) 1280 (48; 64 for groups of 512, two an SM): more rows in flight beat the spills the
// caps cost (uncapped, 4-byte keys took 74 registers once the exact path grew; 8-byte keys at
// 1536 spilled 140 bytes, 24% slower). Measured with perf/sweeps/topk_sweep.cu on an H200 (16384
// x 4096 k 32, docs/performance.md "Top-k"). Warp groups uncapped (a cap of 64 spills 2-byte
// keys' 16 a thread). (-D overrides on a sweep's nvcc line.)
#ifndef JMP_TOPK_REGS_THREADS_PER_SM1
#define JMP_TOPK_REGS_THREADS_PER_SM1 1024
#endif
#ifndef JMP_TOPK_REGS_THREADS_PER_SM2
#define JMP_TOPK_REGS_THREADS_PER_SM2 1536
#endif
#ifndef JMP_TOPK_REGS_THREADS_PER_SM8
#define JMP_TOPK_REGS_THREADS_PER_SM8 1280
#endif
#ifndef JMP_TOPK_REGS_THREADS_PER_SM4
#define JMP_TOPK_REGS_THREADS_PER_SM4 1280
#endif
inline constexpr int kTopkRegsThreadsPerSm1 = JMP_TOPK_REGS_THREADS_PER_SM1;
inline constexpr int kTopkRegsThreadsPerSm2 = JMP_TOPK_REGS_THREADS_PER_SM2;
inline constexpr int kTopkRegsThreadsPerSm4 = JMP_TOPK_REGS_THREADS_PER_SM4;
inline constexpr int kTopkRegsThreadsPerSm8 = JMP_TOPK_REGS_THREADS_PER_SM8;

constexpr int topk_regs_block_groups_per_sm(int key_bytes, int group) {
  const int threads = key_bytes == 1   ? kTopkRegsThreadsPerSm1
                      : key_bytes == 2 ? kTopkRegsThreadsPerSm2
                      : key_bytes == 4 ? kTopkRegsThreadsPerSm4
                                       : kTopkRegsThreadsPerSm8;
  return threads / group;
}

// The group (threads a row) and keys a thread of kRegs for rows of `length` keys at k: the
// smallest group whose threads hold the row in kTopkRegsItems keys each (a warp: 4, 8 or 16)
// with k <= G / kTopkRegsKDivisor; {0, 0} where none does.
struct TopkRegsShape {
  int group, items;
};

JMP_HD TopkRegsShape topk_regs_shape(int64_t k, int64_t length) {
  if (k <= 0 || length <= 0 || length > kTopkRegsMaxLength) return {0, 0};
  for (int group = 32; group <= kTopkRegsMaxGroup; group *= 2) {
    if (k * kTopkRegsKDivisor > group) continue;
    if (group == 32) {
      for (int items = 4; items <= kTopkRegsItems; items *= 2) {
        if (length <= int64_t{32} * items) return {32, items};
      }
    } else if (length <= int64_t{group} * kTopkRegsItems) {
      return {group, kTopkRegsItems};
    }
  }
  return {0, 0};
}

// ------------------------------------------------------------------ GPU: the grid of a row
// Rows of at least kTopkGridMinLength keys take the whole grid (ffi/cuda/kernels/topk_kernels.cuh):
//   1. topk_sample_kernel (a block a row): kTopkGridSamples samples, T their r-th largest;
//   2. topk_filter_kernel (tiles of kTopkFilterThreads x kTopkFilterItems keys): the keys >= T,
//      compacted in the block, appended to the row's candidates with one atomic a block (up to
//      the capacity, topk_grid_capacity; the count goes on past it);
//   3. topk_decide_kernel: the exact path for rows with fewer than k candidates or more than
//      the capacity (its kernels read the row's flag and return at once otherwise: no host
//      sync, graph-safe): for a row past the capacity, a read counting the keys above T
//      (fewer than k: T is the k-th key, ties at the top, and the radix passes skip the row);
//      else radix passes of kTopkRadixBits over the row (a block's histogram added to the
//      row's, the last block picks the digit); then the keys above the k-th and, in index
//      order, the first ties (a count a tile, a scan, the writes): exactly k;
//   4. the candidates' order: k <= kTopkFinalMaxK: topk_final_kernel, block_topk over the
//      candidates (a block a row); larger k: the candidates as (order key, index) composites
//      sorted by the package's merge sort (sort_cuda), then the first k (8-byte keys: sorted by
//      index, then stably by key).
// The exact path's kernels run kTopkFallbackBlocksPerSm x SMs blocks a call (each loops over
// tiles). To be measured: 2^24 and 2^27 float32 at k 10, 1000, 100000; the exact path forced
// (equal keys). kTopkGridMinLength by user-visible time: the grid's ~10 launches (the exact
// path's return at once) cost a call more than their kernels (docs/performance.md, "Top-k").
inline constexpr int64_t kTopkGridMinLength = int64_t{1} << 19;
inline constexpr int kTopkGridSamples = 8192;
inline constexpr int kTopkSampleThreads = 1024;
inline constexpr int kTopkFilterThreads = 256;
inline constexpr int kTopkFilterItems = 16;
inline constexpr int64_t kTopkTile = int64_t{kTopkFilterThreads} * kTopkFilterItems;
inline constexpr int kTopkRadixBits = 11;
// The candidates' block (topk_final_kernel): whole warps, at most 1024; its bitonic sort of the
// survivors is a chain of barriers, fewer pairs a thread a stage with more threads. Measured with
// perf/sweeps/topk_sweep.cu (-D JMP_TOPK_FINAL_THREADS=...; docs/performance.md, "Top-k").
#ifndef JMP_TOPK_FINAL_THREADS
#define JMP_TOPK_FINAL_THREADS 1024
#endif
inline constexpr int kTopkFinalThreads = JMP_TOPK_FINAL_THREADS;
static_assert(kTopkFinalThreads % 32 == 0 && kTopkFinalThreads <= 1024,
              "kTopkFinalThreads: whole warps, at most 1024");
inline constexpr int64_t kTopkFinalMaxK = kTopkBlockMaxCap / 4;
inline constexpr int kTopkFallbackBlocksPerSm = 4;

// The stream strategy (kStreamSmall / kStreamSort): the grid's steps, with
//   * the samples placed by shifts (kTopkGridSamples is a power of two; a shorter row's samples
//     are all its keys, placed the old way);
//   * topk_stream_filter_kernel for the filtering read: kTopkStreamBlocksPerSm x SMs blocks of
//     kTopkStreamThreads (one wave, registers capped for it), each striding over chunks of
//     kTopkStreamThreads x kTopkStreamVecs 16-byte vectors (16-byte loads, every load of a
//     chunk in flight at once), a compare a key against the row's threshold, survivors (rare)
//     appended by a warp with one atomic; the grid's last block flags the rows for the exact
//     path (no decide kernel);
//   * the candidates' block_topk vectorized (kBlockVec's loop) for k <= kTopkFinalMaxK.
// The exact path's kernels and the candidates' merge sort are the grid's. kTopkStreamFilter
// false: the grid strategies instead.
inline constexpr bool kTopkStreamFilter = true;
inline constexpr int kTopkStreamThreads = 256;
inline constexpr int kTopkStreamVecs = 4;
inline constexpr int kTopkStreamBlocksPerSm = 4;

JMP_HD int64_t topk_grid_samples(int64_t length) {
  return length < kTopkGridSamples ? length : kTopkGridSamples;
}

// The candidates a grid row keeps (its buffer): at least k, at most the row.
JMP_HD int64_t topk_grid_capacity(int64_t k, int64_t length) {
  const int64_t s = topk_grid_samples(length);
  if (s <= 0) return 0;
  const int64_t c = topk_candidates_bound(topk_sample_rank(k, length, s), length, s);
  const int64_t want = c > k ? c : k;
  return want < length ? want : length;
}

// How a call's rows run (the CUDA launcher, topk_launch.cuh), the attribute `strategy` of a
// forced one (_select_primitive.py). kInvalid: a forced strategy that cannot run the call.
enum class TopkStrategy : int {
  kInvalid = -1,
  kNone = 0,
  kBlock = 1,        // a block a row, block_topk's scalar loop
  kGridSmall = 2,    // the grid: samples, tile filter, decide, exact path; block over candidates
  kGridSort = 3,     // the grid; the candidates' merge sort (k > kTopkFinalMaxK)
  kRegs = 4,         // a warp or a block a row, the row in registers
  kBlockVec = 5,     // a block a row, block_topk's vectorized loop
  kStreamSmall = 6,  // the stream strategy; block (vectorized) over candidates
  kStreamSort = 7,   // the stream strategy; the candidates' merge sort
};

JMP_HD bool topk_is_grid(TopkStrategy s) {
  return s == TopkStrategy::kGridSmall || s == TopkStrategy::kGridSort ||
         s == TopkStrategy::kStreamSmall || s == TopkStrategy::kStreamSort;
}

// Whether strategy s can run rows of `length` keys at k (0 < k <= length).
JMP_HD bool topk_strategy_possible(TopkStrategy s, int64_t k, int64_t length) {
  switch (s) {
    case TopkStrategy::kBlock:
    case TopkStrategy::kBlockVec: return topk_block_cap(length, k) <= kTopkBlockMaxCap;
    case TopkStrategy::kGridSmall:
    case TopkStrategy::kStreamSmall: return k <= kTopkFinalMaxK;
    case TopkStrategy::kGridSort:
    case TopkStrategy::kStreamSort: return k > kTopkFinalMaxK;
    case TopkStrategy::kRegs: return topk_regs_shape(k, length).group > 0;
    default: return false;
  }
}

// tuning's choice: rows in registers where they fit (kRegs), else a block a row below
// kTopkGridMinLength keys where its buffer holds the candidates, else the grid of a row.
JMP_HD TopkStrategy topk_strategy(int64_t k, int64_t length) {
  if (k <= 0 || length <= 0) return TopkStrategy::kNone;
  if (topk_regs_shape(k, length).group > 0) return TopkStrategy::kRegs;
  if (length < kTopkGridMinLength && topk_block_cap(length, k) <= kTopkBlockMaxCap) {
    return kTopkBlockVector ? TopkStrategy::kBlockVec : TopkStrategy::kBlock;
  }
  const bool small = k <= kTopkFinalMaxK;
  if (kTopkStreamFilter) return small ? TopkStrategy::kStreamSmall : TopkStrategy::kStreamSort;
  return small ? TopkStrategy::kGridSmall : TopkStrategy::kGridSort;
}

// The strategy a call runs: `forced` (a TopkStrategy; the grid's and the stream's two variants
// each stand for both, picked by k) where it can run the call, else kInvalid; forced < 0:
// topk_strategy's. kNone for k = 0 or empty rows, whatever is forced.
JMP_HD TopkStrategy topk_resolve_strategy(int64_t forced, int64_t k, int64_t length) {
  if (k <= 0 || length <= 0) return TopkStrategy::kNone;
  if (forced < 0) return topk_strategy(k, length);
  if (forced > static_cast<int64_t>(TopkStrategy::kStreamSort)) return TopkStrategy::kInvalid;
  TopkStrategy s = static_cast<TopkStrategy>(forced);
  const bool small = k <= kTopkFinalMaxK;
  if (s == TopkStrategy::kGridSmall || s == TopkStrategy::kGridSort) {
    s = small ? TopkStrategy::kGridSmall : TopkStrategy::kGridSort;
  } else if (s == TopkStrategy::kStreamSmall || s == TopkStrategy::kStreamSort) {
    s = small ? TopkStrategy::kStreamSmall : TopkStrategy::kStreamSort;
  }
  return topk_strategy_possible(s, k, length) ? s : TopkStrategy::kInvalid;
}

// What a grid row keeps in the workspace besides its candidates: the threshold, counts, the
// exact path's state and its histogram. 8-byte aligned.
struct TopkRowState {
  uint64_t threshold;  // the filter keeps order keys >= threshold
  uint64_t prefix;     // exact path: the k-th order key's digits found so far (then the key)
  int32_t count;       // candidates (the filter's count may pass the capacity); exact path: k
  int32_t exact;       // 1: the row takes the exact path
  int32_t need;        // exact path: keys equal to the prefix still to take
  int32_t above;       // exact path: keys above the k-th written so far
  int32_t ticket;      // exact path: the row's blocks done with the current radix pass
  int32_t filtered;    // stream filter: its blocks done (row 0's state holds the grid's)
  int32_t greater;     // exact path, rows past the capacity: keys above the threshold
  int32_t settled;     // exact path: 1 when the k-th key is the threshold (no radix passes)
  int32_t hist[1 << kTopkRadixBits];
};

// ------------------------------------------------------------------ routes
// Which way a call runs, picked when it is lowered (jax_mergepath/_select_primitive.py): the
// selection kernels, our full sort of the order keys (then the first k), or XLA's own top_k of
// the order keys. Every way gives the same bits. The CPU kernels beat XLA:CPU's top_k at every
// measured size (docs/performance.md), so the CPU always takes them. On the GPU a k of at least
// kTopkSortShare of the row takes the sort (the candidates are then most of the row) and rows of
// at most kTopkXlaMaxLength keys XLA's top_k (0: never); both measured on an H200
// (docs/performance.md "Top-k": the sort won at k = n / 4, the kernels on rows of 2^10 keys).
enum class TopkRoute : int { kKernel = 0, kSort = 1, kXla = 2 };
inline constexpr double kTopkSortShare = 0.25;
inline constexpr int64_t kTopkXlaMaxLength = 0;

inline TopkRoute topk_route(bool cuda, int key_bytes, int64_t rows, int64_t length, int64_t k) {
  (void)rows;
  (void)key_bytes;
  if (!cuda || k <= 0) return TopkRoute::kKernel;
  if (length <= kTopkXlaMaxLength) return TopkRoute::kXla;
  if (double(k) >= kTopkSortShare * double(length) && length > 1) return TopkRoute::kSort;
  return TopkRoute::kKernel;
}

}  // namespace jax_mergepath
