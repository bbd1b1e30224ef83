// ordering.h (level: shared core): the one key order of docs/contract.md, as a map from a key's
// bits to an unsigned integer whose unsigned order is the key order.
//
// Contract (for every key type):
//   * NaN (any payload, any sign) is greater than everything, including +inf ("NaN last");
//   * -0.0 and +0.0 map to the same integer (equal keys, so ties keep input order);
//   * descending order is the bitwise complement of the ascending integer (NaN first then);
//   * the integer is used only to COMPARE; kernels move the original bits, so -0.0 and NaN
//     payloads survive a merge unchanged.
#pragma once

#include <cstdint>
#include <type_traits>

#include "jax_mergepath/host_device.h"

namespace jax_mergepath {

enum class KeyKind { kUnsigned, kSigned, kFloat };

// Traits of one key dtype: its storage bits and how they order.
template <typename BitsT, KeyKind kKind, int kExponentBits = 0>
struct KeyTraits {
  using Bits = BitsT;
  static constexpr KeyKind kind = kKind;
  static constexpr int kBitWidth = 8 * static_cast<int>(sizeof(Bits));
  static constexpr Bits kSign = static_cast<Bits>(Bits(1) << (kBitWidth - 1));
  static constexpr Bits kAllOnes = static_cast<Bits>(~Bits(0));
  // Bits of +inf: all exponent bits set, mantissa zero (only meaningful for kFloat).
  static constexpr Bits kInfBits =
      kExponentBits == 0
          ? Bits(0)
          : static_cast<Bits>(((Bits(1) << kExponentBits) - 1) << (kBitWidth - 1 - kExponentBits));

  // Float keys: the bits without the sign; NaN (any payload, any sign); +-0.0.
  static JMP_HD Bits magnitude(Bits b) { return static_cast<Bits>(b & static_cast<Bits>(~kSign)); }
  static JMP_HD bool is_nan(Bits b) { return magnitude(b) > kInfBits; }
  static JMP_HD bool is_zero(Bits b) { return magnitude(b) == 0; }

  // Ascending order key: unsigned comparison of the result is the contract's key order.
  static JMP_HD Bits order_key(Bits b) {
    if constexpr (kKind == KeyKind::kUnsigned) {
      return b;
    } else if constexpr (kKind == KeyKind::kSigned) {
      return static_cast<Bits>(b ^ kSign);
    } else {
      const Bits m = magnitude(b);
      // Negative keys flip every bit, the others only the sign bit: b ^ (all ones or kSign),
      // the mask made from the sign by a shift (cheaper than a select on the GPU).
      const Bits negative = static_cast<Bits>(Bits(0) - static_cast<Bits>(b >> (kBitWidth - 1)));
      Bits k = static_cast<Bits>(b ^ static_cast<Bits>(negative | kSign));
      k = m == 0 ? kSign : k;         // -0.0 == +0.0
      k = m > kInfBits ? kAllOnes : k;  // every NaN after +inf
      return k;
    }
  }

