// sort_method.h (level: shared core, decision): which method a sort takes (call_args.h
// SortMethod), decided here and nowhere else, from the knobs of tuning/radix.h (CUDA) and
// tuning/cpu.h (CPU). The lowering resolves a call's method once, through _cpu
// (jax_mergepath/_ffi.py resolve_sort_method), passes it down as the FFI attribute `method` and
// sizes the workspace from it (tuning/workspace.h sort_radix_workspace_per_row); the launchers
// only run it: the CUDA sort's (ffi/cuda/launch/sort_launch.cuh) asks sort_takes_radix of the
// call's run-time rows, which for a resolved method is a question of what the radix path can run
// (a shard may hold fewer rows than the call was lowered with), for kAdaptive the same decision
// the lowering would have made; the CPU sort's (ffi/cpu/sort_cpu.cc) asks cpu_sort_takes_radix.
#pragma once

#include <cstdint>

#include "jax_mergepath/call_args.h"
#include "jax_mergepath/key_types.h"
#include "jax_mergepath/tuning/cpu.h"
#include "jax_mergepath/tuning/radix.h"

namespace jax_mergepath {

// An extent the lowering does not know (a symbolic dimension under jax.export).
inline constexpr int64_t kUnknownExtent = -1;

// Whether the CUDA sort of rows x length keys takes the radix path under `method`: never for
// kMerge; wherever the radix path can run it (radix_possible) for kRadix and kRadixDirect; for
// kAdaptive where it can and the row is at least radix_min_length long (measured: the radix path
// wins from there).
constexpr bool sort_takes_radix(SortMethod method, int key_bytes, int payload_bytes,
                                int64_t rows, int64_t length, bool integer_keys) {
  if (method == SortMethod::kMerge ||
      !radix_possible(key_bytes, payload_bytes, rows, length, integer_keys)) {
    return false;
  }
  return method != SortMethod::kAdaptive ||
         length >= radix_min_length(key_bytes, payload_bytes, rows);
}

// The method the CUDA lowering passes for a sort of `rows` rows (kUnknownExtent: a symbolic
// batch) of `length` keys (kUnknownExtent: symbolic), under the user's knob (kAdaptive for
// "auto", kMerge, kRadix); short_keys_onesweep: every architecture built sorts 2-byte keys by
// CUB's onesweep (_cuda.short_keys_onesweep), where tuning/workspace.h bounds their direct sort.
//   * kMerge forced: kMerge. A symbolic length: the knob itself (kAdaptive: the launcher decides
//     from the run-time shape; kRadix: the radix path where it can run), never direct (the
//     direct sort's workspace needs the length).
//   * Else sort_takes_radix decides, as for one row when the call has one, else as for rows >= 2:
//     a call of several rows may run on a shard of fewer (XLA's SPMD partitioner splits batch
//     dimensions: jax_mergepath/_lowering.py), so the method must hold for any of them. A shard of
//     several rows decides as the call (sort_takes_radix depends on rows >= 2 only through
//     segmented_radix_possible's 2^31 keys, which the launcher checks of the shard); a shard of
//     one row runs the method with the batched call's workspace a row, in which the one-row radix
//     path (CUB's onesweep, the counting scatter) never fits, so it merge-sorts, as it did when
//     the launcher decided (one-byte keys alone decide alike at any count of rows).
//   * The radix path is direct (kRadixDirect) where radix_direct admits the call's static rows,
//     they take the radix path, and 2-byte keys sort by onesweep; such a call runs the direct sort
//     on any shard (radix_direct admits one row of what it admits in rows; the workspace a row is
//     one row's whole need: radix_workspace_per_row).
constexpr SortMethod resolve_sort_method(SortMethod knob, int key_bytes, PayloadKind payload,
                                         int value_bytes, bool integer_keys, bool descending,
                                         int64_t rows, int64_t length, bool short_keys_onesweep) {
  if (knob == SortMethod::kMerge) return SortMethod::kMerge;
  if (length < 0) return knob == SortMethod::kRadix ? SortMethod::kRadix : SortMethod::kAdaptive;
  const int carried = payload_bytes(payload, value_bytes);
  const int64_t any_rows = rows == 1 ? 1 : 2;
  if (!sort_takes_radix(knob, key_bytes, carried, any_rows, length, integer_keys)) {
    return SortMethod::kMerge;
  }
  const bool direct =
      rows >= 0 && radix_direct(integer_keys, key_bytes, payload, value_bytes, descending, rows) &&
      sort_takes_radix(knob, key_bytes, carried, rows, length, integer_keys) &&
      (key_bytes != 2 || short_keys_onesweep);
  return direct ? SortMethod::kRadixDirect : SortMethod::kRadix;
}

// Whether the CPU sort of rows of `length` keys runs its integer radix sort (ffi/cpu/radix_cpu.h;
// integer keys only, which sort_cpu.cc knows from its traits) under `method`: kRadix wherever it
// can (copy_tile's int lengths), kAdaptive from cpu_radix_min_length keys, never otherwise.
constexpr bool cpu_sort_takes_radix(SortMethod method, int key_bytes, int64_t length) {
  if (length >= (int64_t{1} << 31)) return false;
  if (method == SortMethod::kRadix) return true;
  return method == SortMethod::kAdaptive && length >= cpu_radix_min_length(key_bytes);
}

// The method the CPU lowering passes: kRadix for integer keys where cpu_sort_takes_radix takes
// them, kMerge otherwise, kAdaptive for a symbolic length (the CPU sort then decides at run
// time). The count of rows does not enter (each row is sorted alone), and the user's knob is the
// CUDA sort's (benchmarks, bit-identity tests): the CPU keeps its own choice.
constexpr SortMethod resolve_cpu_sort_method(int key_bytes, bool integer_keys, int64_t length) {
  if (length < 0) return SortMethod::kAdaptive;
  return integer_keys && cpu_sort_takes_radix(SortMethod::kAdaptive, key_bytes, length)
             ? SortMethod::kRadix
             : SortMethod::kMerge;
}

}  // namespace jax_mergepath
