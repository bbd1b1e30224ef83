// merge_args.h: the plain-C++ call interface of a batched merge, shared by the CPU backend and
// the CUDA launch functions (no XLA types). Buffers are raw device or host pointers.
#pragma once

#include <cstdint>

#include "jax_mergepath/key_types.h"
#include "jax_mergepath/merge_path.h"

namespace jax_mergepath {

// What travels with the keys: nothing, the int32 source index, or a value of value_bytes bytes.
enum class PayloadKind : int { kNone = 0, kIndex = 1, kValue = 2 };

struct MergeCall {
  KeyType key_type;
  bool descending;
  PayloadKind payload;
  int value_bytes;  // kValue only: 1, 2, 4 or 8
  MergeLayout layout;
  const void* a;  // kRuns: the x array (b is ignored)
  const void* b;
  void* out;
  const void* a_values;  // kValue: values of a (kRuns: of x)
  const void* b_values;
  void* out_payload;  // kIndex: int32 indices; kValue: values
};

// The payload's size in bytes per element (tuning policies are chosen by key + payload bytes).
inline int payload_bytes(const MergeCall& call) {
  return call.payload == PayloadKind::kNone ? 0
         : call.payload == PayloadKind::kIndex ? 4
                                               : call.value_bytes;
}

// co_rank queries: for each of q queries per row, the number of A elements among the first k
// outputs of merge(A_row, B_row). k is clamped to [0, m + n].
struct CoRankCall {
  KeyType key_type;
  bool descending;
  int64_t rows, queries, m, n;
  const int32_t* k;
  const void* a;
  const void* b;
  int32_t* out;
};

// is_sorted: out[row] = 1 iff row is sorted in the key order (directed), else 0.
struct IsSortedCall {
  KeyType key_type;
  bool descending;
  int64_t rows, length;
  const void* x;
  uint8_t* out;
};

}  // namespace jax_mergepath
