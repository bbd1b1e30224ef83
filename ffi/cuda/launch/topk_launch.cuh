// topk_launch.cuh (level: launch): the CUDA top_k's launches (entry/topk_cuda.cu's entry point,
// and the kernel harness perf/sweeps/topk_sweep.cu): the key width -> the kernels of its
// unsigned bits (kernels/topk_kernels.cuh; the key class only changes TopkOrder's masks), the
// call's strategy (tuning/topk.h topk_resolve_strategy of its forced one: a row in registers, a
// block a row, the grid or the stream strategy of a row) and their launches, all on `stream`,
// every CUDA call checked. The grid strategies' larger k sort their candidates with the
// package's merge sort, the sort launchers of the composites' traits (per_traits.h
// sort_for_traits: declared, their instances the library's), in the workspace; the registers
// strategy's launches are kernels/topk_regs.cuh's topk_regs_launch (declared here, instantiated
// in instances/topk_regs.cu).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "../block/grid_launch.cuh"
#include "../kernels/topk_kernels.cuh"
#include "jax_mergepath/tuning/merge.h"
#include "jax_mergepath/tuning/workspace.h"
#include "per_traits.h"

namespace jax_mergepath {
namespace topk {

template <typename Kernel>
cudaError_t allow_shared(Kernel* kernel, int64_t bytes) {
  if (bytes <= kSharedBytesWithoutOptIn) return cudaSuccess;
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                              static_cast<int>(bytes));
}

// kernels/topk_regs.cuh.
template <typename Bits>
cudaError_t topk_regs_launch(const TopkCall& call, TopkOrder<Bits> order, cudaStream_t stream);

template <typename Bits, int kThreads, bool kVector>
cudaError_t launch_rows(const TopkCall& call, TopkOrder<Bits> order, cudaStream_t stream) {
  const int64_t cap = topk_block_cap(call.length, call.k);
  const int64_t samples =
      call.length <= cap ? kTopkBlockMinSamples : topk_block_samples(call.length);
  const int64_t bytes = topk_block_shared_bytes(int(sizeof(Bits)), cap, samples);
  auto* kernel = topk_rows_kernel<Bits, kThreads, kVector>;
  if (cudaError_t err = allow_shared(kernel, bytes); err != cudaSuccess) return err;
  const int64_t grid = call.rows < kMaxGrid ? call.rows : kMaxGrid;
  return launch_kernel_shared(kernel, static_cast<unsigned>(grid), kThreads,
                              static_cast<size_t>(bytes), stream, call, order,
                              static_cast<int>(cap), static_cast<int>(samples));
}

template <typename Bits, bool kVector>
cudaError_t launch_block_strategy(const TopkCall& call, TopkOrder<Bits> order,
                                  cudaStream_t stream) {
  switch (topk_block_threads(call.length)) {
    case 64: return launch_rows<Bits, 64, kVector>(call, order, stream);
    case 128: return launch_rows<Bits, 128, kVector>(call, order, stream);
    case 256: return launch_rows<Bits, 256, kVector>(call, order, stream);
    default: return launch_rows<Bits, 512, kVector>(call, order, stream);
  }
}

// The merge sort of a grid call's candidates (capacity a row) in the workspace's sort buffers,
// then the first k of each row to the outputs.
template <typename Bits>
cudaError_t sort_candidates(const TopkCall& call, const GridRows<Bits>& g,
                            unsigned char* ws, const TopkLayout& l, cudaStream_t stream) {
  void* buffer[6];
  for (int i = 0; i < 6; ++i) buffer[i] = ws + l.sort_buffers[i];
  const int64_t total = call.rows * l.capacity;
  const int64_t blocks = ceil_div(total, 256);
  if (blocks > kMaxGrid) return cudaErrorInvalidConfiguration;
  constexpr bool kComposite = sizeof(Bits) <= 4;
  if (cudaError_t err = launch_kernel(
          topk_compose_kernel<Bits>, static_cast<unsigned>(blocks), 256, stream, g,
          call.rows, static_cast<uint64_t*>(buffer[0]), static_cast<uint32_t*>(buffer[0]),
          static_cast<uint64_t*>(buffer[1]));
      err != cudaSuccess) {
    return err;
  }
  SortCall s{};
  s.rows = call.rows;
  s.length = l.capacity;
  s.row_sorted = ws + l.row_flags;
  s.sms = call.sms;
  s.method = SortMethod::kMerge;
  s.keys_needed = true;
  int32_t* splits = reinterpret_cast<int32_t*>(ws + l.splits);
  auto sort = [&](auto traits) {  // (the sort launcher of the keys' traits)
    return sort_for_traits<decltype(traits)>(s, splits, l.splits_elements, stream);
  };
  const void* indices = nullptr;
  if constexpr (kComposite) {  // one uint64 a candidate, ascending
    s.key_type = KeyType::kU64;
    s.payload = PayloadKind::kNone;
    s.keys = buffer[0];
    s.out_keys = buffer[1];
    s.spare_keys = buffer[2];
    if (cudaError_t err = sort(U64Key{}); err != cudaSuccess) return err;
  } else {  // by index (uint32, the order key its value), then stably by order key, descending
    s.key_type = KeyType::kU32;
    s.payload = PayloadKind::kValue;
    s.value_bytes = 8;
    s.keys = buffer[0];
    s.values = buffer[1];
    s.out_keys = buffer[2];
    s.out_payload = buffer[3];
    s.spare_keys = buffer[4];
    s.spare_payload = buffer[5];
    if (cudaError_t err = sort(U32Key{}); err != cudaSuccess) return err;
    s.key_type = KeyType::kU64;
    s.descending = true;
    s.value_bytes = 4;
    s.keys = buffer[3];
    s.values = buffer[2];
    s.out_keys = buffer[0];
    s.out_payload = buffer[1];
    if (cudaError_t err = sort(U64Key{}); err != cudaSuccess) return err;
    indices = buffer[1];
  }
  const int64_t emit_blocks = ceil_div(call.rows * call.k, 256);
  if (emit_blocks > kMaxGrid) return cudaErrorInvalidConfiguration;
  return launch_kernel(topk_emit_kernel<Bits>, static_cast<unsigned>(emit_blocks), 256,
                       stream, call, l.capacity, static_cast<const uint64_t*>(buffer[1]),
                       static_cast<const uint32_t*>(indices));
}

// The grid's GridRows in a call's workspace (its layout l).
template <typename Bits>
GridRows<Bits> grid_rows(unsigned char* ws, const TopkLayout& l) {
  return {reinterpret_cast<TopkRowState*>(ws + l.states), reinterpret_cast<Bits*>(ws + l.cand_keys),
          reinterpret_cast<int32_t*>(ws + l.cand_indices),
          reinterpret_cast<int32_t*>(ws + l.tile_ties), l.capacity, l.tiles};
}

// The stream filter's grid: chunks of a row, and a wave of blocks over every row's chunks.
template <typename Bits>
struct StreamGrid {
  int64_t chunks_per_row;
  unsigned blocks;
  bool aligned;  // 16-byte loads: the keys aligned, and every row when there are several
};

template <typename Bits>
StreamGrid<Bits> stream_grid(const TopkCall& call) {
  constexpr int64_t kChunk = int64_t{kTopkStreamThreads} *
                             vectors_at_once<Bits>(kTopkStreamVecs) * kVectorKeys<Bits>;
  StreamGrid<Bits> sg{};
  sg.chunks_per_row = ceil_div(call.length, kChunk);
  const int64_t chunks = call.rows * sg.chunks_per_row;
  const int64_t wave = int64_t{kTopkStreamBlocksPerSm} * (call.sms > 0 ? call.sms : 1);
  const int64_t blocks = chunks < wave ? chunks : wave;
  sg.blocks = static_cast<unsigned>(blocks < kMaxGrid ? blocks : kMaxGrid);
  sg.aligned = rows_aligned16(call);
  return sg;
}

// The grid strategies (kGridSmall / kGridSort) and the stream strategies (kStreamSmall /
// kStreamSort): samples and thresholds, the filtering read (the tile filter then the decide
// kernel, or the stream filter, which flags the rows itself), the exact path's kernels, the
// candidates' order.
template <typename Bits>
cudaError_t launch_grid_strategy(const TopkCall& call, TopkOrder<Bits> order, unsigned char* ws,
                                 const TopkLayout& l, cudaStream_t stream) {
  const GridRows<Bits> g = grid_rows<Bits>(ws, l);
  const bool stream_filter =
      l.strategy == TopkStrategy::kStreamSmall || l.strategy == TopkStrategy::kStreamSort;
  const bool small =
      l.strategy == TopkStrategy::kGridSmall || l.strategy == TopkStrategy::kStreamSmall;
  const int64_t rows = call.rows;
  if (rows > kMaxGrid || rows * l.tiles > kMaxGrid) return cudaErrorInvalidConfiguration;
  // 1. samples and thresholds
  const int64_t samples = topk_grid_samples(call.length);
  const int rank = static_cast<int>(topk_sample_rank(call.k, call.length, samples));
  const int64_t sample_bytes =
      samples * int64_t(sizeof(Bits)) + (int64_t{1} << kTopkBlockRadixBits) * 4;
  auto* sample = stream_filter ? topk_sample_kernel<Bits, true> : topk_sample_kernel<Bits, false>;
  if (cudaError_t err = allow_shared(sample, sample_bytes); err != cudaSuccess) return err;
  if (cudaError_t err = launch_kernel_shared(sample, static_cast<unsigned>(rows),
                                             kTopkSampleThreads, static_cast<size_t>(sample_bytes),
                                             stream, call, order, g, samples, rank);
      err != cudaSuccess) {
    return err;
  }
  // 2. the filter, and 3. the rows where the sample misjudged flagged for the exact path (its
  // kernels return at once in the others)
  if (stream_filter) {
    const StreamGrid<Bits> sg = stream_grid<Bits>(call);
    if (cudaError_t err = launch_kernel(topk_stream_filter_kernel<Bits>, sg.blocks,
                                        kTopkStreamThreads, stream, call, order, g,
                                        sg.chunks_per_row, sg.aligned);
        err != cudaSuccess) {
      return err;
    }
  } else {
    if (cudaError_t err = launch_kernel(topk_filter_kernel<Bits>,
                                        static_cast<unsigned>(rows * l.tiles), kTopkFilterThreads,
                                        stream, call, order, g);
        err != cudaSuccess) {
      return err;
    }
    if (cudaError_t err = launch_kernel(topk_decide_kernel,
                                        static_cast<unsigned>(ceil_div(rows, 256)), 256, stream,
                                        g.states, rows, call.k, l.capacity);
        err != cudaSuccess) {
      return err;
    }
  }
  int64_t per_row = int64_t{kTopkFallbackBlocksPerSm} * (call.sms > 0 ? call.sms : 1) / rows;
  per_row = per_row < 1 ? 1 : (per_row > l.tiles ? l.tiles : per_row);
  const int64_t fallback_rows = rows < kMaxGrid / per_row ? rows : kMaxGrid / per_row;
  const auto fallback_blocks = static_cast<unsigned>(per_row * fallback_rows);
  auto launch_fallback = [&](auto* kernel, auto... args) {
    return launch_kernel(kernel, fallback_blocks, kTopkFilterThreads, stream, args...);
  };
  if (cudaError_t err = launch_fallback(topk_probe_kernel<Bits>, call, order, g, per_row);
      err != cudaSuccess) {
    return err;
  }
  constexpr int kWidth = 8 * int(sizeof(Bits));
  for (int top = kWidth; top > 0; top -= kTopkRadixBits) {
    const int shift = top > kTopkRadixBits ? top - kTopkRadixBits : 0;
    if (cudaError_t err = launch_fallback(topk_radix_pass_kernel<Bits>, call, order, g,
                                          per_row, shift, top - shift);
        err != cudaSuccess) {
      return err;
    }
  }
  if (cudaError_t err = launch_fallback(topk_tie_count_kernel<Bits>, call, order, g, per_row);
      err != cudaSuccess) {
    return err;
  }
  if (cudaError_t err = launch_kernel(topk_tie_scan_kernel, static_cast<unsigned>(rows),
                                      kTopkSampleThreads, stream, g.states, g.tile_ties, rows,
                                      l.tiles, call.k);
      err != cudaSuccess) {
    return err;
  }
  if (cudaError_t err = launch_fallback(topk_tie_write_kernel<Bits>, call, order, g, per_row);
      err != cudaSuccess) {
    return err;
  }
  // 4. the candidates' order
  if (small) {
    const int64_t bytes =
        topk_block_shared_bytes(int(sizeof(Bits)), kTopkBlockMaxCap, kTopkBlockMaxSamples);
    auto* final_kernel =
        stream_filter ? topk_final_kernel<Bits, true> : topk_final_kernel<Bits, false>;
    if (cudaError_t err = allow_shared(final_kernel, bytes); err != cudaSuccess) return err;
    return launch_kernel_shared(final_kernel, static_cast<unsigned>(rows), kTopkFinalThreads,
                                static_cast<size_t>(bytes), stream, call, g);
  }
  return sort_candidates<Bits>(call, g, ws, l, stream);
}

template <typename Bits>
cudaError_t topk_for_bits(const TopkCall& call, unsigned char* ws, const TopkLayout& l,
                          cudaStream_t stream) {
  const TopkOrder<Bits> order = topk_order<Bits>(call.key_class, call.largest);
  switch (l.strategy) {
    case TopkStrategy::kRegs: return topk_regs_launch<Bits>(call, order, stream);
    case TopkStrategy::kBlock: return launch_block_strategy<Bits, false>(call, order, stream);
    case TopkStrategy::kBlockVec: return launch_block_strategy<Bits, true>(call, order, stream);
    case TopkStrategy::kGridSmall:
    case TopkStrategy::kGridSort:
    case TopkStrategy::kStreamSmall:
    case TopkStrategy::kStreamSort: return launch_grid_strategy<Bits>(call, order, ws, l, stream);
    default: return cudaErrorInvalidValue;
  }
}

// The call's launches: nothing for empty rows or k = 0; the strategy the call's (forced or
// tuning's); the workspace checked against its layout (tuning/workspace.h topk_layout).
inline cudaError_t topk_launch(const TopkCall& call, void* workspace, int64_t workspace_bytes,
                               cudaStream_t stream) {
  if (call.rows == 0 || call.k == 0) return cudaSuccess;
  const TopkLayout l = topk_layout(call.key_bytes, call.k, call.rows, call.length, call.strategy);
  if (l.strategy == TopkStrategy::kNone) return cudaSuccess;
  if (l.strategy == TopkStrategy::kInvalid) return cudaErrorInvalidValue;
  if (l.bytes > workspace_bytes) return cudaErrorInvalidValue;
  auto* ws = static_cast<unsigned char*>(workspace);
  switch (call.key_bytes) {
    case 1: return topk_for_bits<uint8_t>(call, ws, l, stream);
    case 2: return topk_for_bits<uint16_t>(call, ws, l, stream);
    case 4: return topk_for_bits<uint32_t>(call, ws, l, stream);
    case 8: return topk_for_bits<uint64_t>(call, ws, l, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace topk
}  // namespace jax_mergepath
