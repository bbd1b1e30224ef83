// radix_sort.cuh (level: kernels): the CUDA sort's radix path (tuning/radix.h "radix path") for 2-
// and 4-byte keys (one byte: counting_sort.cuh, counting_scatter.cuh): one row of n keys, alone or
// with a 4-byte payload, sorted by CUB's onesweep radix sort; rows of 2-byte keys by CUB's
// segmented radix sort (tuning/radix.h segmented_radix_possible), each step below a row at a time.
// Integer keys alone, or with 4-byte values ascending (tuning/radix.h radix_direct), go direct
// (radix_sort_direct) where the workspace holds CUB's need, as the lowering sizes it for the
// method kRadixDirect (call_args.h SortMethod): CUB sorts them as their own type from the inputs
// into the outputs, the workspace holding its temporary storage (with its spare buffers); keys
// alone descending are then reversed in place. So do float keys alone ascending, one row
// (radix_sort_float_direct), as CUB's floats, then radix_nan_fix.cuh's NaN fix-up (two launches
// that return at once where no NaN moves). Other calls sort the keys' directed order keys
// (ordering.h), bit-identical to the merge sort:
//   1. encode: the outputs <- the directed order keys (unsigned; the order is their unsigned
//      order), and argsort's positions or the 4-byte values; float keys count, a block each,
//      their NaN, zero and negative keys (rows of many blocks: radix_scan_kernel then makes
//      the counts prefixes, in one block);
//   2. cub_radix_sort (radix_cub.h), stable, ping-ponging between outputs and spare buffers;
//   3. finish (radix_finish_kernel), one kernel: decode, out_keys <- the original bits (the
//      inverse of the order key), which would leave float -0.0 as +0.0 and every NaN as one NaN,
//      so outside the zero and NaN ranges only; fix-up (float keys), the zero and the NaN keys
//      written, in input order, into those ranges (the order key ties them, so the stable order
//      is input order); a block with neither writes none.
// A call whose keys the caller drops (SortCall::keys_needed false: argsort) skips the counts, the
// keys' decode and the fix-up; only a payload CUB left in the spare buffer moves.
// All on `stream`, no allocation, no host sync (graph-safe). The workspace (tuning/workspace.h
// radix_workspace_elements) holds the class counts, then CUB's temporary storage (direct: only
// CUB's, with its spare buffers); if CUB asks for more than it holds, the path is not taken
// (*taken = false) and the caller merge-sorts; a kRadixDirect call, without the sort's own spare
// buffers, cannot fall back and fails with cudaErrorInvalidValue instead (the lowering gives it
// the bound, and resolves 2-byte keys direct only where CUB takes onesweep: sort_method.h
// resolve_sort_method).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "../block/block_scan.cuh"
#include "../block/grid_launch.cuh"
#include "../block/scan_in_place.cuh"
#include "jax_mergepath/call_args.h"
#include "jax_mergepath/ordering.h"
#include "jax_mergepath/tuning/radix.h"
#include "jax_mergepath/tuning/workspace.h"
#include "radix_cub.h"
#include "radix_nan_fix.cuh"

namespace jax_mergepath {

// The encode and finish blocks: tiles of kRadixEncodeTile keys, row_tiles a row (a block never
// spans two rows), rows x row_tiles in all.
struct RadixTiles {
  int64_t length;     // keys a row
  int64_t row_tiles;  // blocks a row
  int64_t blocks;

