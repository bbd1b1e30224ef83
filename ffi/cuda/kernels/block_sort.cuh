// block_sort.cuh (level: kernels): the block sort of the CUDA mergesort, stable, with its payload,
// on the shared thread level (sort_network.h, merge_path.h) as the CPU runs it. A block sorts
// either one tile of SortPolicy::kTile keys of a long row (the last tile of a row may be short), or
// several short rows packed in one tile, each in its own segment of a whole number of threads'
// slots (sort_segment).
//   1. the block's keys (contiguous in global memory) are loaded into shared memory
//      (tile_io.cuh: 16-byte loads); each thread takes its kItems consecutive slots of its
//      segment into registers as held keys (ordering.h HeldKey: one register a key, compared
//      directly, released to the exact bits at the end) and sorts them with a thread network:
//      min / max (sort_network_keys) for keys alone whose ties are identical bits (integers, and
//      float32 keys of a tile without NaN and -0.0, checked by a vote: PlainHeldKey), else the
//      stable one;
//   2. merge rounds: runs of kItems, 2 kItems, ... of a segment are merged pairwise in shared
//      memory, every thread producing kItems outputs of its run pair with merge_full_by (plain
//      float32 compares in a tile without NaN and -0.0);
//   3. the outputs are released to bits, staged in shared memory at the destination's
//      alignment and stored with 16-byte stores (store_block_staged).
// Already sorted input is not sorted again: a long row flagged sorted by the row flags' kernel
// (row_flags; kernels/sorted_copy.cuh, which has stored it to the final outputs already) is left
// alone, its blocks returning at once; without row flags (rows of at most one tile, no passes)
// the block checks its own segments and, when all are in order, skips steps 1-2.
// Shared memory is dynamic (the wide tiles of 8-byte keys pass the 48 KB of static shared
// memory): launch the kernel with launch_block_sort.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "../block/block_merge.cuh"
#include "../block/grid_launch.cuh"
#include "../block/tile_io.cuh"
#include "jax_mergepath/call_args.h"
#include "jax_mergepath/merge_path.h"
#include "jax_mergepath/sort_network.h"
#include "jax_mergepath/tuning/sort.h"

