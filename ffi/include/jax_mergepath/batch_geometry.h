// batch_geometry.h (level: shared core): a batch of merges and its tile map, the one description
// every loop and kernel asks (CPU merge, CUDA partition and merge kernels, sort passes, block sort
// rounds).
//
// A batch is a list of independent merges of A (m elements, mv valid) with B (n, nv valid). It is
// laid out in one of three ways:
//   kSeparate: a is (rows, m), b is (rows, n), one merge a row; out is (rows, m + n); per-row
//              valid lengths a_valid / b_valid (null: full).
//   kRuns:     x is (rows, d) holding [A | B] with a per-row split (merge_runs); out (rows, d).
//   kRunPairs: x is (rows, d) cut into sorted runs of width w; run 2p and 2p + 1 of a row form
//              merge p (the last pair may be short, or a lone run). A mergesort pass is one
//              batch in this mode, writing (rows, d) runs of width 2w.
// Every merge's output is cut into tiles of `tile` outputs; tile t of merge r covers outputs
// [t * tile, min((t + 1) * tile, m + n)) of it (empty for the spare tiles of a short last pair).
// The splits where tiles meet come from the co-rank search (merge_path.h); tile_ranges turns two
// splits into what a tile reads and writes.
#pragma once

#include <cstdint>

#include "jax_mergepath/host_device.h"

namespace jax_mergepath {

enum class RowMode : int { kSeparate = 0, kRuns = 1, kRunPairs = 2 };

JMP_HD constexpr int64_t clamp_length(int64_t v, int64_t hi) { return v < 0 ? 0 : (v > hi ? hi : v); }

// Runs 2p and 2p + 1 of width `width` in a row of `length` elements: A = [begin, begin + m),
// B = [begin + m, begin + m + n). Pairs past the row's end are empty.
struct RunPair {
  int64_t begin, m, n;
};

JMP_HD constexpr RunPair run_pair(int64_t length, int64_t width, int64_t pair) {
  const int64_t begin = pair * 2 * width;
  const int64_t left = length - begin;
  return {begin, clamp_length(left, width), clamp_length(left - width, width)};
}

JMP_HD constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

struct MergeLayout {
  RowMode mode;
  int64_t rows;
  int64_t m;  // kSeparate: allocated A length; kRuns / kRunPairs: row length d
  int64_t n;  // kSeparate: allocated B length; kRuns: unused (0); kRunPairs: run width w > 0
  const int32_t* a_valid;  // kSeparate: per-row valid A length (null: m); kRuns: split per row
  const int32_t* b_valid;  // kSeparate: per-row valid B length (null: n); else null
  // kRunPairs: rows already sorted (nonzero) have empty merges, so a pass leaves them alone
  // (null: none).
  const uint8_t* row_done = nullptr;

