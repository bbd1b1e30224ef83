// merge_path.h: the merge-path core shared by every backend and operation.
//
// A row merges A (allocated length m, of which the first mv are valid) with B (n, nv valid).
// The output is the stable merge of the valid parts, then A's invalid tail, then B's invalid tail
// (SPEC.md's ragged merge). That is exactly a stable merge in an EXTENDED order in which every
// valid key precedes every A-tail element, which precedes every B-tail element; so one predicate,
// `b_first`, drives both the co-rank search and the serial merge, and full-length merges are the
// case mv == m, nv == n. Ties go to A (stable: all of A before all of B).
//
// Index convention: element j of B has position m + j in the row's concatenation [A | B].
// Every function here only reads A[i] for i < mv and B[j] for j < nv, so unsorted input can
// reorder the output but never reads outside the row.
#pragma once

#include <cstdint>

#include "jax_mergepath/host_device.h"
#include "jax_mergepath/ordering.h"

namespace jax_mergepath {

// How the rows of one batched merge are laid out in memory.
//   kSeparate: a is (rows, m), b is (rows, n); per-row valid lengths a_valid / b_valid (or null).
//   kRuns:     x is (rows, d) holding [A | B] with a per-row split (merge_runs); a == b == x.
enum class RowMode : int { kSeparate = 0, kRuns = 1 };

struct MergeLayout {
  RowMode mode;
  int64_t rows;
  int64_t m;  // kSeparate: allocated A length; kRuns: row length d
  int64_t n;  // kSeparate: allocated B length; kRuns: unused (0)
  const int32_t* a_valid;  // kSeparate: per-row valid A length (null: m); kRuns: split per row
  const int32_t* b_valid;  // kSeparate: per-row valid B length (null: n); kRuns: null

  JMP_HD int64_t row_length() const { return mode == RowMode::kRuns ? m : m + n; }
};

// One row's geometry: element offsets of its A and B in the a / b arrays, and its lengths.
struct RowGeometry {
  int64_t a_offset, b_offset, out_offset;
  int64_t m, n;    // allocated lengths of this row's A and B
  int64_t mv, nv;  // valid lengths
};

JMP_HD int64_t clamp_length(int64_t v, int64_t hi) { return v < 0 ? 0 : (v > hi ? hi : v); }

JMP_HD RowGeometry row_geometry(const MergeLayout& layout, int64_t row) {
  RowGeometry g;
  if (layout.mode == RowMode::kRuns) {
    const int64_t d = layout.m;
    const int64_t split = clamp_length(layout.a_valid ? layout.a_valid[row] : 0, d);
    g.a_offset = row * d;
    g.b_offset = row * d + split;
    g.out_offset = row * d;
    g.m = g.mv = split;
    g.n = g.nv = d - split;
  } else {
    g.a_offset = row * layout.m;
    g.b_offset = row * layout.n;
    g.out_offset = row * (layout.m + layout.n);
    g.m = layout.m;
    g.n = layout.n;
    g.mv = layout.a_valid ? clamp_length(layout.a_valid[row], layout.m) : layout.m;
    g.nv = layout.b_valid ? clamp_length(layout.b_valid[row], layout.n) : layout.n;
  }
  return g;
}

// True iff B[j] precedes A[i] in the merged output (both exist). key_a(i) / key_b(j) return
// directed order keys (ordering.h) and are called only for valid elements.
template <typename Index, typename KeyA, typename KeyB>
JMP_HD bool b_first(Index i, Index j, Index mv, Index nv, const KeyA& key_a, const KeyB& key_b) {
  if (j >= nv) return false;  // B's invalid tail comes after all of A
  if (i >= mv) return true;   // A's invalid tail comes after B's valid part
  return key_b(j) < key_a(i);
}

// True iff `next` may follow `prev` in a sorted row (its directed order key is not smaller).
template <typename Traits>
JMP_HD bool in_order(typename Traits::Bits prev, typename Traits::Bits next,
                     typename Traits::Bits flip) {
  return !(directed_key<Traits>(next, flip) < directed_key<Traits>(prev, flip));
}

// Merge-path partition: the number of A elements among the first k outputs of merge(A, B),
// A of length m (mv valid) and B of length n (nv valid), 0 <= k <= m + n, searched in
// [lo, hi] (which must hold the answer: for sorted input any bounds from a neighbouring
// diagonal's split do, e.g. [split(k - d), split(k - d) + d]).
template <typename Index, typename KeyA, typename KeyB>
JMP_HD Index co_rank_between(Index k, Index lo, Index hi, Index mv, Index nv, const KeyA& key_a,
                             const KeyB& key_b) {
  while (lo < hi) {
    const Index mid = lo + (hi - lo) / 2;
    // Does A[mid] precede B[k - 1 - mid]? Then more than mid elements of A are in the prefix.
    if (b_first(mid, static_cast<Index>(k - 1 - mid), mv, nv, key_a, key_b)) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

template <typename Index>
JMP_HD Index co_rank_lower(Index k, Index n) { return k > n ? k - n : Index(0); }

template <typename Index>
JMP_HD Index co_rank_upper(Index k, Index m) { return k < m ? k : m; }

template <typename Index, typename KeyA, typename KeyB>
JMP_HD Index co_rank(Index k, Index m, Index n, Index mv, Index nv, const KeyA& key_a,
                     const KeyB& key_b) {
  return co_rank_between(k, co_rank_lower(k, n), co_rank_upper(k, m), mv, nv, key_a, key_b);
}

// Clamp a tile's end split so the tile reads disjoint, in-range parts of A and B even when the
// input is unsorted (co_rank is monotone in k only for sorted input). Returns the A end.
template <typename Index>
JMP_HD Index clamp_split_end(Index i_begin, Index k_begin, Index i_end, Index k_end, Index m,
                             Index n) {
  Index lo = i_begin > k_end - n ? i_begin : k_end - n;
  Index hi = i_begin + (k_end - k_begin);
  hi = hi < m ? hi : m;
  return i_end < lo ? lo : (i_end > hi ? hi : i_end);
}

// Stable serial merge of `count` outputs starting at split (i, j), never taking A past i_end or
// B past j_end. emit(c, from_b, source) receives the c-th output's origin (source = i or j).
// While both current elements are valid and inside the bounds, a step is branch-free (one
// comparison picks the side); the rest (a side exhausted, or invalid tails) follows b_first.
template <typename Index, typename KeyA, typename KeyB, typename Emit>
JMP_HD void serial_merge(Index i, Index j, Index i_end, Index j_end, Index mv, Index nv,
                         Index count, const KeyA& key_a, const KeyB& key_b, const Emit& emit) {
  const Index i_fast = i_end < mv ? i_end : mv;
  const Index j_fast = j_end < nv ? j_end : nv;
  Index c = 0;
  while (i < i_fast && j < j_fast) {
    const Index take_b = key_b(j) < key_a(i);  // 0 or 1: arithmetic keeps the step branch-free
    emit(c, take_b != 0, i + take_b * (j - i));
    i += 1 - take_b;
    j += take_b;
    ++c;
  }
  for (; c < count; ++c) {
    const bool from_b = j < j_end && (i >= i_end || b_first(i, j, mv, nv, key_a, key_b));
    emit(c, from_b, from_b ? j : i);
    i += from_b ? 0 : 1;
    j += from_b ? 1 : 0;
  }
}

}  // namespace jax_mergepath
