// sort_network.h: the thread level of the mergesort's block sort, shared by the CPU and the GPU:
// a stable sort of kItems keys held by one thread, and the run-pair geometry of the merge rounds
// that follow it inside a tile.
//
// The network is odd-even transposition: kItems rounds, round r compare-exchanging neighbours
// (i, i + 1) for i = r % 2, r % 2 + 2, ...; a pair swaps only when the right key strictly
// precedes the left, so equal keys never pass each other (stable), and after kItems rounds the
// items are sorted. Items at or past `valid` (a short last tile's padding) never move and never
// move others: they stay last.
#pragma once

#include "jax_mergepath/batch_geometry.h"
#include "jax_mergepath/host_device.h"
#include "jax_mergepath/ordering.h"

namespace jax_mergepath {

// Sorts raw[0, valid) (key bits) with payload[] moved alongside. Payload is an integer type (a
// dummy byte when there is none: the compiler drops it).
template <int kItems, typename Traits, typename Payload>
JMP_HD void sort_network(typename Traits::Bits (&raw)[kItems], Payload (&payload)[kItems],
                         int valid, typename Traits::Bits flip) {
  using Bits = typename Traits::Bits;
  Bits ord[kItems];
  JMP_UNROLL
  for (int i = 0; i < kItems; ++i) ord[i] = directed_key<Traits>(raw[i], flip);
  JMP_UNROLL
  for (int round = 0; round < kItems; ++round) {
    JMP_UNROLL
    for (int i = round & 1; i + 1 < kItems; i += 2) {
      const bool swap = (i + 1 < valid) & (ord[i + 1] < ord[i]);
      const Bits o0 = ord[i], o1 = ord[i + 1], r0 = raw[i], r1 = raw[i + 1];
      const Payload p0 = payload[i], p1 = payload[i + 1];
      ord[i] = pick(swap, o1, o0);
      ord[i + 1] = pick(swap, o0, o1);
      raw[i] = pick(swap, r1, r0);
      raw[i + 1] = pick(swap, r0, r1);
      payload[i] = pick(swap, p1, p0);
      payload[i + 1] = pick(swap, p0, p1);
    }
  }
}

// Round r of a tile's merge rounds merges runs of width kItems << r pairwise. The run pair that
// holds tile position p (a thread's first output) in a tile of `valid` keys, and p's diagonal in
// it.
struct RoundMerge {
  RunPair pair;
  int64_t diag;
};

JMP_HD RoundMerge round_merge(int64_t valid, int64_t width, int64_t p) {
  const int64_t pair = p / (2 * width);
  return {run_pair(valid, width, pair), p - pair * 2 * width};
}

// The span a row of `length` keys takes in a block-sort tile of `tile` slots: the whole tile for
// rows at least that long (cut into tiles), else the smallest multiple of items that holds the
// row (a whole number of threads; the merge rounds work inside a segment, their last run pair
// short, so they never cross a row). ncu: items * 2^k segments left rows of 512 keys in 960
// slots, 45% of the threads idle.
JMP_HD constexpr int64_t sort_segment(int64_t length, int64_t items, int64_t tile) {
  if (length >= tile) return tile;
  return ceil_div(length > 0 ? length : 1, items) * items;
}

}  // namespace jax_mergepath