  // Outputs of one row of `out`.
  JMP_HD constexpr int64_t row_length() const { return mode == RowMode::kSeparate ? m + n : m; }
  // Merges in one row (kRunPairs: pairs of runs, the last possibly short), and in the batch.
  JMP_HD constexpr int64_t merges_per_row() const {
    return mode == RowMode::kRunPairs ? (m > 0 ? ceil_div(m, 2 * n) : 0) : 1;
  }
  JMP_HD constexpr int64_t merges() const { return rows * merges_per_row(); }
  // Outputs of the longest merge: tiles are counted per merge on this length.
  JMP_HD constexpr int64_t merge_span() const {
    return mode == RowMode::kRunPairs ? (m < 2 * n ? m : 2 * n) : row_length();
  }
};

// The merges of a pass that merges `runs` (4 or 8) consecutive runs of width w at once, over
// the run pairs of width w of a two-way sort pass (`pairs`): kRunPairs of width runs / 2 * w,
// a merge's first half of its runs as A, its second as B.
JMP_HD constexpr MergeLayout multiway_layout(const MergeLayout& pairs, int runs) {
  MergeLayout merges = pairs;
  merges.n = runs / 2 * pairs.n;
  return merges;
}

// A plain batch of rows merging A (m) with B (n), every element valid.
JMP_HD constexpr MergeLayout rows_layout(int64_t rows, int64_t m, int64_t n) {
  return {RowMode::kSeparate, rows, m, n, nullptr, nullptr, nullptr};
}

// One merge's geometry: element offsets of its A and B in the a / b arrays (kRuns, kRunPairs:
// both in x), of its output, and its lengths.
struct RowGeometry {
  int64_t a_offset, b_offset, out_offset;
  int64_t m, n;    // allocated lengths of this merge's A and B
  int64_t mv, nv;  // valid lengths
};

JMP_HD RowGeometry row_geometry(const MergeLayout& layout, int64_t merge) {
  RowGeometry g;
  if (layout.mode == RowMode::kSeparate) {
    g.a_offset = merge * layout.m;
    g.b_offset = merge * layout.n;
    g.out_offset = merge * (layout.m + layout.n);
    g.m = layout.m;
    g.n = layout.n;
    g.mv = layout.a_valid ? clamp_length(layout.a_valid[merge], layout.m) : layout.m;
    g.nv = layout.b_valid ? clamp_length(layout.b_valid[merge], layout.n) : layout.n;
  } else if (layout.mode == RowMode::kRuns) {
    const int64_t d = layout.m;
    const int64_t split = clamp_length(layout.a_valid ? layout.a_valid[merge] : 0, d);
    g.a_offset = merge * d;
    g.b_offset = merge * d + split;
    g.out_offset = merge * d;
    g.m = g.mv = split;
    g.n = g.nv = d - split;
  } else {
    const int64_t per_row = layout.merges_per_row();
    const int64_t row = merge / per_row;
    const bool done = layout.row_done != nullptr && layout.row_done[row] != 0;
    const RunPair p = run_pair(done ? 0 : layout.m, layout.n, merge - row * per_row);
    g.a_offset = g.out_offset = row * layout.m + p.begin;
    g.b_offset = g.a_offset + p.m;
    g.m = g.mv = p.m;
    g.n = g.nv = p.n;
  }
  return g;
}

// How a batch is cut into tiles of `tile` outputs: tiles_per_merge per merge, merge-major.
struct TileMap {
  int64_t tile, tiles_per_merge, merges;
  JMP_HD constexpr int64_t tiles() const { return merges * tiles_per_merge; }
  // Split boundaries of the partition (tiles + 1 per merge).
  JMP_HD constexpr int64_t boundaries() const { return merges * (tiles_per_merge + 1); }
};

JMP_HD constexpr TileMap tile_map(const MergeLayout& layout, int64_t tile) {
  return {tile, ceil_div(layout.merge_span(), tile), layout.merges()};
}

// The output diagonal of boundary t of a merge of `length` outputs (clamped: spare tiles of a
// short merge are empty).
JMP_HD int64_t tile_diagonal(int64_t t, int64_t tile, int64_t length) {
  return t * tile < length ? t * tile : length;
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

// What one tile reads and writes: global element offsets of its A and B ranges and its output,
// its first diagonal, their lengths, the merge positions of their first elements (index payload: B's element j is
// m + j), and the valid lengths inside the tile.
struct TileRanges {
  int64_t a_begin, b_begin, out_begin;
  int k_begin;  // the tile's first diagonal in its merge
  int a_count, b_count;
  int a_index_base, b_index_base;
  int mv, nv;
};

// The tile of merge g covering outputs [k0, k1), from its start split i0 and its (raw) end split
// i1, which is clamped here (clamp_split_end) so ranges never overlap or leave the merge.
JMP_HD TileRanges tile_ranges(const RowGeometry& g, int64_t k0, int64_t k1, int64_t i0,
                              int64_t i1_raw) {
  const int64_t i1 = clamp_split_end<int64_t>(i0, k0, i1_raw, k1, g.m, g.n);
  const int64_t j0 = k0 - i0;
  TileRanges r;
  r.a_begin = g.a_offset + i0;
  r.b_begin = g.b_offset + j0;
  r.out_begin = g.out_offset + k0;
  r.k_begin = static_cast<int>(k0);
  r.a_count = static_cast<int>(i1 - i0);
  r.b_count = static_cast<int>((k1 - i1) - j0);
  r.a_index_base = static_cast<int>(i0);
  r.b_index_base = static_cast<int>(g.m + j0);
  r.mv = static_cast<int>(clamp_length(g.mv - i0, r.a_count));
  r.nv = static_cast<int>(clamp_length(g.nv - j0, r.b_count));
  return r;
}

}  // namespace jax_mergepath
