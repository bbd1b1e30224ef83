// merge_path.h (level: thread, shared core): the merge-path core shared by every backend and
// operation: the one order predicate, the co-rank searches and the serial merges. CPU loops and
// CUDA kernels call these same functions, so CPU CI tests the arithmetic the GPU runs.
//
// A merge takes A (m elements, of which the first mv are valid) and B (n, nv valid). Its output
// is the stable merge of the valid parts, then A's invalid tail, then B's invalid tail
// (docs/contract.md's ragged merge): exactly a stable merge in an EXTENDED order in which every
// valid key precedes every A-tail element, which precedes every B-tail element. So one predicate,
// `b_first`, drives the searches and the merges, and full-length merges are the case mv == m,
// nv == n. Ties go to A (stable: all of A before all of B).
//
// Searches read A[i] only for i < mv and B[j] only for j < nv, so unsorted input can reorder an
// output but never reads outside its ranges. Serial merges read keys from a STAGED buffer (shared
// memory on the GPU, a per-thread buffer on the CPU) at "positions": A at [a_loc, a_loc + m), B at
// [b_loc, b_loc + n), every position below the buffer's end.
#pragma once

#include <cstdint>

#include "jax_mergepath/batch_geometry.h"
#include "jax_mergepath/host_device.h"
#include "jax_mergepath/ordering.h"

