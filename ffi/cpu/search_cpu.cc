// search_cpu.cc (level: CPU backend): the CPU's query operations on the shared core: co_rank (one
// search a query), is_sorted (one scan a row) and searchsorted (a search a query, or one merge path
// when the queries are sorted: merge_cpu with a ranks payload).
#include <cstdint>

#include "cpu_entry.h"
#include "jax_mergepath/merge_path.h"
#include "jax_mergepath/tuning/cpu.h"
#include "jax_mergepath/tuning/merge.h"
#include "parallel_for.h"

namespace jax_mergepath {

void co_rank_cpu(const CoRankCall& call) {
  visit_key_type(call.key_type, [&](auto traits) {
    using Traits = decltype(traits);
    using Bits = typename Traits::Bits;
    const Bits flip = order_mask<Traits>(call.key_type, call.descending);
    const int64_t total = call.rows * call.queries;
    parallel_for(total, kQueryWork, kSerialBelow, [&](int64_t begin, int64_t end) {
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
    const Bits flip = order_mask<Traits>(call.key_type, call.descending);
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

void searchsorted_cpu(const SearchCall& call) {
  if (call.rows == 0 || call.queries == 0) return;
  if (call.sorted_queries) {
    merge_cpu(search_as_merge(call));
    return;
  }
  visit_key_type(call.key_type, [&](auto traits) {
    using Traits = decltype(traits);
    using Bits = typename Traits::Bits;
    const Bits mask = order_mask<Traits>(call.key_type, false);
    const int64_t total = call.rows * call.queries;
    parallel_for(total, kQueryWork, kSerialBelow, [&](int64_t begin, int64_t end) {
      for (int64_t q = begin; q < end; ++q) {
        const int64_t row = q / call.queries;
        const Bits* a = static_cast<const Bits*>(call.a) + row * call.length;
        const Bits v = directed_key<Traits>(static_cast<const Bits*>(call.v)[q], mask);
        call.out[q] = static_cast<int32_t>(insertion_point<Traits>(
            call.length, v, call.right, mask, [&](int64_t i) { return a[i]; }));
      }
    });
  });
}

}  // namespace jax_mergepath
