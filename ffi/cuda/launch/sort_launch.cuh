// sort_launch.cuh (level: launch): the CUDA sort of one key traits (per_traits.h
// sort_for_traits, reached from the entry sort_cuda in entry/sort_cuda.cu; instantiated in
// ffi/cuda/instances/sort_*.cu). All on `stream`, no allocation, no host sync (graph-safe).
// The call's method (call_args.h SortMethod, resolved when it was lowered: sort_method.h) says
// whether the radix path runs instead (sort_takes_radix of the call's rows, which may be a
// shard's: kMerge never, kRadix and kRadixDirect where the radix path can run them, kAdaptive
// where it also wins): one-byte keys kernels/counting_sort.cuh alone, counting_scatter.cuh with a
// payload, else kernels/radix_sort.cuh, each of which may decline for want of workspace or of
// rows (not kRadixDirect's direct sort); otherwise:
//   1. row flags, when there are passes (rows longer than a tile): every row starts "sorted",
//      any out-of-order neighbour pair clears its flag, and the chunks that may belong to a
//      sorted row are stored to the outputs as they are checked (kernels/sorted_copy.cuh); rows
//      of one tile are checked by the block sort itself (a block of sorted rows skips its sort);
//   2. block sort (kernels/block_sort.cuh): every tile (of SortPolicy, or of its wide one where
//      sort_takes_wide_tile) of every unsorted row sorted, into the buffer from which the passes
//      end in the outputs; sorted rows' blocks return at once;
//   3. passes, ping-ponging between the outputs and the spare buffers from run width tile up:
//      a two-way pass is ONE batched merge (merge_for_traits: merge_launch.cuh) of the rows' run
//      pairs (MergeLayout kRunPairs), doubling the width; a quad pass
//      (kernels/quad_merge.cuh, where sort_uses_quads) merges four runs at once, an eight-way
//      pass (kernels/eight_way_merge.cuh, where sort_uses_eights) eight (sort_pass_factor);
//      sorted rows' merges are empty (row_done).
// The payload (int32 positions for argsort, or one value) is generated or loaded by the block
// sort and moved by the passes as a kValue payload of its width. The merge launcher is only
// declared here (per_traits.h): its kernels are compiled in their own instances, not again in
// the sort's.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "../block/grid_launch.cuh"
#include "../kernels/block_sort.cuh"
#include "../kernels/counting_scatter.cuh"
#include "../kernels/counting_sort.cuh"
#include "../kernels/eight_way_merge.cuh"
#include "../kernels/quad_merge.cuh"
#include "../kernels/radix_sort.cuh"
#include "../kernels/sorted_copy.cuh"
#include "jax_mergepath/sort_method.h"
#include "jax_mergepath/tuning/radix.h"
#include "jax_mergepath/tuning/sort.h"
#include "per_traits.h"

