// topk_cpu.cc (level: CPU backend): the CPU top_k (topk.h): each row, or each chunk of a long row,
// read once with a threshold filter:
//   candidates (order key, index) are kept in a buffer; while the chunk has not yet filled it
//   (kTopkCpuCapacityFactor x k, at least kTopkCpuMinCapacity) every key goes in; when it is
//   full, nth_element keeps the best k and the k-th kept order key becomes the threshold: from
//   then on only keys ABOVE it can enter (a key equal to it comes later, so its index is larger:
//   it loses the tie). Keys are checked kTopkCpuBlock at a time, by the block's largest order
//   key (a vectorized max, one branch a block), so a long row costs about one read. For k up to
//   kTopkCpuInsertMaxK the best k are kept sorted instead and a key that beats the k-th is
//   inserted (no nth_element: short rows).
// A chunk ends with its best k sorted; the chunks of a row are merged (their best k together,
// nth_element, sorted). Rows spread over the host threads (parallel_for.h); rows longer than
// kTopkCpuChunk are cut into chunks when there are fewer rows than threads. Every buffer is
// reserved on the calling thread before the threads start (a thread body never allocates, so
// it never throws); the entry returns false when that allocation fails.
#include <algorithm>
#include <cstdint>
#include <new>
#include <thread>
#include <vector>

#include "jax_mergepath/topk.h"
#include "jax_mergepath/tuning/cpu.h"
#include "jax_mergepath/tuning/topk.h"
#include "parallel_for.h"
#include "topk_cpu.h"

