// topk.h (level: shared core): selection (top_k, and partition on top of it), the part both
// backends share: the call, XLA's total order of a key's bits as an unsigned "order key", and
// the order of the results.
//
// Contract. A row's result is defined by its keys alone: the k elements that come first in the
// order (order key descending, index ascending), in that order. Order keys are a bijection of
// the bits (no canonical NaN, -0.0 != +0.0), so the order is total and the result is unique:
// any exact algorithm gives it, bit for bit, on every backend (the CPU's threshold filter, the
// GPU's sampled threshold, radix selects and sorts).
//   * the key classes (XLA's top_k order of the bits of a key of that kind):
//       kUnsigned (bool, unsigned ints): the bits;
//       kSigned (two's complement ints): the bits with the sign bit flipped;
//       kFloat (IEEE sign-magnitude): negative keys' bits all flipped, the others' sign bit
//         (-NaN < -inf < ... < -0.0 < +0.0 < ... < +inf < +NaN, payloads ordered as bits);
//   * smallest first (largest = false) is the complemented order key: the same selection, ties
//     still lower index first.
// Kernels compute order keys as they load the keys (never a separate pass over the data) and
// write the results' values as the keys' own bits read at the result's indices.
#pragma once

#include <cstdint>

#include "jax_mergepath/host_device.h"

namespace jax_mergepath {

enum class TopkKeyClass : int { kUnsigned = 0, kSigned = 1, kFloat = 2 };

// The order key of a key of `Bits`: b ^ (top bit set ? high : low), branch-free.
template <typename Bits>
struct TopkOrder {
  Bits low;   // XORed into keys whose top (sign) bit is clear
  Bits high;  // ... into keys whose top bit is set
  JMP_HD Bits key(Bits b) const {
    constexpr int kTop = 8 * int(sizeof(Bits)) - 1;
    const Bits negative = static_cast<Bits>(Bits(0) - static_cast<Bits>(b >> kTop));
    return static_cast<Bits>(b ^ low ^ static_cast<Bits>((low ^ high) & negative));
  }
};

template <typename Bits>
JMP_HD TopkOrder<Bits> topk_order(TopkKeyClass key_class, bool largest) {
  const Bits sign = static_cast<Bits>(Bits(1) << (8 * int(sizeof(Bits)) - 1));
  const Bits ones = static_cast<Bits>(~Bits(0));
  Bits low = key_class == TopkKeyClass::kUnsigned ? Bits(0) : sign;
  Bits high = key_class == TopkKeyClass::kFloat    ? ones
              : key_class == TopkKeyClass::kSigned ? sign
                                                   : Bits(0);
  if (!largest) {
    low = static_cast<Bits>(low ^ ones);
    high = static_cast<Bits>(high ^ ones);
  }
  return {low, high};
}

// Whether (ua, ia) comes before (ub, ib) in a result: the larger order key, then the lower
// index.
template <typename Bits, typename Index>
JMP_HD bool topk_before(Bits ua, Index ia, Bits ub, Index ib) {
  return ua > ub || (ua == ub && ia < ib);
}

// One top_k call: rows x length keys (row-major; the selected axis last) of key_bytes each
// (1, 2, 4 or 8), their class, the direction; out_values (rows x k keys' bits) and out_indices
// (rows x k int32) receive every row's result. 0 <= k <= length < 2^31. strategy: -1, or the
// CUDA strategy forced (tuning/topk.h TopkStrategy; the CPU has one way and ignores it).
struct TopkCall {
  int key_bytes;
  TopkKeyClass key_class;
  bool largest;
  int64_t rows, length, k;
  int64_t strategy;
  const void* keys;
  void* out_values;
  int32_t* out_indices;
  int sms;  // the device's SMs (CUDA handlers; 0 on the CPU)
};

}  // namespace jax_mergepath
