// warp_merge.cuh (level: kernels): full rows of at most a warp's outputs (tuning/merge.h
// merge_takes_warp_rows) merged in registers by a bitonic network of warp shuffles, without
// shared memory. A group of G lanes a row (G: the row length's power-of-two ceiling,
// tuning/merge.h warp_rows_group_log2; 32 / G rows a warp at once, warp_rows_slots such sets a
// warp, all loaded before any is merged). The row is laid out bitonic: A ascending in lanes
// [0, m), B descending in lanes [G - n, G) (B[j] at lane G - 1 - j), padding between them that
// goes after every element; each lane's element carries its tag, its index in [A | B] (a merge's
// index of it, kIndex; padding G + lane), and log2(G) compare-exchange stages of lanes t and
// t ^ stride order the pairs (order key, tag): the stable merge, ties A first. Lane p then holds
// output p: it fetches the element's raw bits (and value) from the lane that loaded it, and the
// row is stored contiguously. A network only exchanges, so unsorted input still gives a
// permutation of each row, whatever its neighbours hold. Ranks payloads (searchsorted's short
// rows) store, for each element of the ranked side, its output place less its index in its side.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "../block/grid_launch.cuh"
#include "jax_mergepath/batch_geometry.h"
#include "jax_mergepath/call_args.h"
#include "jax_mergepath/key_types.h"
#include "jax_mergepath/ordering.h"
#include "jax_mergepath/tuning/merge.h"