namespace jax_mergepath {

// The order of readers that return directed order keys already.
struct KeysAsRead {
  template <typename Key>
  JMP_HD Key operator()(Key key) const { return key; }
};

// True iff B[j] precedes A[i] in the merged output (both exist). key_a(i) / key_b(j) read the
// elements, `order` maps what they return to directed order keys (ordering.h; by default they
// return those keys); they are called only for valid elements. Both elements are read before
// either is ordered, so a GPU search step waits for its two loads once (with each load's order
// key right after it, ptxas issued the second load only after the first had arrived;
// docs/performance.md).
template <typename Index, typename KeyA, typename KeyB, typename Order = KeysAsRead>
JMP_HD bool b_first(Index i, Index j, Index mv, Index nv, const KeyA& key_a, const KeyB& key_b,
                    const Order& order = {}) {
  if (j >= nv) return false;  // B's invalid tail comes after all of A
  if (i >= mv) return true;   // A's invalid tail comes after B's valid part
  const auto b = key_b(j);
  const auto a = key_a(i);
  return order(b) < order(a);
}

// The side of the next output at split (i, j) of ranges of m and n elements (mv / nv valid): B
// iff B has one left and A has none, or B's is valid and goes first. ord_a / ord_b are the
// (cached) order keys of A[i] / B[j]; they only matter when those are valid.
template <typename Index, typename Bits>
JMP_HD bool next_from_b(Index i, Index j, Index m, Index n, Index mv, Index nv, Bits ord_a,
                        Bits ord_b) {
  return j < n && (i >= m || (j < nv && (i >= mv || ord_b < ord_a)));
}

// True iff `next` may follow `prev` in a sorted row (its directed order key is not smaller).
template <typename Traits>
JMP_HD bool in_order(typename Traits::Bits prev, typename Traits::Bits next,
                     typename Traits::Bits flip) {
  return !(directed_key<Traits>(next, flip) < directed_key<Traits>(prev, flip));
}

// ------------------------------------------------------------------ co-rank searches
// The split of diagonal k is the first i in [lo, hi) with b_before(i) ("B[k - 1 - i] precedes
// A[i]"), else hi; for sorted input b_before is monotone and every search below gives the same
// i. lo, hi >= 0.

template <typename Index>
JMP_HD Index co_rank_lower(Index k, Index n) { return k > n ? k - n : Index(0); }

template <typename Index>
JMP_HD Index co_rank_upper(Index k, Index m) { return k < m ? k : m; }

// Bisection: ceil(log2(hi - lo + 1)) probes, each halving [lo, hi).
template <typename Index, typename BBefore>
JMP_HD Index co_rank_search(Index lo, Index hi, const BBefore& b_before) {
  while (lo < hi) {
    const Index mid = (lo + hi) >> 1;
    const bool before = b_before(mid);
    hi = before ? mid : hi;
    lo = before ? lo : mid + 1;
  }
  return lo;
}

JMP_HD int64_t floor_power_of_two(int64_t x) {  // x > 0
#if defined(__CUDA_ARCH__)
  return int64_t{1} << (63 - __clzll(x));
#else
  return int64_t{1} << (63 - __builtin_clzll(static_cast<unsigned long long>(x)));
#endif
}

// The same split found on the ABSOLUTE power-of-two grid of [0, m): probes walk down powers of
// two from 0, so the first probes are the same few elements of A for every diagonal (cache hits
// when many searches run over one merge); probes outside [lo, hi) read nothing. Ends in [lo, hi]
// even for unsorted input (the clamp guards it anyway).
template <typename BBefore>
JMP_HD int64_t grid_co_rank_search(int64_t lo, int64_t hi, int64_t m, const BBefore& b_before) {
  int64_t count = 0;  // every i < count is known to precede the split
  for (int64_t step = m > 0 ? floor_power_of_two(m) : 0; step > 0; step >>= 1) {
    const int64_t i = count + step - 1;
    if (i >= hi) continue;
    if (i < lo || !b_before(i)) count += step;
  }
  return count < lo ? lo : (count > hi ? hi : count);
}

// Merge-path partition of one merge: the number of A elements among its first k outputs,
// 0 <= k <= m + n, searched in [lo, hi] (bounds that must hold the answer; for sorted input a
// neighbouring diagonal's split gives some).
template <typename Index, typename KeyA, typename KeyB>
JMP_HD Index co_rank_between(Index k, Index lo, Index hi, Index mv, Index nv, const KeyA& key_a,
                             const KeyB& key_b) {
  return co_rank_search(lo, hi, [&](Index i) {
    return b_first(i, static_cast<Index>(k - 1 - i), mv, nv, key_a, key_b);
  });
}

template <typename Index, typename KeyA, typename KeyB>
JMP_HD Index co_rank(Index k, Index m, Index n, Index mv, Index nv, const KeyA& key_a,
                     const KeyB& key_b) {
  return co_rank_between(k, co_rank_lower(k, n), co_rank_upper(k, m), mv, nv, key_a, key_b);
}

// ------------------------------------------------------------------ four-way merges
// A quad pass of a mergesort merges four consecutive sorted runs A, B, C, D at once (ties in that
// order: stable) as merge(X, Y) of X = merge(A, B) and Y = merge(C, D), neither of which is ever
// written. Its tiles need, for an output diagonal d, how many outputs come from X (x) and the
// splits of X and Y there (a of A, c of C). X and Y are only known through their own two-way
// splits sampled every `tile` outputs (xs(k) / ys(k): A's / C's elements among the first
// min(k tile, length) outputs; the partition pass of the pairs (A, B), (C, D)). d is a multiple
// of tile or the end.
struct QuadSplit {
  int64_t x, a, c;
};

// Exact co-ranks s0, s1 of a pair (P, Q) at two diagonals i0 <= i1: for i0 <= i <= i1, P's
// count co_rank(i) lies in [s0, s1] and Q's, i - co_rank(i), in [i0 - s0, i1 - s1] (both are
// monotone in i).
struct PairBracket {
  int64_t i0, s0, i1, s1;
};

// The bracket of the sampled splits around [p0, p0 + tile] (p0 a multiple of tile) of a pair
// with lp + lq outputs; the one past the end is lp (read nothing).
template <typename Splits>
JMP_HD PairBracket sample_bracket(int64_t p0, int64_t tile, int64_t lp, int64_t lq,
                                  const Splits& split_at) {
  const int64_t length = lp + lq, k = p0 / tile;
  const int64_t s0 = p0 >= length ? lp : split_at(k);
  const int64_t p1 = p0 + tile < length ? p0 + tile : length;
  return {p0 < length ? p0 : length, s0, p1, p1 >= length ? lp : split_at(k + 1)};
}

// The counts of K sorted runs among the first d outputs of their stable merge (ties in run
// order; the counts sum to d), each known to lie in [lo[r], hi[r]] on entry, exact in lo on
// return (lo == hi). raw_of(r, i): run r's element at i as stored; order(raw): its directed
// order key (ordering.h), which `<` compares. Bisections of every open bracket at once. A step
// has the middle element of every open bracket and decides, in the stable order of the middles
// (key, then run), every one it can:
//   * if a middle is among the first d outputs, so is every middle before it, and d >= the
//     counts through those middles plus lo of the other runs (`below`): where that passes d,
//     the middle is not among them (hi = middle);
//   * if it is not, no middle after it is, and d <= hi of the middles before it plus the
//     other middles (`above`): where that falls short of d, it is among them (lo = middle + 1).
// The last middle or the first is always decided (one of the two sums passes), often more:
// the same loads as one bracket a step, fewer steps in a row (host count on random keys, four
// runs of width 2^15, tile 2805: 33 steps instead of 43; eight runs of width 9984: ~70). Both
// sums are the lo's plus gains, one comparison a pair of middles (O(K^2) adds a step; the
// eight-way pass runs these steps a lane a run: eight_way_merge.cuh k_way_co_rank_lanes). A
// step's loads are issued together, raw reads first and their order keys after (a load and its
// order key together, one run after the other, made each step wait for its loads one at a time
// on an H100: ncu put 60% of the quad partition's stall samples on the order key after each
// load). (Also tried: a middle decided by order against the last element known to be among the
// first d and the first known not to be: 26 steps, but the partition took 20% longer on an
// H100.) Loops unrolled over the runs: no runtime array index.
template <int K, typename RawOf, typename Order>
JMP_HD void k_way_split(int64_t d, int64_t (&lo)[K], int64_t (&hi)[K], const RawOf& raw_of,
                        const Order& order) {
  using Raw = decltype(raw_of(0, 0));
  using Key = decltype(order(raw_of(0, 0)));
  int64_t mid[K];
  Key middle[K];
  bool load[K];
  auto load_middles = [&] {
    Raw raw[K];
    JMP_UNROLL
    for (int r = 0; r < K; ++r) {
      raw[r] = Raw(0);
      if (load[r]) raw[r] = raw_of(r, mid[r]);
    }
    JMP_UNROLL
    for (int r = 0; r < K; ++r) middle[r] = load[r] ? order(raw[r]) : middle[r];
  };
  JMP_UNROLL
  for (int r = 0; r < K; ++r) {
    mid[r] = (lo[r] + hi[r]) >> 1;
    middle[r] = Key(0);
    load[r] = lo[r] < hi[r];
  }
  load_middles();
  for (;;) {
    // below of r: the lo's, plus through_mid of r and of every middle before it; above of r:
    // the lo's and every open bracket's mid - lo, plus past_mid of every middle before it.
    bool open[K];
    int64_t through_mid[K], past_mid[K];
    int64_t los = 0, to_mids = 0;
    bool any = false;
    JMP_UNROLL
    for (int t = 0; t < K; ++t) {
      open[t] = lo[t] < hi[t];
      any = any || open[t];
      los += lo[t];
      through_mid[t] = open[t] ? mid[t] + 1 - lo[t] : 0;
      past_mid[t] = open[t] ? hi[t] - mid[t] : 0;
      to_mids += open[t] ? mid[t] - lo[t] : 0;
    }
    if (!any) return;
    int64_t below[K], above[K];
    JMP_UNROLL
    for (int r = 0; r < K; ++r) {
      below[r] = los + through_mid[r];
      above[r] = los + to_mids;
    }
    JMP_UNROLL
    for (int r = 1; r < K; ++r) {
      JMP_UNROLL
      for (int t = 0; t < r; ++t) {
        const bool t_first = !(middle[r] < middle[t]);  // t's middle before r's (ties: run order)
        below[r] += t_first ? through_mid[t] : 0;
        above[r] += t_first ? past_mid[t] : 0;
        below[t] += t_first ? 0 : through_mid[r];
        above[t] += t_first ? 0 : past_mid[r];
      }
    }
    JMP_UNROLL
    for (int r = 0; r < K; ++r) {
      const bool out = open[r] && below[r] > d;
      const bool in = open[r] && !out && above[r] < d;
      hi[r] = out ? mid[r] : hi[r];
      lo[r] = in ? mid[r] + 1 : lo[r];
      mid[r] = (lo[r] + hi[r]) >> 1;  // unchanged where the bracket is
      load[r] = (out || in) && lo[r] < hi[r];
    }
    load_middles();
  }
}

// The four runs of a quad: lengths, raw readers (raw_a(i) .. raw_d(i): the element at i, as
// stored) and `order` (raw value -> the directed order key that `<` compares: ordering.h). Raw
// reads and the order apart, so a search can issue several loads before it uses any.
template <typename RawA, typename RawB, typename RawC, typename RawD, typename Order>
struct QuadKeys {
  int64_t la, lb, lc, ld;
  const RawA& raw_a;
  const RawB& raw_b;
  const RawC& raw_c;
  const RawD& raw_d;
  const Order& order;

