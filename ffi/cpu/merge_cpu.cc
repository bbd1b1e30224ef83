// merge_cpu.cc (level: CPU backend): the CPU batched merge on the shared core, tile by tile as the
// GPU does it.
//
// The batch (batch_geometry.h: rows, merge_runs rows or the run pairs of a sort pass) is cut
// into MergePolicy tiles per merge. Host threads take consecutive tiles; where one thread's
// tiles meet the next's, the split is searched once (grid_co_rank_search, the GPU partition's
// search) and shared, so tiles never overlap even for unsorted input. Inside a thread, a tile's
// end split is searched (co_rank_search) only in the corridor between its start split and the
// thread's end anchor: for sorted input the true split lies there (a short search in cached
// data). A tile is staged in a buffer and merged by the GPU's serial merges (merge_path.h):
// merge_full when it has no ragged tail (on order keys staged once, see merge_tile),
// merge_general otherwise; a tile already in order (A's last key does not follow B's first) is
// copied. The ragged merge of up to eight runs (ragged_merge_cpu) shares the partition search
// and takes its outputs one at a time.
#include <algorithm>
#include <cstdint>

#include "cpu_entry.h"
#include "jax_mergepath/batch_geometry.h"
#include "jax_mergepath/merge_path.h"
#include "jax_mergepath/tuning/cpu.h"
#include "jax_mergepath/tuning/merge.h"
#include "jax_mergepath/tuning/sort.h"
#include "parallel_for.h"

namespace jax_mergepath {
namespace {

// Where one tile's outputs go: keys and the payload (kIndex, kValue), or only the ranks of one
// side (kRanksOfA / kRanksOfB: searchsorted). put(c, raw, from_b, e): output c of the tile is
// element e of its A (or B) range, with key bits raw. Everything is held by value (pointers
// already offset to the tile), so the compiler keeps it in registers across the stores.
template <typename Bits, PayloadKind kPayload, typename Value>
struct TileWriter {
  Bits* out;                     // the tile's first output
  void* payload_out;             // the tile's first payload output (ranks: A's or B's first)
  const Value* va;               // the tile's A values (kValue)
  const Value* vb;               // the tile's B values (kValue)
  int a_index_base, b_index_base;  // kIndex; ranks: i0 and j0, the tile's start split

  TileWriter(const MergeCall& call, const TileRanges& r, int64_t i0, int64_t j0)
      : out(static_cast<Bits*>(call.out) + (call.out ? r.out_begin : 0)),
        payload_out(nullptr),
        va(nullptr),
        vb(nullptr),
        a_index_base(r.a_index_base),
        b_index_base(r.b_index_base) {
    if constexpr (kPayload == PayloadKind::kRanksOfA) {
      payload_out = static_cast<int32_t*>(call.out_payload) + r.a_begin;
      b_index_base = static_cast<int>(j0);
    } else if constexpr (kPayload == PayloadKind::kRanksOfB) {
      payload_out = static_cast<int32_t*>(call.out_payload) + r.b_begin;
      a_index_base = static_cast<int>(i0);
    } else if constexpr (kPayload == PayloadKind::kIndex) {
      payload_out = static_cast<int32_t*>(call.out_payload) + r.out_begin;
    } else if constexpr (kPayload == PayloadKind::kValue) {
      const bool separate = call.layout.mode == RowMode::kSeparate;
      payload_out = static_cast<Value*>(call.out_payload) + r.out_begin;
      va = static_cast<const Value*>(call.a_values) + r.a_begin;
      vb = static_cast<const Value*>(separate ? call.b_values : call.a_values) + r.b_begin;
    }
  }