namespace jax_mergepath {
namespace {

template <typename Bits>
struct Candidate {
  Bits key;  // order key (topk.h)
  int32_t index;
};

// The result's order, as a type (inlined into nth_element and sort, where a function pointer
// was not).
struct Before {
  template <typename Bits>
  bool operator()(const Candidate<Bits>& a, const Candidate<Bits>& b) const {
    return topk_before(a.key, a.index, b.key, b.index);
  }
};

// The buffer a chunk of `length` keys needs for a top-k of k (one block of overshoot; small k:
// k + 1).
inline int64_t chunk_capacity(int64_t k, int64_t length) {
  const int64_t cap = std::max(kTopkCpuCapacityFactor * k, kTopkCpuMinCapacity);
  return std::min(cap, length) + kTopkCpuBlock;
}

// Small k: the best k so far kept sorted (best first) in `buf`, a key inserted where it goes
// when it beats the k-th (a key equal to one kept comes later: it goes after it), checked
// kTopkCpuBlock keys at a time by the block's largest key.
template <typename Bits>
void select_by_insertion(const Bits* row, int64_t begin, int64_t end, int64_t keep,
                         TopkOrder<Bits> order, std::vector<Candidate<Bits>>& buf) {
  auto insert = [&buf, keep](Bits key, int64_t i) {
    size_t at = buf.size();
    while (at > 0 && buf[at - 1].key < key) --at;  // (after every kept key >= it)
    if (static_cast<int64_t>(at) >= keep) return;
    if (static_cast<int64_t>(buf.size()) == keep) buf.pop_back();
    buf.insert(buf.begin() + static_cast<std::ptrdiff_t>(at), {key, static_cast<int32_t>(i)});
  };
  int64_t i = begin;
  for (; i < end && static_cast<int64_t>(buf.size()) < keep; ++i) insert(order.key(row[i]), i);
  for (int64_t b = i; b < end; b += kTopkCpuBlock) {
    const int64_t stop = std::min(end, b + kTopkCpuBlock);
    Bits most = Bits(0);
    for (int64_t j = b; j < stop; ++j) most = std::max(most, order.key(row[j]));
    if (!(most > buf.back().key)) continue;
    for (int64_t j = b; j < stop; ++j) {
      const Bits key = order.key(row[j]);
      if (key > buf.back().key) insert(key, j);
    }
  }
}

// The best min(k, end - begin) of keys [begin, end) of a row into `buf` (reserved for
// chunk_capacity), sorted.
template <typename Bits>
void select_chunk(const Bits* row, int64_t begin, int64_t end, int64_t k, TopkOrder<Bits> order,
                  std::vector<Candidate<Bits>>& buf) {
  buf.clear();
  const int64_t keep = std::min(k, end - begin);
  if (keep <= 0) return;
  if (keep <= kTopkCpuInsertMaxK) {
    select_by_insertion(row, begin, end, keep, order, buf);
    return;
  }
  const size_t cap = static_cast<size_t>(chunk_capacity(k, end - begin) - kTopkCpuBlock);
  bool cut = false;  // the buffer was cut to k once: a threshold holds
  Bits threshold = Bits(0);
  auto cut_to_k = [&] {
    std::nth_element(buf.begin(), buf.begin() + (keep - 1), buf.end(), Before{});
    buf.resize(static_cast<size_t>(keep));
    threshold = buf[static_cast<size_t>(keep - 1)].key;
    cut = true;
  };
  for (int64_t b = begin; b < end; b += kTopkCpuBlock) {
    const int64_t stop = std::min(end, b + kTopkCpuBlock);
    if (cut) {
      Bits most = Bits(0);
      for (int64_t i = b; i < stop; ++i) most = std::max(most, order.key(row[i]));
      if (!(most > threshold)) continue;
      for (int64_t i = b; i < stop; ++i) {
        const Bits key = order.key(row[i]);
        if (key > threshold) buf.push_back({key, static_cast<int32_t>(i)});
      }
    } else {
      for (int64_t i = b; i < stop; ++i) {
        buf.push_back({order.key(row[i]), static_cast<int32_t>(i)});
      }
    }
    if (buf.size() >= cap && static_cast<int64_t>(buf.size()) > keep) cut_to_k();
  }
  if (static_cast<int64_t>(buf.size()) > keep) cut_to_k();
  std::sort(buf.begin(), buf.end(), Before{});
}

template <typename Bits>
void write_row(const Candidate<Bits>* best, int64_t k, const Bits* row, Bits* values,
               int32_t* indices) {
  for (int64_t j = 0; j < k; ++j) {
    indices[j] = best[j].index;
    values[j] = row[best[j].index];
  }
}

template <typename Bits>
bool topk_for_bits(const TopkCall& call) {
  const int64_t rows = call.rows, n = call.length, k = call.k;
  if (rows == 0 || k == 0) return true;
  const Bits* keys = static_cast<const Bits*>(call.keys);
  Bits* values = static_cast<Bits*>(call.out_values);
  const TopkOrder<Bits> order = topk_order<Bits>(call.key_class, call.largest);
  const int64_t threads = std::max<int64_t>(1, std::thread::hardware_concurrency());
  // Chunks a row: one, unless there are fewer rows than threads and the row is long.
  int64_t per_row = 1;
  if (rows < threads && n >= 2 * kTopkCpuChunk) {
    per_row = std::min(ceil_div(threads, rows), n / kTopkCpuChunk);
  }
  const int64_t chunk = ceil_div(n, per_row);
  const int64_t tasks = rows * per_row;
  // One buffer a task when rows are cut, else one a host chunk of rows (parallel_for's plan).
  const ChunkPlan plan = plan_chunks(tasks, n, kSerialBelow);
  std::vector<std::vector<Candidate<Bits>>> bufs;
  std::vector<Candidate<Bits>> merged;
  try {
    bufs.resize(static_cast<size_t>(per_row > 1 ? tasks : plan.chunks));
    for (auto& b : bufs) b.reserve(static_cast<size_t>(chunk_capacity(k, std::min(n, chunk))));
    if (per_row > 1) merged.reserve(static_cast<size_t>(per_row * k));
  } catch (const std::bad_alloc&) {
    return false;
  }
  run_chunks(plan, [&](int64_t c, int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t row = t / per_row, part = t % per_row;
      const Bits* x = keys + row * n;
      auto& buf = bufs[static_cast<size_t>(per_row > 1 ? t : c)];
      select_chunk(x, part * chunk, std::min(n, (part + 1) * chunk), k, order, buf);
      if (per_row == 1) write_row(buf.data(), k, x, values + row * k, call.out_indices + row * k);
    }
  });
  if (per_row == 1) return true;
  for (int64_t row = 0; row < rows; ++row) {  // (few rows: fewer than the threads)
    merged.clear();
    for (int64_t part = 0; part < per_row; ++part) {
      const auto& buf = bufs[static_cast<size_t>(row * per_row + part)];
      merged.insert(merged.end(), buf.begin(), buf.end());
    }
    std::nth_element(merged.begin(), merged.begin() + (k - 1), merged.end(), Before{});
    std::sort(merged.begin(), merged.begin() + k, Before{});
    write_row(merged.data(), k, keys + row * n, values + row * k, call.out_indices + row * k);
  }
  return true;
}

}  // namespace

bool topk_cpu(const TopkCall& call) {
  switch (call.key_bytes) {
    case 1: return topk_for_bits<uint8_t>(call);
    case 2: return topk_for_bits<uint16_t>(call);
    case 4: return topk_for_bits<uint32_t>(call);
    case 8: return topk_for_bits<uint64_t>(call);
    default: return false;
  }
}

}  // namespace jax_mergepath
