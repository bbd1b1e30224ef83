// key_types.h (level: shared core): the dispatch table from a runtime key type to its ordering
// traits. Adding a key dtype is one enum entry here, one case in visit_key_type (and in order_mask
// when it runs as another type's traits), and one line in the handlers' DataType table
// (ffi/handlers/decode.h).
#pragma once

#include <cstdint>
#include <type_traits>

#include "jax_mergepath/ordering.h"

namespace jax_mergepath {

enum class KeyType : int {
  kBool, kU8, kU16, kU32, kU64, kS8, kS16, kS32, kS64, kF16, kBF16, kF32, kF64, kInvalid
};

// Calls f(Traits{}) for the traits the kernels run the key type with; returns f's result.
// Signed integers run as the unsigned traits of their width: their order key is the unsigned one
// with the sign bit flipped (order_key(b) ^ flip == b ^ (kSign ^ flip)), which order_mask folds
// into the direction mask, so there is one instantiation a width for all integers (bool is
// uint8). kInvalid is never visited (handlers reject it first); it falls back to U8Key only to
// keep the switch total.
template <typename F>
auto visit_key_type(KeyType type, F&& f) {
  switch (type) {
    case KeyType::kU16:
    case KeyType::kS16: return f(U16Key{});
    case KeyType::kU32:
    case KeyType::kS32: return f(U32Key{});
    case KeyType::kU64:
    case KeyType::kS64: return f(U64Key{});
    case KeyType::kF16: return f(F16Key{});
    case KeyType::kBF16: return f(BF16Key{});
    case KeyType::kF32: return f(F32Key{});
    case KeyType::kF64: return f(F64Key{});
    case KeyType::kBool:
    case KeyType::kU8:
    case KeyType::kS8:
    case KeyType::kInvalid:
    default: return f(U8Key{});
  }
}

JMP_HD constexpr bool is_signed_integer(KeyType type) {
  return type == KeyType::kS8 || type == KeyType::kS16 || type == KeyType::kS32 ||
         type == KeyType::kS64;
}

// Integer keys (bool, signed and unsigned): equal keys are equal bits.
JMP_HD constexpr bool is_integer_key(KeyType type) {
  return type != KeyType::kF16 && type != KeyType::kBF16 && type != KeyType::kF32 &&
         type != KeyType::kF64 && type != KeyType::kInvalid;
}

// The mask that directed_key<Traits> xors into a key's order key, for the Traits that
// visit_key_type(type) gives: the direction (all ones when descending), and, for a signed
// integer run as unsigned, its sign bit (not when Traits are the signed ones themselves, as a
// sweep may instantiate them). Every kernel's `flip` comes from here.
template <typename Traits>
JMP_HD typename Traits::Bits order_mask(KeyType type, bool descending) {
  using Bits = typename Traits::Bits;
  const bool fold_sign = Traits::kind == KeyKind::kUnsigned && is_signed_integer(type);
  const Bits sign = fold_sign ? Traits::kSign : Bits(0);
  return static_cast<Bits>(direction_mask<Traits>(descending) ^ sign);
}

// What a merge or sort writes beside (or instead of) the keys:
//   kNone: nothing; kIndex: the int32 source position of each output (a merge's B element j is
//   m + j; a sort's is its position in the row); kValue: a value of value_bytes bytes moved with
//   its key; kRanksOfA / kRanksOfB (merges only): no merged keys: for every element of A (or B),
//   the number of elements of the other side that precede it in the merge, into an int32 array
//   shaped like A (or B): the sorted-query searchsorted.
enum class PayloadKind : int { kNone = 0, kIndex = 1, kValue = 2, kRanksOfA = 3, kRanksOfB = 4 };

inline constexpr bool is_ranks(PayloadKind payload) {
  return payload == PayloadKind::kRanksOfA || payload == PayloadKind::kRanksOfB;
}

// The payload's size in bytes per element (tuning policies are chosen by key + payload bytes).
inline constexpr int payload_bytes(PayloadKind payload, int value_bytes) {
  return payload == PayloadKind::kNone    ? 0
         : payload == PayloadKind::kValue ? value_bytes
                                          : 4;
}

// Unsigned integer of a payload's byte width (payloads move as raw bits).
template <typename F>
auto visit_payload_bits(int bytes, F&& f) {
  switch (bytes) {
    case 1: return f(uint8_t{});
    case 2: return f(uint16_t{});
    case 8: return f(uint64_t{});
    case 4:
    default: return f(uint32_t{});
  }
}

// The one dispatch of a runtime payload: f(std::integral_constant<PayloadKind, K>{}, Element{})
// with Element = PayloadElement<K, the unsigned bits of value_bytes>; returns f's result.
template <typename F>
auto visit_payload(PayloadKind payload, int value_bytes, F&& f) {
  using K = PayloadKind;
  auto call = [&](auto kind, auto element) { return f(kind, element); };
  switch (payload) {
    case K::kIndex: return call(std::integral_constant<K, K::kIndex>{}, int32_t{});
    case K::kValue:
      return visit_payload_bits(value_bytes, [&](auto bits) {
        return call(std::integral_constant<K, K::kValue>{}, bits);
      });
    case K::kRanksOfA: return call(std::integral_constant<K, K::kRanksOfA>{}, int32_t{});
    case K::kRanksOfB: return call(std::integral_constant<K, K::kRanksOfB>{}, int32_t{});
    case K::kNone:
    default: return call(std::integral_constant<K, K::kNone>{}, uint8_t{});
  }
}

}  // namespace jax_mergepath