  void operator()(int c, Bits raw, bool from_b, int e) const {
    if constexpr (kPayload == PayloadKind::kRanksOfA) {
      if (!from_b) static_cast<int32_t*>(payload_out)[e] = b_index_base + c - e;
    } else if constexpr (kPayload == PayloadKind::kRanksOfB) {
      if (from_b) static_cast<int32_t*>(payload_out)[e] = a_index_base + c - e;
    } else {
      out[c] = raw;
      if constexpr (kPayload == PayloadKind::kIndex) {
        static_cast<int32_t*>(payload_out)[c] = (from_b ? b_index_base : a_index_base) + e;
      } else if constexpr (kPayload == PayloadKind::kValue) {
        static_cast<Value*>(payload_out)[c] = from_b ? vb[e] : va[e];
      }
    }
  }
};

// Merges one tile whose A range starts at a and B range at b (global memory), through `stage`
// (2 * kStageSlots slots). A tile without a ragged tail is staged as directed ORDER keys
// (transformed once per element, a loop the compiler vectorizes) and merged by merge_full with the
// identity order of unsigned keys, so the serial dependency of a step is compare - select - load;
// the raw bits of each output are then read from its source. Ragged tiles stage raw keys for
// merge_general.
template <int kStageSlots, typename Traits, typename Put>
void merge_tile(const typename Traits::Bits* a, const typename Traits::Bits* b,
                const TileRanges& r, typename Traits::Bits flip, typename Traits::Bits* stage,
                const Put& put) {
  using Bits = typename Traits::Bits;
  using Ordered = KeyTraits<Bits, KeyKind::kUnsigned>;  // staged keys are order keys already
  const int ca = r.a_count, cb = r.b_count, count = ca + cb;
  const bool full = r.mv == ca && r.nv == cb;
  if (ca == 0 || cb == 0 || (full && in_order<Traits>(a[ca - 1], b[0], flip))) {
    for (int c = 0; c < ca; ++c) put(c, a[c], false, c);
    for (int c = 0; c < cb; ++c) put(ca + c, b[c], true, c);
    return;
  }
  if (full) {
    Bits* raw = stage + kStageSlots;  // the raw bits beside their order keys
    std::copy_n(a, static_cast<size_t>(ca), raw);
    std::copy_n(b, static_cast<size_t>(cb), raw + ca);
    for (int p = 0; p < count; ++p) stage[p] = directed_key<Traits>(raw[p], flip);
    stage[count] = Bits(0);  // the slot merge_full may read past B
    merge_full<0, Ordered>(stage, 0, ca, ca, cb, 0, count, Bits(0), [&](int c, Bits, int pos) {
      const bool from_b = pos >= ca;
      put(c, raw[pos], from_b, pos - pick(from_b, ca, 0));
    });
    return;
  }
  std::copy_n(a, static_cast<size_t>(ca), stage);
  std::copy_n(b, static_cast<size_t>(cb), stage + ca);
  auto segment_at = [&](int, int& diag) {
    diag = 0;
    return StagedSegment{0, ca, ca, cb, r.mv, r.nv, count};
  };
  merge_general<0, Traits>(
      flip, 0, count, segment_at, [&](int pos) { return stage[pos]; },
      [&](int c, Bits raw, bool from_b, int e, const StagedSegment&) { put(c, raw, from_b, e); });
}

template <typename Traits, PayloadKind kPayload, typename Value, int64_t kTile>
void merge_batch(const MergeCall& call) {
  using Bits = typename Traits::Bits;
  const MergeLayout& layout = call.layout;
  const Bits flip = order_mask<Traits>(call.key_type, call.descending);
  const Bits* a_all = static_cast<const Bits*>(call.a);
  const Bits* b_all = static_cast<const Bits*>(layout.mode == RowMode::kSeparate ? call.b : call.a);
  const TileMap map = tile_map(layout, kTile);
  const int64_t per_merge = map.tiles_per_merge;

  // The splits where one thread's tiles meet the next's, computed once, so that both threads
  // use the same value; each is clamped into the corridor left by the previous one in its merge
  // (a no-op for sorted input), so tiles never overlap even for unsorted input.
  const ChunkPlan plan = plan_chunks(map.tiles(), kTile, kSerialBelow);
  struct Anchor {
    int64_t merge, k, split;
  };
  Anchor anchors[kMaxHostChunks + 1];  // plan.chunks <= kMaxHostChunks
  for (int64_t c = 0; c <= plan.chunks; ++c) {
    const int64_t t = plan.begin(c);
    Anchor& an = anchors[c];
    an = {t < map.tiles() ? t / per_merge : map.merges, 0, 0};
    if (t >= map.tiles()) continue;
    const RowGeometry g = row_geometry(layout, an.merge);
    an.k = tile_diagonal(t % per_merge, kTile, g.m + g.n);
    if (an.k == 0) continue;  // a merge's start
    const Bits* a = a_all + g.a_offset;
    const Bits* b = b_all + g.b_offset;
    auto key_a = [&](int64_t i) { return directed_key<Traits>(a[i], flip); };
    auto key_b = [&](int64_t j) { return directed_key<Traits>(b[j], flip); };
    const int64_t split = grid_co_rank_search(
        co_rank_lower(an.k, g.n), co_rank_upper(an.k, g.m), g.m,
        [&](int64_t i) { return b_first(i, an.k - 1 - i, g.mv, g.nv, key_a, key_b); });
    const bool same_merge = c > 0 && anchors[c - 1].merge == an.merge;
    const int64_t k_prev = same_merge ? anchors[c - 1].k : 0;
    const int64_t i_prev = same_merge ? anchors[c - 1].split : 0;
    an.split = clamp_split_end(i_prev, k_prev, split, an.k, g.m, g.n);
  }

  run_chunks(plan, [&](int64_t chunk, int64_t begin, int64_t end) {
    constexpr int kStageSlots = static_cast<int>(kTile) + 1;
    Bits stage[2 * kStageSlots];
    int64_t i0 = anchors[chunk].split;
    for (int64_t t = begin; t < end; ++t) {
      const int64_t merge = t / per_merge, tile = t % per_merge;
      const RowGeometry g = row_geometry(layout, merge);
      const int64_t length = g.m + g.n;
      const int64_t k0 = tile_diagonal(tile, kTile, length);
      const int64_t k1 = tile_diagonal(tile + 1, kTile, length);
      if (tile == 0) i0 = 0;
      if (k0 == k1) continue;  // a spare tile of a short merge
      const Bits* a = a_all + g.a_offset;
      const Bits* b = b_all + g.b_offset;
      auto key_a = [&](int64_t i) { return directed_key<Traits>(a[i], flip); };
      auto key_b = [&](int64_t j) { return directed_key<Traits>(b[j], flip); };
      const Anchor& next = anchors[chunk + 1];
      const bool anchored = next.merge == merge && next.k > 0;
      const int64_t k_end = anchored ? next.k : length;
      const int64_t i_end = anchored ? next.split : g.m;
      int64_t i1 = i_end;
      if (k1 != k_end) {
        const int64_t lo = std::max({i0, co_rank_lower(k1, g.n), i_end - (k_end - k1)});
        const int64_t hi = std::min({i0 + (k1 - k0), co_rank_upper(k1, g.m), i_end});
        i1 = co_rank_between(k1, lo, hi, g.mv, g.nv, key_a, key_b);
      }
      const TileRanges r = tile_ranges(g, k0, k1, i0, i1);
      const TileWriter<Bits, kPayload, Value> put(call, r, i0, k0 - i0);
      merge_tile<kStageSlots, Traits>(a_all + r.a_begin, b_all + r.b_begin, r, flip, stage, put);
      i0 += r.a_count;
    }
  });
}

// The ragged merge (call_args.h RaggedMergeCall) of keys of Traits, moving values of Value
// (kValues) or none: each row's outputs cut into pieces of the GPU's tile; a piece's first counts
// by k_way_split at its first diagonal (merge_path.h, the GPU partition's search), then its
// outputs taken one at a time, the least head of the runs (ties: the earlier run).
template <typename Traits, bool kValues, typename Value>
void ragged_merge_batch(const RaggedMergeCall& call) {
  using Bits = typename Traits::Bits;
  constexpr int K = kRaggedRuns;
  const auto flip = order_mask<Traits>(call.key_type, call.descending);
  const auto order = [flip](Bits raw) { return directed_key<Traits>(raw, flip); };
  const int64_t piece = ragged_merge_shape(int(sizeof(Bits)), kValues ? int(sizeof(Value)) : 0).tile;
  const int64_t pieces_per_row = ceil_div(call.out_length, piece);
  parallel_for(call.rows * pieces_per_row, piece, kSerialBelow, [&](int64_t begin, int64_t end) {
    for (int64_t id = begin; id < end; ++id) {
      const int64_t row = id / pieces_per_row;
      const Bits* x = static_cast<const Bits*>(call.x) + row * call.span;
      int64_t first[K], len[K], sum = 0;
      for (int r = 0; r < K; ++r) {
        const RaggedRun run = ragged_run(call, row, r);
        first[r] = run.start;
        len[r] = run.length;
        sum += len[r];
      }
      const int64_t outputs = std::min(sum, call.out_length);
      const int64_t d0 = std::min((id - row * pieces_per_row) * piece, outputs);
      const int64_t d1 = std::min(d0 + piece, outputs);
      if (d0 == d1) continue;
      int64_t at[K], hi[K];
      for (int r = 0; r < K; ++r) {
        at[r] = std::max<int64_t>(0, d0 - (sum - len[r]));
        hi[r] = std::min(len[r], d0);
      }
      k_way_split<K>(d0, at, hi, [&](int r, int64_t i) { return x[first[r] + i]; }, order);
      Bits* out = static_cast<Bits*>(call.out) + row * call.out_length + d0;
      const Value* v =
          kValues ? static_cast<const Value*>(call.values) + row * call.span : nullptr;
      Value* v_out =
          kValues ? static_cast<Value*>(call.out_values) + row * call.out_length + d0 : nullptr;
      Bits head[K];  // each run's next order key (valid while at[r] < len[r])
      for (int r = 0; r < K; ++r) head[r] = at[r] < len[r] ? order(x[first[r] + at[r]]) : 0;
      for (int64_t o = 0; o < d1 - d0; ++o) {
        int best = -1;
        for (int r = 0; r < K; ++r) {
          if (at[r] < len[r] && (best < 0 || head[r] < head[best])) best = r;
        }
        if (best < 0) break;  // (the runs hold fewer than the piece: unsorted, overlapping)
        const int64_t from = first[best] + at[best]++;
        out[o] = x[from];
        if constexpr (kValues) v_out[o] = v[from];
        if (at[best] < len[best]) head[best] = order(x[from + 1]);  // (only its head moved)
      }
    }
  });
}

}  // namespace

void ragged_merge_cpu(const RaggedMergeCall& call) {
  if (call.rows == 0 || call.out_length == 0) return;
  visit_key_type(call.key_type, [&](auto traits) {
    using Traits = decltype(traits);
    if (call.value_bytes == 4) {
      ragged_merge_batch<Traits, true, uint32_t>(call);
    } else if (call.value_bytes == 8) {
      ragged_merge_batch<Traits, true, uint64_t>(call);
    } else {
      ragged_merge_batch<Traits, false, uint8_t>(call);
    }
  });
}

void merge_cpu(const MergeCall& call) {
  if (call.layout.merges() == 0 || call.layout.merge_span() == 0) return;
  visit_key_type(call.key_type, [&](auto traits) {
    using Traits = decltype(traits);
    visit_payload(call.payload, call.value_bytes, [&](auto kind, auto element) {
      constexpr PayloadKind kPayload = decltype(kind)::value;
      using Value = decltype(element);
      merge_batch<Traits, kPayload, Value, MergePolicyFor<Traits, kPayload, Value>::kTile>(call);
    });
  });
}

}  // namespace jax_mergepath
