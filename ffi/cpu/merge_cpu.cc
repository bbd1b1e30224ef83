// merge_cpu.cc: CPU batched merge and co_rank on the shared merge-path core.
// Tiles: each row's output is cut every MergePolicy::kTile elements (the CUDA kernels' tile), a
// tile's A/B ranges come from co_rank at its two ends, and the tile is merged serially.
#include "merge_cpu.h"

#include <algorithm>
#include <cstdint>

#include "jax_mergepath/merge_path.h"
#include "jax_mergepath/tuning.h"
#include "parallel_for.h"

namespace jax_mergepath {
namespace {

constexpr int64_t kSerialBelow = int64_t{1} << 17;  // elements; smaller merges use one thread

template <typename Traits, PayloadKind kPayload, typename Value, int64_t kTile>
void merge_rows(const MergeCall& call) {
  using Bits = typename Traits::Bits;
  const MergeLayout& layout = call.layout;
  const Bits flip = direction_mask<Traits>(call.descending);
  const Bits* a_all = static_cast<const Bits*>(call.a);
  const Bits* b_all =
      static_cast<const Bits*>(layout.mode == RowMode::kRuns ? call.a : call.b);
  const Value* va_all = static_cast<const Value*>(call.a_values);
  const Value* vb_all = static_cast<const Value*>(
      layout.mode == RowMode::kRuns ? call.a_values : call.b_values);
  Bits* out_all = static_cast<Bits*>(call.out);
  const int64_t row_len = layout.row_length();
  const int64_t tiles_per_row = (row_len + kTile - 1) / kTile;

  // The splits where one thread's tiles meet the next's, computed once here, so that both
  // threads use the same value; each is clamped into the corridor left by the previous one in
  // its row (a no-op for sorted input), so tiles never overlap even for unsorted input.
  const int64_t num_tiles = layout.rows * tiles_per_row;
  const ChunkPlan plan = plan_chunks(num_tiles, kTile, kSerialBelow);
  struct Anchor {
    int64_t row, k, split;
  };
  Anchor anchors[ChunkPlan::kMaxChunks + 1];
  for (int64_t c = 0; c <= plan.chunks; ++c) {
    const int64_t t = plan.begin(c);
    Anchor& an = anchors[c];
    an.row = t < num_tiles ? t / tiles_per_row : layout.rows;
    an.k = t < num_tiles ? (t % tiles_per_row) * kTile : 0;
    an.split = 0;
    if (an.k == 0) continue;  // a row start
    const RowGeometry g = row_geometry(layout, an.row);
    const Bits* a = a_all + g.a_offset;
    const Bits* b = b_all + g.b_offset;
    auto key_a = [&](int64_t i) { return directed_key<Traits>(a[i], flip); };
    auto key_b = [&](int64_t j) { return directed_key<Traits>(b[j], flip); };
    const bool same_row = c > 0 && anchors[c - 1].row == an.row;
    const int64_t k_prev = same_row ? anchors[c - 1].k : 0;
    const int64_t i_prev = same_row ? anchors[c - 1].split : 0;
    an.split = clamp_split_end(i_prev, k_prev, co_rank(an.k, g.m, g.n, g.mv, g.nv, key_a, key_b),
                               an.k, g.m, g.n);
  }

  // A thread walks its consecutive tiles. A tile's end split is searched only inside the
  // corridor from its start split to the thread's end anchor (or the row's end): for sorted
  // input it lies there (12 steps in cached data instead of a full search).
  run_chunks(plan, [&](int64_t chunk, int64_t begin, int64_t end) {
    int64_t i0 = anchors[chunk].split;
    for (int64_t t = begin; t < end; ++t) {
      const int64_t row = t / tiles_per_row, tile = t % tiles_per_row;
      const RowGeometry g = row_geometry(layout, row);
      const Bits* a = a_all + g.a_offset;
      const Bits* b = b_all + g.b_offset;
      auto key_a = [&](int64_t i) { return directed_key<Traits>(a[i], flip); };
      auto key_b = [&](int64_t j) { return directed_key<Traits>(b[j], flip); };
      const int64_t k0 = tile * kTile;
      const int64_t k1 = k0 + kTile < row_len ? k0 + kTile : row_len;
      if (tile == 0) i0 = 0;
      const Anchor& next = anchors[chunk + 1];
      const bool anchored = next.row == row && next.k > 0;
      const int64_t k_end = anchored ? next.k : row_len;
      const int64_t i_end = anchored ? next.split : g.m;
      int64_t i1 = i_end;
      if (k1 != k_end) {
        const int64_t lo = std::max({i0, co_rank_lower(k1, g.n), i_end - (k_end - k1)});
        const int64_t hi = std::min({i0 + (k1 - k0), co_rank_upper(k1, g.m), i_end});
        i1 = co_rank_between(k1, lo, hi, g.mv, g.nv, key_a, key_b);
      }
      Bits* out = out_all + g.out_offset + k0;
      serial_merge(i0, k0 - i0, i1, k1 - i1, g.mv, g.nv, k1 - k0, key_a, key_b,
                   [&](int64_t c, bool from_b, int64_t src) {
                     const Bits* from = from_b ? b : a;  // select the array, then one load
                     out[c] = from[src];
                     if constexpr (kPayload == PayloadKind::kIndex) {
                       static_cast<int32_t*>(call.out_payload)[g.out_offset + k0 + c] =
                           static_cast<int32_t>(from_b ? g.m + src : src);
                     } else if constexpr (kPayload == PayloadKind::kValue) {
                       static_cast<Value*>(call.out_payload)[g.out_offset + k0 + c] =
                           from_b ? vb_all[g.b_offset + src] : va_all[g.a_offset + src];
                     }
                   });
      i0 = i1;
    }
  });
}

template <typename Traits, PayloadKind kPayload, typename Value>
void merge_with_policy(const MergeCall& call) {
  constexpr int kPayloadBytes = kPayload == PayloadKind::kNone ? 0 : int(sizeof(Value));
  merge_rows<Traits, kPayload, Value,
             MergePolicy<int(sizeof(typename Traits::Bits)), kPayloadBytes>::kTile>(call);
}

}  // namespace

void merge_cpu(const MergeCall& call) {
  visit_key_type(call.key_type, [&](auto traits) {
    using Traits = decltype(traits);
    switch (call.payload) {
      case PayloadKind::kNone:
        merge_with_policy<Traits, PayloadKind::kNone, uint8_t>(call);
        break;
      case PayloadKind::kIndex:
        merge_with_policy<Traits, PayloadKind::kIndex, int32_t>(call);
        break;
      case PayloadKind::kValue:
        visit_payload_bits(call.value_bytes, [&](auto value) {
          merge_with_policy<Traits, PayloadKind::kValue, decltype(value)>(call);
        });
        break;
    }
  });
}

void co_rank_cpu(const CoRankCall& call) {
  visit_key_type(call.key_type, [&](auto traits) {
    using Traits = decltype(traits);
    using Bits = typename Traits::Bits;
    const Bits flip = direction_mask<Traits>(call.descending);
    const int64_t total = call.rows * call.queries;
    parallel_for(total, 32, kSerialBelow, [&](int64_t begin, int64_t end) {
      for (int64_t q = begin; q < end; ++q) {
        const int64_t row = q / call.queries;
        const Bits* a = static_cast<const Bits*>(call.a) + row * call.m;
        const Bits* b = static_cast<const Bits*>(call.b) + row * call.n;
        auto key_a = [&](int64_t i) { return directed_key<Traits>(a[i], flip); };
        auto key_b = [&](int64_t j) { return directed_key<Traits>(b[j], flip); };
        const int64_t k = clamp_length(call.k[q], call.m + call.n);
        call.out[q] = static_cast<int32_t>(
            co_rank(k, call.m, call.n, call.m, call.n, key_a, key_b));
      }
    });
  });
}

void is_sorted_cpu(const IsSortedCall& call) {
  visit_key_type(call.key_type, [&](auto traits) {
    using Traits = decltype(traits);
    using Bits = typename Traits::Bits;
    const Bits flip = direction_mask<Traits>(call.descending);
    parallel_for(call.rows, call.length, kSerialBelow, [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        const Bits* x = static_cast<const Bits*>(call.x) + row * call.length;
        uint8_t ok = 1;
        for (int64_t c = 0; ok && c + 1 < call.length; ++c) ok = in_order<Traits>(x[c], x[c + 1], flip);
        call.out[row] = ok;
      }
    });
  });
}

}  // namespace jax_mergepath