namespace jax_mergepath {

// Bits of lane `src` (or, with xor_lanes, of this lane XOR src) of the warp; every lane calls it.
template <typename T>
__device__ __forceinline__ T warp_exchange(T value, int src, bool xor_lanes) {
  using Word = std::conditional_t<sizeof(T) == 8, unsigned long long, unsigned>;
  const Word w = static_cast<Word>(value);
  return static_cast<T>(xor_lanes ? __shfl_xor_sync(0xffffffffu, w, src)
                                  : __shfl_sync(0xffffffffu, w, src));
}

// The bitonic merge of a group's (order key, tag) pairs, strides group / 2 down to 1, ascending:
// keys of up to 4 bytes as one 64-bit word (key above, tag below), 8-byte keys as two.
template <typename Bits>
__device__ __forceinline__ void warp_bitonic_merge(Bits& key, uint32_t& tag, int lane,
                                                   int group) {
  if constexpr (sizeof(Bits) <= 4) {
    uint64_t pair = (uint64_t{key} << 32) | tag;
    for (int stride = group >> 1; stride > 0; stride >>= 1) {
      const uint64_t other = warp_exchange(pair, stride, true);
      const bool lower = (lane & stride) == 0;
      pair = (other < pair) == lower ? other : pair;
    }
    key = static_cast<Bits>(pair >> 32);
    tag = static_cast<uint32_t>(pair);
  } else {
    for (int stride = group >> 1; stride > 0; stride >>= 1) {
      const Bits other_key = warp_exchange(key, stride, true);
      const uint32_t other_tag = warp_exchange(tag, stride, true);
      const bool first = other_key < key || (other_key == key && other_tag < tag);
      const bool take = first == ((lane & stride) == 0);
      key = take ? other_key : key;
      tag = take ? other_tag : tag;
    }
  }
}

// Thread t of a block is lane t % 32 of warp t / 32; a warp holds rows [r0, r0 + kSlots * 32 / G)
// (the lanes of set u: rows r0 + u * 32 / G + lane / G).
template <typename Traits, PayloadKind kPayload, typename Value,
          int kSlots = warp_rows_slots(int(sizeof(typename Traits::Bits))),
          int kMinBlocks = kWarpRowsMinBlocks>
__global__ void __launch_bounds__(kWarpRowsThreads, kMinBlocks)
    merge_warp_rows_kernel(MergeCall call, typename Traits::Bits flip, int group_log2) {
  using Bits = typename Traits::Bits;
  constexpr bool kValues = kPayload == PayloadKind::kValue;
  using Held = std::conditional_t<kValues, Value, uint8_t>;  // (a value, or nothing)
  grid_prologue();
  const MergeLayout& layout = call.layout;
  const int group = 1 << group_log2;
  const int lane = static_cast<int>(threadIdx.x & 31u);
  const int l = lane & (group - 1);  // this lane's place in its row's group
  const int first_lane = lane - l;
  const int rows_at_once = 32 >> group_log2;
  const int64_t warp = (int64_t{blockIdx.x} * kWarpRowsThreads + threadIdx.x) >> 5;
  const int64_t row0 = warp * kSlots * rows_at_once + (lane >> group_log2);
  const int length = static_cast<int>(layout.row_length());
  const bool separate = layout.mode == RowMode::kSeparate;
  // The row's A length (kRuns: its split), and this lane's element: A[l], B[group - 1 - l], or
  // padding (-1).
  auto split_of = [&](int64_t row) {
    return row < layout.rows ? static_cast<int>(row_geometry(layout, row).m) : length;
  };
  auto side_index = [&](int m) {
    return l < m ? l : (l >= group - (length - m) ? group - 1 - l : -1);
  };
  Bits raw[kSlots];
  Held held[kSlots];
#pragma unroll
  for (int u = 0; u < kSlots; ++u) {
    const int64_t row = row0 + int64_t{u} * rows_at_once;
    raw[u] = 0;
    held[u] = 0;
    if (row < layout.rows) {
      const RowGeometry g = row_geometry(layout, row);
      const int m = static_cast<int>(g.m);
      const int e = side_index(m);
      if (e >= 0) {
        const bool from_b = l >= m;
        const int64_t at = (from_b ? g.b_offset : g.a_offset) + e;
        raw[u] = static_cast<const Bits*>(from_b && separate ? call.b : call.a)[at];
        if constexpr (kValues) {
          held[u] =
              static_cast<const Value*>(from_b && separate ? call.b_values : call.a_values)[at];
        }
      }
    }
  }
#pragma unroll
  for (int u = 0; u < kSlots; ++u) {
    const int64_t row = row0 + int64_t{u} * rows_at_once;
    if (row - (lane >> group_log2) >= layout.rows) break;  // (warp-uniform: no row left)
    const int m = split_of(row);
    const int e = side_index(m);
    Bits key = e >= 0 ? directed_key<Traits>(raw[u], flip) : static_cast<Bits>(~Bits(0));
    uint32_t tag = e < 0 ? uint32_t(group + l) : uint32_t(l < m ? e : m + e);
    warp_bitonic_merge(key, tag, lane, group);
    // Lane l holds output l; its element came from the lane that loaded it.
    const int t = static_cast<int>(tag);
    const int src = first_lane + (t < m ? t : group - 1 - (t - m));
    Bits out_raw = 0;
    Held out_held = 0;
    if constexpr (!is_ranks(kPayload)) out_raw = warp_exchange(raw[u], src, false);
    if constexpr (kValues) out_held = warp_exchange(held[u], src, false);
    if (row >= layout.rows || l >= length) continue;
    if constexpr (is_ranks(kPayload)) {
      const bool from_b = t >= m;
      const int side = from_b ? t - m : t;
      if ((kPayload == PayloadKind::kRanksOfB) == from_b) {
        const int64_t ranked_len = kPayload == PayloadKind::kRanksOfA ? layout.m : layout.n;
        static_cast<int32_t*>(call.out_payload)[row * ranked_len + side] = l - side;
      }
    } else {
      const int64_t out = row * length + l;
      static_cast<Bits*>(call.out)[out] = out_raw;
      if constexpr (kPayload == PayloadKind::kIndex) {
        static_cast<int32_t*>(call.out_payload)[out] = t;
      } else if constexpr (kValues) {
        static_cast<Value*>(call.out_payload)[out] = out_held;
      }
    }
  }
}

}  // namespace jax_mergepath
