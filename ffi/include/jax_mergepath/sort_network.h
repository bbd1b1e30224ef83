// sort_network.h (level: thread, shared core): the thread level of the mergesort's block sort,
// shared by the CPU and the GPU: a sort of kItems keys held by one thread, and the run-pair
// geometry of the merge rounds that follow it inside a tile.
//
// Two networks, both on keys held one register a key (HeldKey, or plain order keys on the CPU):
//   * sort_network: stable, with a payload. Odd-even transposition: kItems rounds, round r
//     compare-exchanging neighbours (i, i + 1) for i = r % 2, r % 2 + 2, ...; a pair swaps only
//     when the right key strictly precedes the left (cmp.before), so equal keys never pass each
//     other, and after kItems rounds the items are sorted. Items at or past `valid` (a short
//     tile's padding) never move and never move others: they stay last.
//   * sort_network_keys: keys alone whose ties are identical bits (integers, or float32 keys of
//     a tile without NaN and -0.0: ordering.h PlainHeldKey), so stability is moot: Batcher's
//     odd-even merge sort, a min and a max a comparator (about half the comparators of the
//     transposition network at 16 items, and a third of the instructions).
//     The caller fills padding slots with the largest key, which no comparator moves.
#pragma once

#include <cmath>
#include <utility>

#include "jax_mergepath/batch_geometry.h"
#include "jax_mergepath/host_device.h"
#include "jax_mergepath/ordering.h"

namespace jax_mergepath {

// Sorts key[0, valid) stably with payload[] moved alongside. Payload is an integer type (a
// dummy byte when there is none: the compiler drops it). cmp.before(x, y): x strictly precedes y.
template <int kItems, typename Key, typename Payload, typename Compare>
JMP_HD void sort_network(Key (&key)[kItems], Payload (&payload)[kItems], int valid,
                         const Compare& cmp) {
  JMP_UNROLL
  for (int round = 0; round < kItems; ++round) {
    JMP_UNROLL
    for (int i = round & 1; i + 1 < kItems; i += 2) {
      const bool swap = (i + 1 < valid) & cmp.before(key[i + 1], key[i]);
      const Key k0 = key[i], k1 = key[i + 1];
      const Payload p0 = payload[i], p1 = payload[i + 1];
      key[i] = swap ? k1 : k0;
      key[i + 1] = swap ? k0 : k1;
      payload[i] = pick(swap, p1, p0);
      payload[i + 1] = pick(swap, p0, p1);
    }
  }
}

// Batcher's odd-even merge sort on the next power of two above kItems, as a compile-time list
// of comparators (lo, hi), those that touch a slot >= kItems dropped: such a slot would hold the
// largest key, which a comparator (low slot gets the minimum) never moves.
struct Comparator {
  int lo, hi;
};

template <int kItems>
struct MergeExchangeNetwork {
  template <typename Visit>
  static constexpr void visit(Visit&& visit) {
    int levels = 0;
    while ((1 << levels) < kItems) ++levels;
    for (int lp = 0; lp < levels; ++lp) {
      const int p = 1 << lp;
      for (int k = p; k >= 1; k /= 2) {
        for (int j = k % p; j + k < kItems; j += 2 * k) {
          for (int i = 0; i < k && i + j + k < kItems; ++i) {
            if ((i + j) / (2 * p) == (i + j + k) / (2 * p)) visit(Comparator{i + j, i + j + k});
          }
        }
      }
    }
  }
  static constexpr int count() {
    int n = 0;
    visit([&](Comparator) { ++n; });
    return n;
  }
  static constexpr int kCount = count();
  struct Table {
    Comparator at[kCount > 0 ? kCount : 1];
  };
  static constexpr Table table() {
    Table t{};
    int n = 0;
    visit([&](Comparator c) { t.at[n++] = c; });
    return t;
  }
  static constexpr Table kTable = table();
};

// The smaller / larger of two keys of the keys network: integers by compare and select, float32
// (PlainHeldKey's: no NaN, one zero) by the FPU's min / max, exact there.
template <typename Key>
JMP_HD Key network_min(Key a, Key b) { return a < b ? a : b; }
template <typename Key>
JMP_HD Key network_max(Key a, Key b) { return a < b ? b : a; }
JMP_HD float network_min(float a, float b) { return fminf(a, b); }
JMP_HD float network_max(float a, float b) { return fmaxf(a, b); }

template <typename Key, int kItems, int... kQ>
JMP_HD void sort_network_keys_at(Key (&key)[kItems], std::integer_sequence<int, kQ...>) {
  using Net = MergeExchangeNetwork<kItems>;
  auto exchange = [&](auto lo, auto hi) {
    const Key a = key[decltype(lo)::value], b = key[decltype(hi)::value];
    key[decltype(lo)::value] = network_min(a, b);
    key[decltype(hi)::value] = network_max(a, b);
  };
  (exchange(std::integral_constant<int, Net::kTable.at[kQ].lo>{},
            std::integral_constant<int, Net::kTable.at[kQ].hi>{}),
   ...);
}

// Sorts key[] ascending (integers as unsigned; padding: the largest value), by the merge-exchange
// network above: a min and a max a comparator, every index a constant (registers only).
template <int kItems, typename Key>
JMP_HD void sort_network_keys(Key (&key)[kItems]) {
  sort_network_keys_at<Key, kItems>(
      key, std::make_integer_sequence<int, MergeExchangeNetwork<kItems>::kCount>{});
}

// Round r of a tile's merge rounds merges runs of width items << r pairwise. The run pair that
// holds the outputs of a segment's thread t (outputs t * items, ...) in a segment of `valid`
// keys, and the diagonal of its first output in it (a shift, no division: the GPU's threads
// ask every round).
struct RoundMerge {
  RunPair pair;
  int64_t diag;
};

JMP_HD RoundMerge round_merge(int64_t valid, int items, int round, int t) {
  const RunPair pair = run_pair(valid, int64_t{items} << round, t >> (round + 1));
  return {pair, int64_t{t} * items - pair.begin};
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
