// sort_method.h (level: shared core, decision): which method a sort takes, decided in one place
// from the knobs of tuning/radix.h: the radix path or the merge sort (sort_takes_radix), and
// whether the radix path is the direct sort of integer keys (sort_takes_direct_radix). The CUDA
// lowering (through _cpu: jax_mergepath/_ffi.py) and the CUDA sort's launcher
// (ffi/cuda/launch/sort_launch.cuh) ask these functions.
#pragma once

#include <cstdint>

#include "jax_mergepath/call_args.h"
#include "jax_mergepath/key_types.h"
#include "jax_mergepath/tuning/radix.h"

namespace jax_mergepath {

constexpr bool sort_takes_radix(SortMethod method, int key_bytes, int payload_bytes,
                                int64_t rows, int64_t length, bool integer_keys) {
  if (method == SortMethod::kMerge ||
      !radix_possible(key_bytes, payload_bytes, rows, length, integer_keys)) {
    return false;
  }
  return method == SortMethod::kRadix || length >= radix_min_length(key_bytes, payload_bytes, rows);
}

constexpr bool sort_takes_direct_radix(SortMethod method, bool integer_keys, int key_bytes,
                                       PayloadKind payload, int value_bytes, bool descending,
                                       int64_t rows, int64_t length) {
  return radix_direct(integer_keys, key_bytes, payload, value_bytes, descending, rows) &&
         sort_takes_radix(method, key_bytes, payload_bytes(payload, value_bytes), rows, length,
                          integer_keys);
}

}  // namespace jax_mergepath