  // Block b's row and its first key's place in that row.
  JMP_HD int64_t row(int64_t b) const { return b / row_tiles; }
  JMP_HD int64_t first(int64_t b) const { return (b % row_tiles) * kRadixEncodeTile; }
};

inline RadixTiles radix_tiles(int64_t rows, int64_t length) {
  const int64_t row_tiles = ceil_div(length, kRadixEncodeTile);
  return {length, row_tiles, rows * row_tiles};
}

// The classes the fix-up restores (float keys): where the counts of each live in the workspace,
// blocks + 1 entries each. The encode writes each block's own counts; for rows of more than
// kRadixFinishSelfTiles blocks radix_scan_kernel then makes them exclusive prefixes over all
// blocks (`scanned`; the last entry the total; a row's counts are the differences at its first
// blocks), shorter rows' finish blocks sum their row's counts themselves.
struct RadixCounts {
  int32_t* nan;       // [blocks + 1]
  int32_t* zero;      // [blocks + 1]
  int32_t* negative;  // [blocks + 1]: only the rows' totals are read
  int64_t blocks;
  bool scanned;
};

inline RadixCounts radix_counts(int32_t* workspace, const RadixTiles& tiles) {
  const int64_t blocks = tiles.blocks;
  const bool scanned = tiles.row_tiles > kRadixFinishSelfTiles;
  return {workspace, workspace + blocks + 1, workspace + 2 * (blocks + 1), blocks, scanned};
}

// A float key that sorts before the zeros (ascending): negative, not zero, not NaN.
template <typename Traits>
JMP_HD bool below_zero(typename Traits::Bits raw) {
  return (raw & Traits::kSign) && !Traits::is_nan(raw) && !Traits::is_zero(raw);
}

template <typename Traits, PayloadKind kPayload, bool kCount>
__global__ void __launch_bounds__(kRadixEncodeThreads)
    radix_encode_kernel(const typename Traits::Bits* keys, const uint32_t* values,
                        RadixTiles tiles, typename Traits::Bits flip, typename Traits::Bits* ord,
                        uint32_t* payload, RadixCounts counts) {
  using Bits = typename Traits::Bits;
  grid_prologue();
  const int64_t row_start = tiles.row(blockIdx.x) * tiles.length;
  const int64_t base = tiles.first(blockIdx.x);
  int nan = 0, zero = 0, negative = 0;
#pragma unroll 4
  for (int j = 0; j < kRadixEncodeItems; ++j) {
    const int64_t at = base + int64_t{j} * kRadixEncodeThreads + threadIdx.x;  // in its row
    if (at < tiles.length) {
      const int64_t i = row_start + at;
      const Bits raw = keys[i];
      ord[i] = directed_key<Traits>(raw, flip);
      if constexpr (kPayload == PayloadKind::kIndex) payload[i] = static_cast<uint32_t>(at);
      if constexpr (kPayload == PayloadKind::kValue) payload[i] = values[i];
      if constexpr (kCount) {
        nan += Traits::is_nan(raw);
        zero += Traits::is_zero(raw);
        negative += below_zero<Traits>(raw);
      }
    }
  }
  if constexpr (kCount) {
    __shared__ int block_counts[3];
    if (threadIdx.x < 3) block_counts[threadIdx.x] = 0;
    __syncthreads();
    if (nan) atomicAdd(&block_counts[0], nan);
    if (zero) atomicAdd(&block_counts[1], zero);
    if (negative) atomicAdd(&block_counts[2], negative);
    __syncthreads();
    if (threadIdx.x == 0) {
      counts.nan[blockIdx.x] = block_counts[0];
      counts.zero[blockIdx.x] = block_counts[1];
      counts.negative[blockIdx.x] = block_counts[2];
    }
  }
}

// One block (kRadixScanThreads): the three count arrays made exclusive prefixes, their totals at
// [blocks] (counts.scanned). (A template, so the header defines it in every translation unit
// without a clash.)
template <int kThreads>
__global__ void __launch_bounds__(kThreads) radix_scan_kernel(RadixCounts counts) {
  __shared__ BlockScanStorage<int32_t, kThreads> scan_storage;
  grid_prologue();
  int32_t* const arrays[3] = {counts.nan, counts.zero, counts.negative};
  for (int32_t* array : arrays) {
    const int32_t total = scan_in_place<int32_t, kThreads, 1>(array, counts.blocks, scan_storage);
    if (threadIdx.x == 0) array[counts.blocks] = total;
  }
}

// Block b's row's classes: where its zero and NaN keys go (the ranges of the row's output) and
// how many of each the row's blocks before b hold. Every thread of the block calls it.
struct RowClasses {
  int64_t nan_start, zero_start;    // in the row's output
  int64_t nans, zeros;              // the row's
  int64_t nan_before, zero_before;  // the row's blocks before b
  int nan_here, zero_here;          // block b's
};

template <int kThreads>
__device__ RowClasses row_classes(const RadixCounts& counts, const RadixTiles& tiles, int64_t b,
                                  bool descending, BlockScanStorage<int32_t, kThreads>& storage) {
  const int64_t row = tiles.row(b), n = tiles.length;
  const int64_t row_first = row * tiles.row_tiles, row_end = row_first + tiles.row_tiles;
  RowClasses c{};
  int64_t negatives = 0;
  if (counts.scanned) {
    c.nans = counts.nan[row_end] - counts.nan[row_first];
    c.zeros = counts.zero[row_end] - counts.zero[row_first];
    negatives = counts.negative[row_end] - counts.negative[row_first];
    c.nan_before = counts.nan[b] - counts.nan[row_first];
    c.zero_before = counts.zero[b] - counts.zero[row_first];
    c.nan_here = counts.nan[b + 1] - counts.nan[b];
    c.zero_here = counts.zero[b + 1] - counts.zero[b];
  } else {  // the row's at most kRadixFinishSelfTiles blocks' own counts, summed here
    int32_t nans = 0, zeros = 0, below = 0, nans_before = 0, zeros_before = 0;
    for (int64_t j = row_first + threadIdx.x; j < row_end; j += kThreads) {
      const int32_t nan = counts.nan[j], zero = counts.zero[j];
      nans += nan;
      zeros += zero;
      below += counts.negative[j];
      nans_before += j < b ? nan : 0;
      zeros_before += j < b ? zero : 0;
    }
    auto block_total = [&storage](int32_t own) {
      int32_t total;
      block_exclusive_sum(own, total, storage);
      __syncthreads();  // (storage written again by the next sum)
      return total;
    };
    c.nans = block_total(nans);
    c.zeros = block_total(zeros);
    negatives = block_total(below);
    c.nan_before = block_total(nans_before);
    c.zero_before = block_total(zeros_before);
    c.nan_here = counts.nan[b];
    c.zero_here = counts.zero[b];
  }
  // Ascending: negatives, zeros, positives, NaNs; descending: NaNs, positives, zeros, negatives.
  c.nan_start = descending ? 0 : n - c.nans;
  c.zero_start = descending ? n - negatives - c.zeros : negatives;
  return c;
}

// The radix path's last kernel, a block per encode block (tiles: a block's keys in one row):
//   - decode (kKeys): out_keys[i] <- the original bits of sorted[i] (in place where sorted is
//     out_keys), except (kFixup) in the row's zero and NaN ranges, which the fix-up writes;
//   - the payload moved to out_payload where CUB left it in the spare buffer;
//   - fix-up (kFixup: float keys): the block's zero and NaN input keys, in input order, to their
//     places in their class's output range (the order key ties each class, so the stable order
//     is input order).
// The two write disjoint places of out_keys, and a decoded place is read by its writer only, so
// the blocks need no order among them.
template <typename Traits, PayloadKind kPayload, bool kKeys, bool kFixup>
__global__ void __launch_bounds__(kRadixEncodeThreads)
    radix_finish_kernel(const typename Traits::Bits* keys, const typename Traits::Bits* sorted,
                        const uint32_t* sorted_payload, RadixTiles tiles, bool descending,
                        RadixCounts counts, typename Traits::Bits flip,
                        typename Traits::Bits* out_keys, uint32_t* out_payload) {
  static_assert(kKeys || !kFixup, "the fix-up writes keys");
  using Bits = typename Traits::Bits;
  __shared__ BlockScanStorage<int32_t, kRadixEncodeThreads> scan_storage;
  grid_prologue();
  const int64_t b = blockIdx.x;
  const int64_t row = tiles.row(b), n = tiles.length;
  const int64_t row_start = row * n, base = tiles.first(b);
  RowClasses c{};
  if constexpr (kFixup) {
    c = row_classes<kRadixEncodeThreads>(counts, tiles, b, descending, scan_storage);
  }
#pragma unroll 4
  for (int j = 0; j < kRadixEncodeItems; ++j) {
    const int64_t at = base + int64_t{j} * kRadixEncodeThreads + threadIdx.x;  // in its row
    if (at < n) {
      const int64_t i = row_start + at;
      if constexpr (kKeys) {
        const bool fixed = kFixup && ((at >= c.nan_start && at < c.nan_start + c.nans) ||
                                      (at >= c.zero_start && at < c.zero_start + c.zeros));
        if (!fixed) out_keys[i] = Traits::from_order_key(static_cast<Bits>(sorted[i] ^ flip));
      }
      if constexpr (kPayload != PayloadKind::kNone) {
        if (sorted_payload != out_payload) out_payload[i] = sorted_payload[i];
      }
    }
  }
  if constexpr (kFixup) {
    if (c.nan_here == 0 && c.zero_here == 0) return;  // (the whole block: the counts are uniform)
    // Thread t holds keys [t * items, (t + 1) * items) of the tile: ranks in input order.
    const int64_t first = base + int64_t{threadIdx.x} * kRadixEncodeItems;  // in the row
    keys += row_start;
    // (Read twice, to count and to write, not held: registers would cost the decode occupancy.)
    int nan_own = 0, zero_own = 0;
#pragma unroll 4
    for (int j = 0; j < kRadixEncodeItems; ++j) {
      if (first + j < n) {
        const Bits raw = keys[first + j];
        nan_own += Traits::is_nan(raw);
        zero_own += Traits::is_zero(raw);
      }
    }
    int nans_here, zeros_here;
    const int nan_rank = block_exclusive_sum(nan_own, nans_here, scan_storage);
    __syncthreads();
    const int zero_rank = block_exclusive_sum(zero_own, zeros_here, scan_storage);
    if (nan_own == 0 && zero_own == 0) return;
    int64_t nan_at = row_start + c.nan_start + c.nan_before + nan_rank;
    int64_t zero_at = row_start + c.zero_start + c.zero_before + zero_rank;
#pragma unroll 4
    for (int j = 0; j < kRadixEncodeItems; ++j) {
      if (first + j < n) {
        const Bits raw = keys[first + j];
        if (Traits::is_nan(raw)) out_keys[nan_at++] = raw;
        if (Traits::is_zero(raw)) out_keys[zero_at++] = raw;
      }
    }
  }
}

// Each row of x reversed in place (rows of n): x[i] <-> x[n - 1 - i] for i < n / 2, a block a
// tile of a row's first half (halves: radix_tiles(rows, n / 2)).
template <typename Bits>
__global__ void __launch_bounds__(kRadixEncodeThreads)
    reverse_kernel(Bits* x, int64_t n, RadixTiles halves) {
  grid_prologue();
  x += halves.row(blockIdx.x) * n;
  const int64_t base = halves.first(blockIdx.x);
#pragma unroll 4
  for (int j = 0; j < kRadixEncodeItems; ++j) {
    const int64_t i = base + int64_t{j} * kRadixEncodeThreads + threadIdx.x;
    if (i < n / 2) {
      const Bits low = x[i];
      x[i] = x[n - 1 - i];
      x[n - 1 - i] = low;
    }
  }
}

// The rows of x (rows x n) reversed in place.
template <typename Bits>
cudaError_t reverse_rows(Bits* x, int64_t rows, int64_t n, cudaStream_t stream) {
  const RadixTiles halves = radix_tiles(rows, n / 2);
  if (halves.blocks == 0) return cudaSuccess;
  return launch_kernel(reverse_kernel<Bits>, static_cast<unsigned>(halves.blocks),
                       kRadixEncodeThreads, stream, x, n, halves);
}

// The direct radix sort (see the top) of integer keys alone or with 4-byte values, the key
// type's own (signed or unsigned) CUB instance, one row or (2-byte keys alone) rows; *taken =
// false (nothing enqueued) where CUB needs more temporary storage than the workspace holds.
template <typename Traits, PayloadKind kPayload>
cudaError_t radix_sort_direct(const SortCall& call, int32_t* workspace, int64_t workspace_elements,
                              cudaStream_t stream, bool* taken) {
  using Bits = typename Traits::Bits;
  using Signed = std::make_signed_t<Bits>;
  constexpr bool kPairs = kPayload == PayloadKind::kValue;
  *taken = false;
  const int64_t rows = call.rows, n = call.length;
  const auto* values = static_cast<const uint32_t*>(call.values);
  auto* out_values = static_cast<uint32_t*>(call.out_payload);
  auto sort = [&](auto key, void* temp, size_t* bytes) -> cudaError_t {
    using Key = decltype(key);
    const auto* in = static_cast<const Key*>(call.keys);
    auto* out = static_cast<Key*>(call.out_keys);
    if (rows == 1) {
      return cub_radix_sort_direct<Key, kPairs>(temp, bytes, in, out, values, out_values, n,
                                                stream);
    }
    if constexpr (sizeof(Key) == 2 && !kPairs) {  // (tuning/radix.h radix_direct: rows of 2 bytes)
      return cub_segmented_radix_sort_keys_direct<Key>(temp, bytes, in, out, rows, n, stream);
    }
    return cudaErrorInvalidValue;
  };
  const bool is_signed = is_signed_integer(call.key_type);
  auto sort_own = [&](void* temp, size_t* bytes) {
    return is_signed ? sort(Signed{}, temp, bytes) : sort(Bits{}, temp, bytes);
  };
  size_t need = 0;
  if (cudaError_t err = sort_own(nullptr, &need); err != cudaSuccess) return err;
  size_t have = static_cast<size_t>(workspace_elements) * sizeof(int32_t);
  if (need > have) return cudaSuccess;
  *taken = true;
  if (cudaError_t err = sort_own(workspace, &have); err != cudaSuccess) return err;
  if (kPairs || !call.descending) return cudaSuccess;  // (radix_direct: pairs ascend)
  return reverse_rows(static_cast<Bits*>(call.out_keys), rows, n, stream);
}

// The direct radix sort of float keys alone ascending, one row (tuning/radix.h radix_direct):
// CUB sorts them as floats (CubFloat) from the input into out_keys, then radix_nan_fix.cuh's two
// kernels move its NaNs where ours go. The workspace: the fix-up's state (radix_count_elements(1,
// n)), then CUB's temporary storage, at least n keys long (checked), the fix-up's spare once
// CUB is done. *taken = false (nothing enqueued) where CUB needs more than the workspace holds.
template <typename Traits>
cudaError_t radix_sort_float_direct(const SortCall& call, int32_t* workspace,
                                    int64_t workspace_elements, cudaStream_t stream,
                                    bool* taken) {
  using Bits = typename Traits::Bits;
  using Key = typename CubFloat<Traits>::type;
  static_assert(sizeof(Key) == sizeof(Bits), "the float's own bits");
  *taken = false;
  const int64_t n = call.length;
  const int64_t state_elements = radix_count_elements(1, n);
  if (call.rows != 1 || workspace_elements < state_elements) return cudaSuccess;
  const auto* keys = static_cast<const Bits*>(call.keys);
  auto* out = static_cast<Bits*>(call.out_keys);
  void* temp = workspace + state_elements;
  auto sort = [&](void* storage, size_t* bytes) {
    return cub_radix_sort_direct<Key, false>(storage, bytes, reinterpret_cast<const Key*>(keys),
                                             reinterpret_cast<Key*>(out), nullptr, nullptr, n,
                                             stream);
  };
  size_t need = 0;
  if (cudaError_t err = sort(nullptr, &need); err != cudaSuccess) return err;
  size_t have = static_cast<size_t>(workspace_elements - state_elements) * sizeof(int32_t);
  if (need > have || have < static_cast<size_t>(n) * sizeof(Bits)) return cudaSuccess;
  *taken = true;
  if (cudaError_t err = sort(temp, &have); err != cudaSuccess) return err;
  const int64_t tiles = radix_tiles(1, n).blocks;
  const auto blocks =
      static_cast<unsigned>(tiles < kRadixNanFixBlocks ? tiles : kRadixNanFixBlocks);
  auto* spare = static_cast<Bits*>(temp);
  if (cudaError_t err = launch_kernel(radix_nan_check_kernel<Traits>, blocks, kRadixEncodeThreads,
                                      stream, keys, out, n, spare, workspace);
      err != cudaSuccess) {
    return err;
  }
  return launch_kernel(radix_nan_fix_kernel<Traits>, blocks, kRadixEncodeThreads, stream, keys,
                       spare, n, workspace, out);
}

// The radix path of a sort (see the top); *taken = false (and nothing enqueued) where CUB needs
// more temporary storage than the workspace holds.
template <typename Traits, PayloadKind kPayload>
cudaError_t radix_sort(const SortCall& call, int32_t* workspace, int64_t workspace_elements,
                       cudaStream_t stream, bool* taken) {
  using Bits = typename Traits::Bits;
  constexpr bool kFloat = Traits::kind == KeyKind::kFloat;
  constexpr int kKeyBytes = int(sizeof(Bits));
  constexpr bool kPairs = kPayload != PayloadKind::kNone;
  *taken = false;
  const int64_t rows = call.rows, n = call.length;
  if (rows == 1 ? n >= kRadixRowLimit
                : !segmented_radix_possible(kKeyBytes, kPairs ? 4 : 0, rows, n)) {
    return cudaSuccess;
  }
  // (radix_direct admits integer keys alone or with values, float keys alone)
  if constexpr (kPayload == PayloadKind::kNone || (!kFloat && kPayload == PayloadKind::kValue)) {
    if (radix_direct(!kFloat, kKeyBytes, kPayload, call.value_bytes, call.descending, rows)) {
      cudaError_t err;
      if constexpr (kFloat) {
        err = radix_sort_float_direct<Traits>(call, workspace, workspace_elements, stream, taken);
      } else {
        err = radix_sort_direct<Traits, kPayload>(call, workspace, workspace_elements, stream,
                                                  taken);
      }
      if (err != cudaSuccess || *taken) return err;
      if (call.spare_keys == nullptr || (kPayload != PayloadKind::kNone &&
                                         call.spare_payload == nullptr)) {
        return cudaErrorInvalidValue;  // (kRadixDirect: the bound held short; see the top)
      }
    }
  }
  if constexpr (kKeyBytes == 8) return cudaSuccess;  // (8-byte keys: only direct, no instance)
  const RadixTiles tiles = radix_tiles(rows, n);
  const int64_t count_elements = radix_count_elements(rows, n);
  if (workspace_elements < count_elements) return cudaSuccess;
  auto* const out_keys = static_cast<Bits*>(call.out_keys);
  auto* const out_payload = static_cast<uint32_t*>(call.out_payload);
  // The encode writes the outputs, CUB ping-pongs from there (one row: one 8-bit pass a key byte
  // on sm_90, an even count, ending in the outputs; key_side / value_side say where it ended).
  RadixBuffers<Bits> buffers{};
  buffers.keys[0] = out_keys;
  buffers.keys[1] = static_cast<Bits*>(call.spare_keys);
  if constexpr (kPairs) {
    buffers.values[0] = out_payload;
    buffers.values[1] = static_cast<uint32_t*>(call.spare_payload);
  }
  constexpr int kEndBit = 8 * kKeyBytes;
  auto cub_sort = [&](void* temp, size_t* bytes) -> cudaError_t {
    if (rows == 1) return cub_radix_sort<Bits, kPairs>(temp, bytes, buffers, n, kEndBit, stream);
    if constexpr (kKeyBytes == 2) {  // (tuning/radix.h segmented_radix_possible)
      return cub_segmented_radix_sort<Bits, kPairs>(temp, bytes, buffers, rows, n, kEndBit,
                                                    stream);
    }
    return cudaErrorInvalidValue;
  };
  size_t need = 0;
  if (cudaError_t err = cub_sort(nullptr, &need); err != cudaSuccess) return err;
  void* temp = workspace + count_elements;
  size_t have = static_cast<size_t>(workspace_elements - count_elements) * sizeof(int32_t);
  if (need > have) return cudaSuccess;
  *taken = true;

  const auto flip = order_mask<Traits>(call.key_type, call.descending);
  const RadixCounts counts = radix_counts(workspace, tiles);
  const auto blocks = static_cast<unsigned>(tiles.blocks);
  const auto* keys = static_cast<const Bits*>(call.keys);
  const auto* values = static_cast<const uint32_t*>(call.values);
  const bool fixup = kFloat && call.keys_needed;
  auto* encode = fixup ? radix_encode_kernel<Traits, kPayload, kFloat>
                       : radix_encode_kernel<Traits, kPayload, false>;
  if (cudaError_t err = launch_kernel(encode, blocks, kRadixEncodeThreads, stream, keys, values,
                                      tiles, flip, buffers.keys[0], buffers.values[0], counts);
      err != cudaSuccess) {
    return err;
  }
  if (fixup && counts.scanned) {
    if (cudaError_t err = launch_kernel(radix_scan_kernel<kRadixScanThreads>, 1, kRadixScanThreads,
                                        stream, counts);
        err != cudaSuccess) {
      return err;
    }
  }
  if (cudaError_t err = cub_sort(temp, &have); err != cudaSuccess) return err;
  const bool move_payload = kPairs && buffers.values[buffers.value_side] != out_payload;
  // (unsigned keys ascending, sorted into out_keys: their order keys are their bits)
  const bool keys_in_place = Traits::kind == KeyKind::kUnsigned && flip == 0 &&
                             buffers.keys[buffers.key_side] == out_keys;
  const bool decode_keys = call.keys_needed && !keys_in_place;
  if (!decode_keys && !move_payload) return cudaSuccess;
  auto* finish = fixup         ? radix_finish_kernel<Traits, kPayload, true, kFloat>
                 : decode_keys ? radix_finish_kernel<Traits, kPayload, true, false>
                               : radix_finish_kernel<Traits, kPayload, false, false>;
  return launch_kernel(finish, blocks, kRadixEncodeThreads, stream, keys,
                       buffers.keys[buffers.key_side], buffers.values[buffers.value_side], tiles,
                       call.descending, counts, flip, out_keys, out_payload);
}

}  // namespace jax_mergepath