  // The element of run r (0..3: A, B, C, D) at i, as stored / as its order key.
  JMP_HD auto raw_of(int r, int64_t i) const {
    return r == 0 ? raw_a(i) : (r == 1 ? raw_b(i) : (r == 2 ? raw_c(i) : raw_d(i)));
  }
  JMP_HD auto key_of(int r, int64_t i) const { return order(raw_of(r, i)); }

  // X[i] (i < la + lb) from X's split (a, i - a): the next output there.
  JMP_HD auto x_next(int64_t a, int64_t i) const {
    return b_first(a, i - a, la, lb, raw_a, raw_b, order) ? key_of(1, i - a) : key_of(0, a);
  }
  // Y[m - 1] (1 <= m <= lc + ld) from Y's split (c, m - c): the last output before it (D's on
  // a tie: it went after C's).
  JMP_HD auto y_last(int64_t c, int64_t m) const {
    const int64_t e = m - c;
    if (c == 0) return key_of(3, e - 1);
    if (e == 0) return key_of(2, c - 1);
    const auto raw_c_last = raw_of(2, c - 1), raw_d_last = raw_of(3, e - 1);  // both loads first
    const auto from_c = order(raw_c_last), from_d = order(raw_d_last);
    return from_d < from_c ? from_c : from_d;
  }
  // b_first of the merge of X with Y at X split i (Y split m = d - i), from the pairs' splits
  // there: Y's element goes first only when strictly smaller.
  JMP_HD bool y_before(int64_t a, int64_t i, int64_t c, int64_t m) const {
    return y_last(c, m) < x_next(a, i);
  }
  // The counts of the four runs among the first d outputs of their stable merge, each known
  // to lie in [lo[r], hi[r]]: k_way_split (above) of runs A, B, C, D.
  JMP_HD void four_way_split(int64_t d, int64_t (&lo)[4], int64_t (&hi)[4]) const {
    k_way_split<4>(d, lo, hi, [&](int r, int64_t i) { return raw_of(r, i); }, order);
  }
};

template <typename RawA, typename RawB, typename RawC, typename RawD, typename Order>
JMP_HD QuadKeys<RawA, RawB, RawC, RawD, Order> quad_keys(int64_t la, int64_t lb, int64_t lc,
                                                         int64_t ld, const RawA& raw_a,
                                                         const RawB& raw_b, const RawC& raw_c,
                                                         const RawD& raw_d, const Order& order) {
  return {la, lb, lc, ld, raw_a, raw_b, raw_c, raw_d, order};
}

// Brackets of a quad split: X's and Y's sampled splits around the outputs x of X and d - x of
// Y that the split takes.
struct QuadBrackets {
  PairBracket x, y;
};

// The first step of a quad split of diagonal d (a multiple of tile, or the end): the tile of X
// that holds x, by a search of the samples alone (X[k tile] and Y[d - k tile - 1] sit next to
// sampled splits: b_first of X with Y there needs no key search), and the samples around it.
template <typename Keys, typename XSplits, typename YSplits>
JMP_HD QuadBrackets quad_brackets(const Keys& q, int64_t d, int64_t tile, const XSplits& xs,
                                  const YSplits& ys) {
  const int64_t xl = q.la + q.lb, yl = q.lc + q.ld;
  const int64_t lo = co_rank_lower(d, yl), hi = co_rank_upper(d, xl);
  if (lo >= hi) {  // x == lo (the end boundary among them)
    return {sample_bracket(lo / tile * tile, tile, q.la, q.lb, xs),
            sample_bracket((d - lo) / tile * tile, tile, q.lc, q.ld, ys)};
  }
  auto y_before_sample = [&](int64_t k) {
    const int64_t i = k * tile;
    return q.y_before(xs(k), i, ys((d - i) / tile), d - i);
  };
  const int64_t k_min = ceil_div(lo, tile), k_max = (hi - 1) / tile;
  const int64_t k_first = k_min <= k_max ? co_rank_search(k_min, k_max + 1, y_before_sample)
                                         : k_max + 1;
  // x lies in [(k_first - 1) tile + 1, k_first tile] (or [lo, ...] / [..., hi] at the ends),
  // inside the tile of X from i0 and the tile of Y up to d - i0.
  const int64_t fhi = k_first <= k_max ? k_first * tile : hi;
  const int64_t i0 = fhi > 0 ? (fhi - 1) / tile * tile : 0;
  return {sample_bracket(i0, tile, q.la, q.lb, xs),
          sample_bracket(d - i0 - tile > 0 ? d - i0 - tile : 0, tile, q.lc, q.ld, ys)};
}

// The quad split of diagonal d: x is co_rank(d) of the merge of X with Y. Its tile from the
// samples (quad_brackets), whose brackets bound the four runs' counts (A's by X's sampled
// splits, B's by X's outputs less A's, C's and D's by Y's), then QuadKeys::four_way_split inside
// them: up to 4 log2(tile) loads, each step's issued together (33 steps at tile 2805 on random
// keys, above).
template <typename XSplits, typename YSplits, typename RawA, typename RawB, typename RawC,
          typename RawD, typename Order>
JMP_HD QuadSplit quad_co_rank(int64_t d, int64_t tile, int64_t la, int64_t lb, int64_t lc,
                              int64_t ld, const XSplits& xs, const YSplits& ys, const RawA& raw_a,
                              const RawB& raw_b, const RawC& raw_c, const RawD& raw_d,
                              const Order& order) {
  const auto q = quad_keys(la, lb, lc, ld, raw_a, raw_b, raw_c, raw_d, order);
  const QuadBrackets b = quad_brackets(q, d, tile, xs, ys);
  const PairBracket& x = b.x;
  const PairBracket& y = b.y;
  int64_t lo[4] = {x.s0, x.i0 - x.s0, y.s0, y.i0 - y.s0};
  int64_t hi[4] = {x.s1, x.i1 - x.s1, y.s1, y.i1 - y.s1};
  q.four_way_split(d, lo, hi);
  return {lo[0] + lo[1], lo[0], lo[2]};
}

// searchsorted of one query: the number of a's keys (length of them, read by key_at(i) as
// bits) that precede the query ("left") or do not follow it ("right"), in the ascending key
// order (query: the query's directed key, directed_key<Traits>(bits, mask), with mask the
// ascending order_mask of the key type, key_types.h).
template <typename Traits, typename KeyAt>
JMP_HD int64_t insertion_point(int64_t length, typename Traits::Bits query, bool right,
                               typename Traits::Bits mask, const KeyAt& key_at) {
  return co_rank_search(int64_t{0}, length, [&](int64_t mid) {
    const typename Traits::Bits key = directed_key<Traits>(key_at(mid), mask);
    return right ? query < key : !(key < query);
  });
}

// ------------------------------------------------------------------ serial merges
// A merge staged in a buffer: A at [a_loc, a_loc + m) with mv valid, B at [b_loc, b_loc + n) with
// nv valid; length = m + n outputs.
struct StagedSegment {
  int a_loc, b_loc, m, n, mv, nv, length;
};

// Where one thread's serial merge stopped: its A position (in its last segment) after its last
// step; open: that segment goes on past its last output, so the next thread's first output is
// in it (merge_full: the caller knows). The merges report where they started, the A position
// of their first output, through `started(a_begin)` right after their search (a caller that
// publishes it keeps no register for it through the merge). For sorted input a thread stops
// exactly where the next one's search starts it (the merge path); for unsorted input it may
// not, and the outputs are then no permutation (block_merge.cuh SpanChain checks).
struct MergeEnd {
  int a_end;
  bool open;
};

struct IgnoreStart {
  JMP_HD void operator()(int) const {}
};

// Both produce `kCount` outputs (a GPU thread's registers, the loop unrolled) or, with
// kCount == 0, `count` outputs (a CPU loop), starting at diagonal `diag` of the staged merge.

// Every key of both ranges valid (no ragged tail). emit(c, stored, pos): output c is the key
// staged at `pos` (B iff pos >= b_loc). cmp.key(stored) is what cmp.before compares (KeyCompare
// turns raw bits into a comparable key; HeldKey's keys are staged comparable already).
//   kCount > 0 (a GPU thread): a branch-free step whose next key is always keys[pos + 1], the
//     successor on the side just taken (past a side's end it reads B's first key, a gap or the
//     spare slot after B, never used), so the buffer needs one readable slot past B; A[i] and
//     B[j] stay in registers: one shared-memory load an output.
//   kCount == 0 (a host thread, count outputs): while both sides have keys, a branch-free step
//     that reads both sides' next keys (two independent loads are a shorter dependency chain
//     than the cached keys' selects on a CPU), then the side left.
template <int kCount, typename Compare, typename Stored, typename Emit,
          typename Started = IgnoreStart>
JMP_HD MergeEnd merge_full_by(const Stored* keys, int a_loc, int m, int b_loc, int n, int diag,
                              int count, const Compare& cmp, const Emit& emit,
                              const Started& started = {}) {
  auto order = [&](Stored raw) { return cmp.key(raw); };
  using Key = decltype(cmp.key(keys[0]));
  const Stored* a = keys + a_loc;
  const Stored* b_end = keys + b_loc + diag;  // B[diag - 1 - mid] = b_end[-1 - mid]
  const int lo = co_rank_search(co_rank_lower(diag, n), co_rank_upper(diag, m), [&](int mid) {
    return cmp.before(order(b_end[-1 - mid]), order(a[mid]));
  });
  started(lo);
  int i = lo, j = diag - lo;
  if constexpr (kCount == 0) {
    const Stored* b = keys + b_loc;
    int c = 0;
    for (; c < count && i < m && j < n; ++c) {
      const int take_b = cmp.before(order(b[j]), order(a[i]));
      const int pos = pick(take_b != 0, b_loc + j, a_loc + i);
      emit(c, keys[pos], pos);
      i += 1 - take_b;
      j += take_b;
    }
    for (; c < count && i < m; ++c, ++i) emit(c, a[i], a_loc + i);
    for (; c < count && j < n; ++c, ++j) emit(c, b[j], b_loc + j);
    return {i, true};
  } else {
    // The buffer positions of A[i] and B[j], and one past each range.
    int pa = a_loc + i, pb = b_loc + j;
    const int a_stop = a_loc + m, b_stop = b_loc + n;
    Stored raw_a = keys[pa], raw_b = keys[pb];
    Key ord_a = order(raw_a), ord_b = order(raw_b);
    JMP_UNROLL
    for (int c = 0; c < kCount; ++c) {
      const bool from_b = (pb < b_stop) & ((pa >= a_stop) | cmp.before(ord_b, ord_a));
      const int pos = from_b ? pb : pa;
      emit(c, from_b ? raw_b : raw_a, pos);
      const int next = pos + 1;
      pa = from_b ? pa : next;
      pb = from_b ? next : pb;
      const Stored raw = keys[next];
      const Key ord = order(raw);
      raw_a = from_b ? raw_a : raw;
      ord_a = from_b ? ord_a : ord;
      raw_b = from_b ? raw : raw_b;
      ord_b = from_b ? ord : ord_b;
    }
    return {pa - a_loc, true};
  }
}

// merge_full_by on raw key bits, compared as KeyCompare says (ordering.h).
template <int kCount, typename Traits, typename Emit, typename Started = IgnoreStart>
JMP_HD MergeEnd merge_full(const typename Traits::Bits* keys, int a_loc, int m, int b_loc, int n,
                           int diag, int count, typename Traits::Bits flip, const Emit& emit,
                           const Started& started = {}) {
  return merge_full_by<kCount>(keys, a_loc, m, b_loc, n, diag, count, KeyCompare<Traits>(flip),
                               emit, started);
}

// The general merge: ragged ranges (mv < m or nv < n) and segments that follow each other (a
// GPU thread of a packed tile crosses rows). segment_at(p, diag) returns the segment holding
// in-tile output p (fields a_loc, b_loc, m, n, mv, nv, length = m + n) and sets diag, p's
// diagonal in it; load(pos) returns the key bits staged at pos, read only inside the segment's
// ranges. Outputs p0 + c for c < kCount (or count - p0) and p0 + c < count:
// emit(c, raw, from_b, e, segment) with e the element's position in its range.
template <int kCount, typename Traits, typename SegmentAt, typename Load, typename Emit,
          typename Started = IgnoreStart>
JMP_HD MergeEnd merge_general(typename Traits::Bits flip, int p0, int count,
                              const SegmentAt& segment_at, const Load& load, const Emit& emit,
                              const Started& started = {}) {
  using Bits = typename Traits::Bits;
  int diag = 0;
  auto s = segment_at(p0 < count ? p0 : 0, diag);
  auto key_a = [&](int i) { return directed_key<Traits>(load(s.a_loc + i), flip); };
  auto key_b = [&](int j) { return directed_key<Traits>(load(s.b_loc + j), flip); };
  int i = co_rank(diag, s.m, s.n, s.mv, s.nv, key_a, key_b);
  int j = diag - i;
  started(i);
  // A[i] and B[j] (raw bits and order keys) stay in registers: an output costs one load, of the
  // side that advanced, and one order-key transform.
  Bits raw_a = Bits(0), raw_b = Bits(0), ord_a = Bits(0), ord_b = Bits(0);
  auto fetch_both = [&]() {
    raw_a = i < s.m ? load(s.a_loc + i) : Bits(0);
    raw_b = j < s.n ? load(s.b_loc + j) : Bits(0);
    ord_a = directed_key<Traits>(raw_a, flip);
    ord_b = directed_key<Traits>(raw_b, flip);
  };
  fetch_both();
  const int steps = kCount > 0 ? kCount : count - p0;
  JMP_UNROLL
  for (int c = 0; c < steps; ++c) {
    if (p0 + c < count) {
      if (diag == s.length) {  // the next segment (packed rows)
        s = segment_at(p0 + c, diag);
        i = 0;
        j = 0;
        fetch_both();
      }
      const bool from_b = next_from_b(i, j, s.m, s.n, s.mv, s.nv, ord_a, ord_b);
      emit(c, from_b ? raw_b : raw_a, from_b, from_b ? j : i, s);
      i += from_b ? 0 : 1;
      j += from_b ? 1 : 0;
      ++diag;
      const bool more = from_b ? j < s.n : i < s.m;
      const Bits raw = more ? load(from_b ? s.b_loc + j : s.a_loc + i) : Bits(0);
      const Bits ord = directed_key<Traits>(raw, flip);
      raw_a = from_b ? raw_a : raw;
      ord_a = from_b ? ord_a : ord;
      raw_b = from_b ? raw : raw_b;
      ord_b = from_b ? ord : ord_b;
    }
  }
  return {i, p0 < count && diag < s.length};
}

}  // namespace jax_mergepath