namespace jax_mergepath {

// Where a block's keys come from: `rows_here` rows of `count` keys in all, starting at global
// element `at`; segment j's keys sit at compact offset j * seg_keys, `valid` of them (the
// segment span is `span` slots).
struct BlockSortPlan {
  int64_t at, first_position;  // global offset; row position of the first key (index payload)
  int count, rows_here, span, seg_keys, valid;
  bool presorted;
};

__device__ __forceinline__ BlockSortPlan block_sort_plan(const SortCall& call, int64_t tile,
                                                         int span, int64_t tiles_per_row,
                                                         bool row_flags) {
  BlockSortPlan plan;
  const int64_t d = call.length;
  plan.span = span;
  if (span < tile) {  // short rows, tile / span of them a block
    const int64_t per_block = tile / span;
    const int64_t row0 = int64_t{blockIdx.x} * per_block;
    plan.rows_here = static_cast<int>(call.rows - row0 < per_block ? call.rows - row0 : per_block);
    plan.at = row0 * d;
    plan.first_position = 0;
    plan.seg_keys = plan.valid = static_cast<int>(d);
    plan.count = plan.rows_here * plan.valid;
    plan.presorted = false;
  } else {  // one tile of a long row
    const int64_t row = blockIdx.x / tiles_per_row, t = blockIdx.x - row * tiles_per_row;
    const int64_t begin = t * tile;
    plan.rows_here = 1;
    plan.at = row * d + begin;
    plan.first_position = begin;
    plan.seg_keys = plan.valid = plan.count =
        static_cast<int>(d - begin < tile ? d - begin : tile);
    plan.presorted = row_flags && call.row_sorted[row] != 0;
  }
  return plan;
}

// What a thread holds in its slots past its segment's keys: for keys alone the largest key (the
// keys network keeps it last; the stable network never reads it), zero with a payload.
template <typename Key, bool kKeysAlone>
__device__ __forceinline__ Key padding_key() {
  if constexpr (!kKeysAlone) {
    return Key(0);
  } else if constexpr (std::is_floating_point_v<Key>) {
    return static_cast<Key>(INFINITY);
  } else {
    return static_cast<Key>(~Key(0));
  }
}

// Whether every key of a thread's slots (valid: how many are keys) would keep its ties identical
// among plain floats (HeldKey::plain).
template <typename Traits, int kItems, typename Key>
__device__ __forceinline__ bool plain_keys(const HeldKey<Traits>& held, const Key (&key)[kItems],
                                           int valid) {
  bool plain = true;
#pragma unroll
  for (int c = 0; c < kItems; ++c) {
    plain &= c >= valid || HeldKey<Traits>::plain(held.release(key[c]));
  }
  return plain;
}

// Shared memory of a block sort: `stage` holds the tile's raw keys as loaded, then the held
// keys of the merge rounds, then the raw outputs staged for the store; `vals` the payload. A
// thread's merge may read up to kItems slots past its segment's keys (outputs past a short
// segment's end, never used), so both hold kTile + kItems slots at least.
template <typename Traits, PayloadKind kPayload, typename Value, int kThreads, int kItems>
struct BlockSortShared {
  using Bits = typename Traits::Bits;
  static constexpr int kTile = kThreads * kItems;
  static constexpr int kSlots = std::max(kSharedSlots<Bits, kTile>, kTile + kItems);
  static constexpr int kStageBytes =
      std::max(kSlots * int(sizeof(Bits)), (kTile + kItems) * kHeldKeyBytes<Traits>);
  static constexpr int kValueSlots =
      kPayload == PayloadKind::kNone ? 1 : std::max(kSharedSlots<Value, kTile>, kTile + kItems);
  alignas(16) unsigned char stage[(kStageBytes + 15) / 16 * 16];
  alignas(16) Value vals[kValueSlots];
};

// keys_out / vals_out: the buffer the passes start from (the outputs when there are none).
// row_flags: the row flags' kernel ran (call.row_sorted holds the rows found sorted, and the
// outputs hold those rows).
template <typename Traits, PayloadKind kPayload, typename Value, typename Policy>
__global__ void __launch_bounds__(Policy::kThreads, Policy::kMinBlocks)
    block_sort_kernel(SortCall call, typename Traits::Bits* keys_out, Value* vals_out,
                      typename Traits::Bits flip, int span, int64_t tiles_per_row,
                      bool row_flags) {
  grid_prologue();
  using Bits = typename Traits::Bits;
  using Key = typename HeldKey<Traits>::Key;
  static_assert(sizeof(Key) == kHeldKeyBytes<Traits>, "BlockSortShared sizes the held keys");
  constexpr int kThreads = Policy::kThreads, kItems = Policy::kItems;
  constexpr int kTile = kThreads * kItems;
  constexpr bool kCarry = kPayload != PayloadKind::kNone;
  // float32 keys: a tile without NaN and -0.0 (nearly every tile of real data) compares as plain
  // floats (PlainHeldKey), every other tile by the NaN-last order. (float64 keys alone took 68
  // registers with both, against 62: 3 blocks an SM instead of 4, and its sort got ~2% slower
  // on an H100; they keep the NaN-last order.)
  constexpr bool kPlainFloats = KeyCompare<Traits>::kFpu && sizeof(typename Traits::Bits) == 4;
  extern __shared__ __align__(16) unsigned char block_sort_memory[];
  auto& shared =
      *reinterpret_cast<BlockSortShared<Traits, kPayload, Value, kThreads, kItems>*>(
          block_sort_memory);
  Bits* raw_stage = reinterpret_cast<Bits*>(shared.stage);
  Key* held_stage = reinterpret_cast<Key*>(shared.stage);
  const HeldKey<Traits> held(flip);
  const BlockSortPlan plan = block_sort_plan(call, kTile, span, tiles_per_row, row_flags);
  if (plan.presorted) return;  // the row flags' kernel stored the row (sorted_copy.cuh)
  const Bits* in = static_cast<const Bits*>(call.keys) + plan.at;
  const Value* vin = static_cast<const Value*>(call.values) + plan.at;
  int loc = 0, vloc = 0, unused = 0;
  load_two_ranges<kThreads, kTile, true>(in, plan.count, in, 0, raw_stage, loc, unused);
  if constexpr (kPayload == PayloadKind::kValue) {
    load_two_ranges<kThreads, kTile, true>(vin, plan.count, vin, 0, shared.vals, vloc, unused);
  }
  wait_async_copies();
  __syncthreads();
  const int p0 = static_cast<int>(threadIdx.x) * kItems;
  const int seg = p0 / plan.span, local = p0 - seg * plan.span;
  const int seg_valid = seg < plan.rows_here ? plan.valid : 0;
  const int src0 = seg * plan.seg_keys + local;  // compact offset of the thread's first key
  Key key[kItems];
  Value pay[kItems];
#pragma unroll
  for (int c = 0; c < kItems; ++c) {
    const bool in_row = local + c < seg_valid;
    key[c] = in_row ? held.hold(raw_stage[loc + src0 + c]) : padding_key<Key, !kCarry>();
    if constexpr (kPayload == PayloadKind::kIndex) {
      pay[c] = static_cast<Value>(plan.first_position + local + c);
    } else if constexpr (kPayload == PayloadKind::kValue) {
      pay[c] = in_row ? shared.vals[vloc + src0 + c] : Value(0);
    } else {
      pay[c] = Value(0);
    }
  }
  bool in_order = false;
  if (!row_flags) {  // are all of the block's segments in order already?
    bool mine = true;
#pragma unroll
    for (int c = 0; c + 1 < kItems; ++c) {
      if (local + c + 1 < seg_valid) mine &= !held.before(key[c + 1], key[c]);
    }
    if (local + kItems < seg_valid) {
      mine &= !held.before(held.hold(raw_stage[loc + src0 + kItems]), key[kItems - 1]);
    }
    in_order = __syncthreads_and(mine) != 0;
  }
  // The thread network, then the merge rounds, in the order of `cmp` (HeldKey's or PlainHeldKey's).
  // Keys alone whose ties are identical bits (integers, plain floats) take the min / max network
  // (not stable, exact for them); their padding (the largest key, padding_key) stays last.
  auto sort_tile = [&](const auto& cmp) {
    constexpr bool kKeysNetwork = !kCarry && std::decay_t<decltype(cmp)>::kTiesIdentical;
    if constexpr (kKeysNetwork) {
      sort_network_keys<kItems>(key);
    } else {
      sort_network<kItems>(key, pay, seg_valid - local, cmp);
    }
    const int seg_base = seg * plan.span, t = local / kItems;
    for (int round = 0; (kItems << round) < plan.valid; ++round) {
      __syncthreads();  // every read of the previous round (or of the load) is done
      // A thread's slots are its own (its padding too, never read as a key): no bounds.
#pragma unroll
      for (int c = 0; c < kItems; ++c) {
        held_stage[p0 + c] = key[c];
        if constexpr (kCarry) shared.vals[p0 + c] = pay[c];
      }
      __syncthreads();
      if (local < seg_valid) {
        const RoundMerge rm = round_merge(seg_valid, kItems, round, t);
        const int a_loc = seg_base + static_cast<int>(rm.pair.begin);
        const int m = static_cast<int>(rm.pair.m), n = static_cast<int>(rm.pair.n);
        int pos_reg[kItems];
        merge_full_by<kItems>(held_stage, a_loc, m, a_loc + m, n, static_cast<int>(rm.diag), 0,
                              cmp, [&](int c, Key k, int pos) {
                                key[c] = k;
                                pos_reg[c] = pos;
                              });
        if constexpr (kCarry) {
#pragma unroll
          for (int c = 0; c < kItems; ++c) pay[c] = shared.vals[pos_reg[c]];
        }
      }
    }
  };
  if (!in_order) {
    if constexpr (kPlainFloats) {
      if (__syncthreads_and(plain_keys<Traits>(held, key, seg_valid - local)) != 0) {
        sort_tile(PlainHeldKey<Traits>(held));
      } else {
        sort_tile(held);
      }
    } else {
      sort_tile(held);
    }
  }
  // Every read of shared memory is done: stage the outputs compactly, at the destination's
  // alignment, and store them with 16-byte stores.
  __syncthreads();
  Bits* out = keys_out + plan.at;
  const RangePlan<Bits> key_plan(out, plan.count, 0);
#pragma unroll
  for (int c = 0; c < kItems; ++c) {
    if (local + c < seg_valid) raw_stage[key_plan.loc + src0 + c] = held.release(key[c]);
  }
  if constexpr (kCarry) {
    Value* vout = vals_out + plan.at;
    const RangePlan<Value> val_plan(vout, plan.count, 0);
#pragma unroll
    for (int c = 0; c < kItems; ++c) {
      if (local + c < seg_valid) shared.vals[val_plan.loc + src0 + c] = pay[c];
    }
    __syncthreads();
    store_block_staged<kThreads>(key_plan, raw_stage, out);
    store_block_staged<kThreads>(val_plan, shared.vals, vout);
  } else {
    __syncthreads();
    store_block_staged<kThreads>(key_plan, raw_stage, out);
  }
}

// Enqueues block_sort_kernel<Traits, kPayload, Value, Policy> on `blocks` blocks with its shared
// memory (raising the kernel's dynamic shared memory limit first where it passes 48 KB: a host
// call, no stream work, per launch as the current device may change).
template <typename Traits, PayloadKind kPayload, typename Value, typename Policy>
cudaError_t launch_block_sort(unsigned blocks, cudaStream_t stream, const SortCall& call,
                              typename Traits::Bits* keys_out, Value* vals_out,
                              typename Traits::Bits flip, int span, int64_t tiles_per_row,
                              bool row_flags) {
  constexpr int kBytes = static_cast<int>(
      sizeof(BlockSortShared<Traits, kPayload, Value, Policy::kThreads, Policy::kItems>));
  auto* kernel = block_sort_kernel<Traits, kPayload, Value, Policy>;
  if constexpr (kBytes > 48 * 1024) {
    if (cudaError_t err =
            cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kBytes);
        err != cudaSuccess) {
      return err;
    }
  }
  return launch_kernel_shared(kernel, blocks, Policy::kThreads, kBytes, stream, call, keys_out,
                              vals_out, flip, span, tiles_per_row, row_flags);
}

}  // namespace jax_mergepath
