// tuning/cpu.h (level: shared core, tuning): the CPU backend's own knobs: when it spreads a call
// over host threads (ffi/cpu/parallel_for.h) and which rows its sort runs by the integer radix
// sort (ffi/cpu/radix_cpu.h). Its tiles are the GPU's (tuning/merge.h, tuning/sort.h).
// Measurements: docs/performance.md, "CPU".
#pragma once

#include <cstdint>

namespace jax_mergepath {

// The CPU backend (parallel_for.h): work of fewer units than kSerialBelow runs on the calling
// thread (starting threads costs more than it saves); a call uses at most kMaxHostChunks host
// threads. A unit is an element merged, sorted or checked; one query's search counts as
// kQueryWork units (co_rank, searchsorted's binary searches).
inline constexpr int64_t kSerialBelow = int64_t{1} << 17;
inline constexpr int64_t kMaxHostChunks = 256;
inline constexpr int64_t kQueryWork = 32;

// The CPU sort's integer path (ffi/cpu/radix_cpu.h: an LSD radix sort a row, integer keys only:
// their order keys are a bijection) takes rows of at least cpu_radix_min_length keys (8-byte
// keys, eight digit passes, lose to the merge sort on rows of 256 and win at 2^16; the decision:
// sort_method.h cpu_sort_takes_radix). Measured with perf/sort_grid.py --cpu-cells
// (docs/performance.md, "CPU" and "Where the measurements went").
constexpr int64_t cpu_radix_min_length(int key_bytes) { return key_bytes == 8 ? 2048 : 256; }

}  // namespace jax_mergepath
