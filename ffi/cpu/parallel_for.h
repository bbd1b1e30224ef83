// parallel_for.h (level: CPU backend): split [0, count) into contiguous chunks over host threads.
// Work below `serial_below` units runs on the calling thread (thread start-up costs more than it
// saves); a call uses at most kMaxHostChunks threads (the knobs: tuning/cpu.h kSerialBelow,
// kMaxHostChunks). Never throws: a chunk whose thread cannot be started runs on the calling thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

#include "jax_mergepath/tuning/cpu.h"

namespace jax_mergepath {

// How [0, count) is cut: chunk c is [c * size, min(count, (c + 1) * size)).
struct ChunkPlan {
  int64_t count = 0, chunks = 0, size = 0;
  int64_t begin(int64_t c) const { return std::min(count, c * size); }
  int64_t end(int64_t c) const { return std::min(count, (c + 1) * size); }
};

inline ChunkPlan plan_chunks(int64_t count, int64_t work_per_item, int64_t serial_below) {
  const int64_t hw = std::max<int64_t>(1, std::thread::hardware_concurrency());
  int64_t chunks = count * work_per_item < serial_below ? 1 : std::min(hw, count);
  chunks = std::max<int64_t>(1, std::min(chunks, kMaxHostChunks));
  ChunkPlan plan;
  plan.count = count;
  plan.size = std::max<int64_t>(1, (count + chunks - 1) / chunks);
  plan.chunks = (count + plan.size - 1) / plan.size;
  return plan;
}

// body(chunk, begin, end) for every non-empty chunk of the plan, chunk 0 on this thread.
template <typename Body>
void run_chunks(const ChunkPlan& plan, const Body& body) {
  std::vector<std::thread> pool;
  for (int64_t c = 1; c < plan.chunks; ++c) {
    try {
      pool.emplace_back([&body, &plan, c] { body(c, plan.begin(c), plan.end(c)); });
    } catch (...) {  // no thread to be had: do this chunk here (never throw across the FFI)
      body(c, plan.begin(c), plan.end(c));
    }
  }
  if (plan.chunks > 0) body(int64_t{0}, plan.begin(0), plan.end(0));
  for (auto& th : pool) th.join();
}

template <typename Body>
void parallel_for(int64_t count, int64_t work_per_item, int64_t serial_below, const Body& body) {
  run_chunks(plan_chunks(count, work_per_item, serial_below),
             [&body](int64_t, int64_t begin, int64_t end) { body(begin, end); });
}

}  // namespace jax_mergepath