  // The bits of an order key: order_key's inverse, except that the one key of all zeros is
  // +0.0 and the one key of all NaNs the NaN 0x7f...f (the bits order_key forgets).
  static JMP_HD Bits from_order_key(Bits k) {
    if constexpr (kKind == KeyKind::kUnsigned) {
      return k;
    } else if constexpr (kKind == KeyKind::kSigned) {
      return static_cast<Bits>(k ^ kSign);
    } else {
      if (k == kSign) return Bits(0);
      if (k == kAllOnes) return static_cast<Bits>(~kSign);
      return (k & kSign) ? static_cast<Bits>(k ^ kSign) : static_cast<Bits>(~k);
    }
  }
};

using BoolKey = KeyTraits<uint8_t, KeyKind::kUnsigned>;
using U8Key = KeyTraits<uint8_t, KeyKind::kUnsigned>;
using U16Key = KeyTraits<uint16_t, KeyKind::kUnsigned>;
using U32Key = KeyTraits<uint32_t, KeyKind::kUnsigned>;
using U64Key = KeyTraits<uint64_t, KeyKind::kUnsigned>;
using S8Key = KeyTraits<uint8_t, KeyKind::kSigned>;
using S16Key = KeyTraits<uint16_t, KeyKind::kSigned>;
using S32Key = KeyTraits<uint32_t, KeyKind::kSigned>;
using S64Key = KeyTraits<uint64_t, KeyKind::kSigned>;
using F16Key = KeyTraits<uint16_t, KeyKind::kFloat, 5>;
using BF16Key = KeyTraits<uint16_t, KeyKind::kFloat, 8>;
using F32Key = KeyTraits<uint32_t, KeyKind::kFloat, 8>;
using F64Key = KeyTraits<uint64_t, KeyKind::kFloat, 11>;

// Order key in the requested direction: `flip` is 0 (ascending) or all ones (descending).
template <typename Traits>
JMP_HD typename Traits::Bits directed_key(typename Traits::Bits b, typename Traits::Bits flip) {
  return static_cast<typename Traits::Bits>(Traits::order_key(b) ^ flip);
}

template <typename Traits>
JMP_HD typename Traits::Bits direction_mask(bool descending) {
  return descending ? Traits::kAllOnes : typename Traits::Bits(0);
}

// How a thread merge caches and compares keys (merge_path.h merge_full): key(raw) once for every
// key it reads, before(x, y) iff x strictly precedes y in the directed order. Same order as the
// directed order keys, by construction:
//   * in general, the directed order key, compared unsigned;
//   * float32 / float64 keys on the GPU: the float with the sign flipped when descending,
//     compared by the FPU (-0 == +0; subnormals as numbers: nvcc compiles IEEE compares, no
//     flush-to-zero without fast-math), NaN placed by hand (last ascending, first descending).
//     Two or three instructions a comparison instead of the order-key transform of every key:
//     the merge kernels are bound by instruction issue (ncu). Host code keeps the order keys
//     (a host thread's floating-point mode, e.g. denormals-are-zero, is not ours to trust).
template <typename Traits>
inline constexpr bool kFpuComparable =
#if defined(__CUDA_ARCH__)
    Traits::kind == KeyKind::kFloat &&
    (sizeof(typename Traits::Bits) == 4 || sizeof(typename Traits::Bits) == 8);
#else
    false;
#endif

template <typename Traits, bool kFpuT = kFpuComparable<Traits>>
struct KeyCompare {
  static constexpr bool kFpu = false;
  using Bits = typename Traits::Bits;
  using Key = Bits;
  Bits flip;
  JMP_HD explicit KeyCompare(Bits direction) : flip(direction) {}
  JMP_HD Key key(Bits raw) const { return directed_key<Traits>(raw, flip); }
  JMP_HD bool before(Key x, Key y) const { return x < y; }
};

#if defined(__CUDA_ARCH__)
template <typename Traits>
struct KeyCompare<Traits, true> {
  static constexpr bool kFpu = true;
  using Bits = typename Traits::Bits;
  using Key = std::conditional_t<sizeof(Bits) == 4, float, double>;
  Bits sign;  // the sign bit when descending, else 0
  bool descending;
  JMP_HD explicit KeyCompare(Bits direction)
      : sign(static_cast<Bits>(direction & Traits::kSign)), descending(direction != 0) {}
  JMP_HD Key key(Bits raw) const {
    if constexpr (sizeof(Bits) == 4) {
      return __uint_as_float(raw ^ sign);
    } else {
      return __longlong_as_double(static_cast<long long>(raw ^ sign));
    }
  }
  JMP_HD bool before(Key x, Key y) const {
    const bool x_nan = x != x, y_nan = y != y;
    return (x < y) | (descending ? x_nan & !y_nan : y_nan & !x_nan);
  }
  // Whether a key is not a NaN (sorted_ranges_nan_free).
  JMP_HD static bool not_nan(Bits raw) {
    return static_cast<Bits>(raw & ~Traits::kSign) <= Traits::kInfBits;
  }
};

// KeyCompare of float32 / float64 keys known to hold no NaN: the plain FPU `<`, one instruction
// a comparison (-0 == +0 still). Merges take it for tiles whose ranges hold no NaN
// (sorted_ranges_nan_free): nearly every tile of real data; the merge kernels are issue-bound.
template <typename Traits>
struct PlainFloatCompare : KeyCompare<Traits> {
  using Key = typename KeyCompare<Traits>::Key;
  JMP_HD explicit PlainFloatCompare(typename Traits::Bits direction)
      : KeyCompare<Traits>(direction) {}
  JMP_HD bool before(Key x, Key y) const { return x < y; }
};
#endif

// Whether the sorted ranges of keys[loc[r], loc[r] + count[r]) hold no NaN. A range sorted in
// the contract's order holds its NaNs at one end (last ascending, first descending), so its two end
// keys tell. Unsorted ranges may answer wrongly: their merge order is unspecified anyway (the
// merges' chain checks still see broken spans). False for keys not compared by the FPU.
template <typename Traits, int kRanges>
JMP_HD bool sorted_ranges_nan_free(const typename Traits::Bits* keys, const int (&loc)[kRanges],
                                   const int (&count)[kRanges]) {
#if defined(__CUDA_ARCH__)
  if constexpr (kFpuComparable<Traits>) {
    bool nan_free = true;
    for (int r = 0; r < kRanges; ++r) {
      nan_free &= count[r] == 0 || (KeyCompare<Traits>::not_nan(keys[loc[r]]) &&
                                    KeyCompare<Traits>::not_nan(keys[loc[r] + count[r] - 1]));
    }
    return nan_free;
  }
#endif
  return false;
}

// How the GPU block sort (and the CPU's keys-only block sort) holds a key: ONE register a key,
// hold(raw) once per key loaded, before(x, y) iff x strictly precedes y in the directed order,
// key(k) == k (the interface of KeyCompare, so the serial merges take either), and release(k)
// the key's original bits, exactly: -0.0 and NaN payloads survive. kTiesIdentical: held keys
// that compare equal have equal bits, so a network may order them as plain numbers (min / max,
// not stable) when nothing rides along.
//   * integers: the directed order key (a bijection), compared unsigned;
//   * float32 / float64 on the GPU: KeyCompare's float with the sign flipped when descending
//     (a bijection of the bits), compared by the FPU;
//   * other floats (float16, bfloat16): the directed order key in the high half of a 32-bit
//     word, the raw bits in the low half; only the high half is compared.
template <typename Traits, bool kFpu = KeyCompare<Traits>::kFpu>
struct HeldKey;

// sizeof(HeldKey<Traits>::Key), for host code too (the float32 / float64 HeldKey is GPU-only):
// 16-bit floats take a 32-bit word, every other key its own width.
template <typename Traits>
inline constexpr int kHeldKeyBytes =
    Traits::kind == KeyKind::kFloat && sizeof(typename Traits::Bits) == 2
        ? 4
        : int(sizeof(typename Traits::Bits));

template <typename Traits>
struct HeldKey<Traits, false> {
  using Bits = typename Traits::Bits;
  static constexpr bool kInteger = Traits::kind != KeyKind::kFloat;
  static_assert(kInteger || sizeof(Bits) == 2, "16-bit floats only (f32 / f64 use the FPU)");
  using Key = std::conditional_t<kInteger, Bits, uint32_t>;
  static constexpr bool kTiesIdentical = kInteger;
  Bits flip;
  JMP_HD explicit HeldKey(Bits direction) : flip(direction) {}
  JMP_HD Key hold(Bits raw) const {
    const Bits ord = directed_key<Traits>(raw, flip);
    if constexpr (kInteger) {
      return ord;
    } else {
      return (uint32_t{ord} << 16) | raw;
    }
  }
  JMP_HD Bits release(Key k) const {
    if constexpr (Traits::kind == KeyKind::kUnsigned) {
      return static_cast<Bits>(k ^ flip);
    } else if constexpr (kInteger) {
      return static_cast<Bits>(k ^ flip ^ Traits::kSign);
    } else {
      return static_cast<Bits>(k & 0xFFFFu);
    }
  }
  JMP_HD Key key(Key k) const { return k; }
  JMP_HD bool before(Key x, Key y) const {
    if constexpr (kInteger) {
      return x < y;
    } else {
      return (x >> 16) < (y >> 16);
    }
  }
};

#if defined(__CUDA_ARCH__)
template <typename Traits>
struct HeldKey<Traits, true> : KeyCompare<Traits> {
  using Base = KeyCompare<Traits>;
  using Bits = typename Traits::Bits;
  using Key = typename Base::Key;
  static constexpr bool kTiesIdentical = false;  // -0.0 == +0.0, NaNs equal
  JMP_HD explicit HeldKey(Bits direction) : Base(direction) {}
  JMP_HD Key hold(Bits raw) const { return Base::key(raw); }
  JMP_HD Bits release(Key k) const {
    if constexpr (sizeof(Bits) == 4) {
      return __float_as_uint(k) ^ this->sign;
    } else {
      return static_cast<Bits>(__double_as_longlong(k)) ^ this->sign;
    }
  }
  JMP_HD Key key(Key k) const { return k; }
  // Whether a key keeps its ties identical among plain floats (PlainHeldKey): not NaN, not -0.0.
  JMP_HD static bool plain(Bits raw) { return Base::not_nan(raw) && raw != Traits::kSign; }
};
#endif

// Held float keys of a set known to hold no NaN and no -0.0 (the block sort checks every float32
// tile, HeldKey::plain; GPU code only, as HeldKey of floats): keys that compare equal are
// then equal bits (one zero), so the plain FPU `<` is the order (one instruction, no NaN
// placement) and a min / max network is exact (kTiesIdentical). Holds and releases as HeldKey.
template <typename Traits>
struct PlainHeldKey : HeldKey<Traits> {
  using Key = typename HeldKey<Traits>::Key;
  static constexpr bool kTiesIdentical = true;
  JMP_HD explicit PlainHeldKey(const HeldKey<Traits>& held) : HeldKey<Traits>(held) {}
  JMP_HD bool before(Key x, Key y) const { return x < y; }
};

}  // namespace jax_mergepath
