// radix_cpu.h (level: CPU backend): the CPU sort's integer path: a stable LSD radix sort of one row
// of integer keys (8-bit digits of their directed order keys: ordering.h, `flip` from order_mask),
// the payload alongside. Integer order keys are a bijection of the bits, so the result is the merge
// sort's, bit for bit. Digits every key shares are skipped (one read of the row builds every
// digit's histogram first); the passes ping-pong between the spare buffers and the outputs so that
// the last one lands in the outputs. Used by sort_cpu.cc where sort_method.h cpu_sort_takes_radix
// says.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>

#include "jax_mergepath/ordering.h"

namespace jax_mergepath {

// Sorts keys[0, n) (raw bits) with their payload (payload(i) of element i) into out_keys /
// out_vals, using spare_keys / spare_vals as the other buffer; Value is ignored without kCarry.
template <typename Bits, bool kCarry, typename Value, typename Payload>
void radix_sort_row(const Bits* keys, int64_t n, Bits flip, const Payload& payload,
                    Bits* out_keys, Value* out_vals, Bits* spare_keys, Value* spare_vals) {
  constexpr int kDigits = int(sizeof(Bits));
  std::array<std::array<int64_t, 256>, kDigits> count{};
  for (int64_t i = 0; i < n; ++i) {
    const Bits ord = static_cast<Bits>(keys[i] ^ flip);
    for (int d = 0; d < kDigits; ++d) ++count[d][(ord >> (8 * d)) & 0xFF];
  }
  int active[kDigits];
  int passes = 0;
  for (int d = 0; d < kDigits; ++d) {
    const int64_t first = count[d][(static_cast<Bits>(keys[0] ^ flip) >> (8 * d)) & 0xFF];
    if (first != n) active[passes++] = d;  // (a digit all keys share orders nothing)
  }
  if (passes == 0) {  // every key equal: already in order
    std::memcpy(out_keys, keys, size_t(n) * sizeof(Bits));
    if constexpr (kCarry) {
      for (int64_t i = 0; i < n; ++i) out_vals[i] = payload(i);
    }
    return;
  }
  // Pass p writes the outputs when passes - 1 - p is even, else the spare buffers; the keys
  // travel as order keys between passes and as raw bits out of the last.
  const Bits* src_keys = keys;
  const Value* src_vals = nullptr;
  for (int p = 0; p < passes; ++p) {
    const int d = active[p];
    const bool to_out = (passes - 1 - p) % 2 == 0;
    Bits* dst_keys = to_out ? out_keys : spare_keys;
    Value* dst_vals = to_out ? out_vals : spare_vals;
    std::array<int64_t, 256> at{};
    for (int b = 1; b < 256; ++b) at[b] = at[b - 1] + count[d][b - 1];
    const Bits in_flip = p == 0 ? flip : Bits(0);  // the first pass reads raw bits
    const Bits out_flip = p == passes - 1 ? flip : Bits(0);  // the last writes raw bits
    for (int64_t i = 0; i < n; ++i) {
      const Bits ord = static_cast<Bits>(src_keys[i] ^ in_flip);
      const int64_t to = at[(ord >> (8 * d)) & 0xFF]++;
      dst_keys[to] = static_cast<Bits>(ord ^ out_flip);
      if constexpr (kCarry) dst_vals[to] = p == 0 ? payload(i) : src_vals[i];
    }
    src_keys = dst_keys;
    src_vals = dst_vals;
  }
}

}  // namespace jax_mergepath