namespace jax_mergepath {

// The sort after its block sort of Policy's tile; quads, eights: tuning/sort.h sort_uses_quads,
// sort_uses_eights.
template <typename Traits, PayloadKind kPayload, typename Value, typename Policy>
cudaError_t sort_with(const SortCall& call, bool quads, bool eights, int32_t* splits,
                      cudaStream_t stream) {
  using Bits = typename Traits::Bits;
  constexpr bool kCarry = kPayload != PayloadKind::kNone;
  constexpr int kCarriedBytes = kCarry ? int(sizeof(Value)) : 0;  // the passes' value payload
  constexpr PayloadKind kCarried = kCarry ? PayloadKind::kValue : PayloadKind::kNone;
  const int64_t rows = call.rows, d = call.length;
  const int passes = sort_pass_count(quads, eights, Policy::kTile, d);
  const bool row_flags = passes > 0;  // rows of one tile: the block sort checks its own
  if (row_flags) {
    if (cudaError_t err = launch_sorted_copy<Traits, kPayload, Value>(call, stream);
        err != cudaSuccess) {
      return err;
    }
  }

  Bits* key_buf[2] = {static_cast<Bits*>(call.out_keys), static_cast<Bits*>(call.spare_keys)};
  Value* val_buf[2] = {static_cast<Value*>(call.out_payload),
                       static_cast<Value*>(call.spare_payload)};
  int cur = passes & 1;
  // Long rows: a block per tile. Short rows: tile / span rows a block, each in its segment.
  const int64_t span = sort_segment(d, Policy::kItems, Policy::kTile);
  const int64_t tiles_per_row = ceil_div(d, Policy::kTile);
  const int64_t blocks =
      span < Policy::kTile ? ceil_div(rows, Policy::kTile / span) : rows * tiles_per_row;
  if (blocks >= (int64_t{1} << 31)) return cudaErrorInvalidConfiguration;
  const auto flip = order_mask<Traits>(call.key_type, call.descending);
  if (cudaError_t err = launch_block_sort<Traits, kPayload, Value, Policy>(
          static_cast<unsigned>(blocks), stream, call, key_buf[cur], val_buf[cur], flip,
          static_cast<int>(span), tiles_per_row, row_flags);
      err != cudaSuccess) {
    return err;
  }

  for (int64_t width = Policy::kTile; width < d; cur ^= 1) {
    const MergeCall pass = sort_pass(call, width, key_buf[cur], key_buf[cur ^ 1], val_buf[cur],
                                     val_buf[cur ^ 1], kCarriedBytes);
    const int factor = sort_pass_factor(quads, eights, width, d);
    cudaError_t err = cudaSuccess;
    if (factor == 8) {
      // (compiled only for the shapes that take it: no other shape gets factor 8)
      if constexpr (sort_may_use_eights(int(sizeof(Bits)), kCarriedBytes)) {
        err = launch_eight_way_pass<Traits, kCarried, Value>(pass, splits, stream);
      } else {
        err = cudaErrorNotSupported;
      }
    } else if (factor == 4) {
      err = launch_quad_pass<Traits, kCarried, Value>(pass, splits, stream);
    } else {
      err = merge_for_traits<Traits>(pass, splits, stream);
    }
    if (err != cudaSuccess) return err;
    width *= factor;
  }
  return cudaSuccess;
}

template <typename Traits, PayloadKind kPayload, typename Value>
cudaError_t launch_sort(const SortCall& call, int32_t* splits, int64_t splits_elements,
                        cudaStream_t stream) {
  constexpr int kKeyBytes = int(sizeof(typename Traits::Bits));
  constexpr int kCarriedBytes = kPayload != PayloadKind::kNone ? int(sizeof(Value)) : 0;
  using Policy = SortPolicy<kKeyBytes, kCarriedBytes>;
  using Wide = SortPolicy<kKeyBytes, kCarriedBytes, true>;
  if (call.rows == 0 || call.length == 0) return cudaSuccess;
  if (sort_takes_radix(call.method, kKeyBytes, kCarriedBytes, call.rows, call.length,
                       is_integer_key(call.key_type))) {
    // (each path compiled only for the widths it takes: CUB's alone have instances)
    bool taken = false;
    cudaError_t err = cudaSuccess;
    if constexpr (counting_possible(kKeyBytes, kCarriedBytes, 1)) {
      err = counting_sort<Traits>(call, splits, splits_elements, stream, &taken);
    } else if constexpr (scatter_possible(kKeyBytes, kCarriedBytes, 1, kRadixShortestRow + 1)) {
      err = counting_scatter<Traits, kPayload>(call, splits, splits_elements, stream, &taken);
    } else if constexpr (cub_radix_possible(kKeyBytes, kCarriedBytes, 1, kRadixShortestRow + 1,
                                            Traits::kind != KeyKind::kFloat)) {
      err = radix_sort<Traits, kPayload>(call, splits, splits_elements, stream, &taken);
    }
    if (err != cudaSuccess || taken) return err;
  }
  // (kRadixDirect has no spare buffers to merge-sort with: the handler checked it runs)
  if (call.method == SortMethod::kRadixDirect) return cudaErrorInvalidValue;
  const bool quads = sort_uses_quads(kKeyBytes, kCarriedBytes, call.rows, call.length);
  const bool eights = sort_uses_eights(kKeyBytes, kCarriedBytes, call.rows, call.length);
  if constexpr (Wide::kTile > Policy::kTile) {  // (one more instantiation)
    if (sort_takes_wide_tile(kKeyBytes, kCarriedBytes, call.rows, call.length)) {
      return sort_with<Traits, kPayload, Value, Wide>(call, quads, eights, splits, stream);
    }
  }
  return sort_with<Traits, kPayload, Value, Policy>(call, quads, eights, splits, stream);
}

// The runtime payload of a sort call -> launch_sort's template (values move as raw bits).
template <typename Traits>
cudaError_t sort_for_traits(const SortCall& call, int32_t* splits, int64_t splits_elements,
                            cudaStream_t stream) {
  switch (call.payload) {
    case PayloadKind::kIndex:
      return launch_sort<Traits, PayloadKind::kIndex, int32_t>(call, splits, splits_elements,
                                                               stream);
    case PayloadKind::kValue:
      return visit_payload_bits(call.value_bytes, [&](auto value) {
        return launch_sort<Traits, PayloadKind::kValue, decltype(value)>(call, splits,
                                                                         splits_elements, stream);
      });
    case PayloadKind::kNone:
    default:
      return launch_sort<Traits, PayloadKind::kNone, uint8_t>(call, splits, splits_elements,
                                                              stream);
  }
}

}  // namespace jax_mergepath
