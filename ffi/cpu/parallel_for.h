// parallel_for.h: split [0, count) into contiguous chunks over host threads. Work below
// `serial_below` units runs on the calling thread (thread start-up costs more than it saves).
// Never throws: a chunk whose thread cannot be started runs on the calling thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace jax_mergepath {

template <typename Body>
void parallel_for(int64_t count, int64_t work_per_item, int64_t serial_below, const Body& body) {
  const int64_t hw = std::max<int64_t>(1, std::thread::hardware_concurrency());
  const int64_t threads =
      count * work_per_item < serial_below ? 1 : std::min<int64_t>(hw, count);
  if (threads <= 1) {
    if (count > 0) body(int64_t{0}, count);
    return;
  }
  std::vector<std::thread> pool;
  const int64_t chunk = (count + threads - 1) / threads;
  for (int64_t t = 1; t < threads; ++t) {
    const int64_t begin = t * chunk, end = std::min(count, begin + chunk);
    if (begin >= end) continue;
    try {
      pool.emplace_back([&body, begin, end] { body(begin, end); });
    } catch (...) {  // no thread to be had: do this chunk here (never throw across the FFI)
      body(begin, end);
    }
  }
  body(int64_t{0}, std::min(count, chunk));
  for (auto& th : pool) th.join();
}

}  // namespace jax_mergepath
