// tile_sweep.cu: times the CUDA merge (launch_merge: partition + tiled merge, the production
// kernels) for several tile policies on one GPU, to choose tuning/merge.h's MergePolicy: one merge
// of 2^27 outputs
// (int32, int32 + int32, float32, int64, int64 + int32, int64 + int64) and batches of rows of
// 32+32, 512+512 and 2048+2048 int32 (the rows kernel: the policy's items or two fewer,
// tuning/merge.h merge_rows_items; the items printed are those it ran). Every variant's output is
// checked against std::merge before it is timed. Prints device time (CUDA events around each
// call, median of warm repeats), GB/s (inputs read once + outputs written once) and % of a
// cudaMemcpyDeviceToDevice of the same bytes measured in the same run.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 --expt-relaxed-constexpr -Iffi/include -Iffi/cuda \
//        perf/sweeps/tile_sweep.cu -o /tmp/tile_sweep
//   /tmp/tile_sweep [log2_total=27] [repeats=20] [only=-1: the variant number to run, for ncu]
//                   [time: time `only` like the full sweep does, instead of one profiled call]
//   /tmp/tile_sweep rows [log2_total=27] [repeats=20] [side=0: all]: the rows kernel's items a
//                   thread on short rows (of side + side; 0: every side), each count as it is
//                   (rows_items)
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <random>
#include <vector>

#include "../../ffi/cuda/launch/merge_launch.cuh"
#include "sweep_timing.cuh"

namespace jmp = jax_mergepath;

template <int kThreadsT, int kItemsT, int kMinBlocksT>
using Sweep = jmp::TilePolicy<kThreadsT, kItemsT, kMinBlocksT, int64_t{kThreadsT} * kItemsT>;

struct Inputs {
  int64_t rows = 1, m = 0, n = 0;  // rows merges of m + n
  int key_bytes = 4, value_bytes = 4;
  void *a = nullptr, *b = nullptr, *va = nullptr, *vb = nullptr;
  void *out = nullptr, *out_vals = nullptr, *copy_dst = nullptr;
  int32_t* workspace = nullptr;
  std::vector<uint64_t> expect_keys;  // raw bits, widened
  std::vector<uint32_t> expect_vals;  // source position in [A | B]
};

// `rows` rows of sorted keys with random gaps (A and B interleave evenly), values = position in
// [A | B] of all rows, stored as Value (4 or 8 bytes).
template <typename Bits, typename Value = uint32_t>
Inputs make_inputs(int64_t rows, int64_t m, int64_t n, bool is_float, uint64_t seed) {
  Inputs in;
  in.value_bytes = sizeof(Value);
  in.rows = rows;
  in.m = m;
  in.n = n;
  in.key_bytes = sizeof(Bits);
  std::mt19937_64 gen(seed);
  auto sorted = [&](int64_t len) {
    std::vector<Bits> v(len);
    int64_t x = -(int64_t{1} << 29);
    for (int64_t i = 0; i < len; ++i) {
      x += static_cast<int64_t>(gen() & 3);
      if (is_float) {
        const float f = static_cast<float>(x) * 0.5f;
        uint32_t bits;
        std::memcpy(&bits, &f, 4);
        v[i] = static_cast<Bits>(bits);
      } else {
        v[i] = static_cast<Bits>(x);
      }
    }
    return v;
  };
  std::vector<Bits> a, b;
  for (int64_t r = 0; r < rows; ++r) {
    const std::vector<Bits> ra = sorted(m), rb = sorted(n);
    a.insert(a.end(), ra.begin(), ra.end());
    b.insert(b.end(), rb.begin(), rb.end());
  }
  auto as_number = [&](Bits bits) -> double {
    if (is_float) {
      float f;
      const uint32_t u = static_cast<uint32_t>(bits);
      std::memcpy(&f, &u, 4);
      return f;
    }
    return static_cast<double>(static_cast<std::make_signed_t<Bits>>(bits));
  };
  in.expect_keys.resize(rows * (m + n));
  in.expect_vals.resize(rows * (m + n));
  for (int64_t r = 0; r < rows; ++r) {
    int64_t i = 0, j = 0;
    const Bits* ra = a.data() + r * m;
    const Bits* rb = b.data() + r * n;
    for (int64_t k = 0; k < m + n; ++k) {
      const bool from_b = j < n && (i >= m || as_number(rb[j]) < as_number(ra[i]));
      in.expect_keys[r * (m + n) + k] = from_b ? rb[j] : ra[i];
      in.expect_vals[r * (m + n) + k] = static_cast<uint32_t>(r * (m + n) + (from_b ? m + j++ : i++));
    }
  }
  std::vector<Value> va(rows * m), vb(rows * n);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t q = 0; q < m; ++q) va[r * m + q] = static_cast<Value>(r * (m + n) + q);
    for (int64_t q = 0; q < n; ++q) vb[r * n + q] = static_cast<Value>(r * (m + n) + m + q);
  }
  m *= rows;  // element counts of all rows from here on
  n *= rows;
  const size_t kb = sizeof(Bits);
  CHECK_CUDA(cudaMalloc(&in.a, m * kb));
  CHECK_CUDA(cudaMalloc(&in.b, n * kb));
  const size_t vb_bytes = sizeof(Value);
  CHECK_CUDA(cudaMalloc(&in.va, m * vb_bytes));
  CHECK_CUDA(cudaMalloc(&in.vb, n * vb_bytes));
  CHECK_CUDA(cudaMalloc(&in.out, (m + n) * kb));
  CHECK_CUDA(cudaMalloc(&in.out_vals, (m + n) * vb_bytes));
  CHECK_CUDA(cudaMalloc(&in.copy_dst, (m + n) * kb));
  CHECK_CUDA(cudaMalloc(&in.workspace, ((m + n) / 128 + 2) * 4));
  CHECK_CUDA(cudaMemcpy(in.a, a.data(), m * kb, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(in.b, b.data(), n * kb, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(in.va, va.data(), m * vb_bytes, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(in.vb, vb.data(), n * vb_bytes, cudaMemcpyHostToDevice));
  return in;
}

void free_inputs(Inputs& in) {
  for (void* p : {in.a, in.b, in.va, in.vb, in.out, in.out_vals, in.copy_dst,
                  static_cast<void*>(in.workspace)}) {
    CHECK_CUDA(cudaFree(p));
  }
}

int g_variant = 0;
bool g_profile = true;  // `only` runs one checked call (for ncu) unless argv[4] is "time"
// A stream of its own (the legacy default stream would serialize what launch_merge overlaps).
cudaStream_t g_stream = nullptr;

// kExactRows: the rows kernel with Policy's items as they are (launch_rows), not cut by
// merge_rows_items; the inputs must be rows the rows kernel holds.
template <typename Traits, jmp::PayloadKind kPayload, typename Policy, typename Value = uint32_t,
          bool kExactRows = false>
void run_variant(const char* label, Inputs& in, int repeats, int only, float copy_ms) {
  using Bits = typename Traits::Bits;
  constexpr int kValueBytes = kPayload == jmp::PayloadKind::kValue ? int(sizeof(Value)) : 0;
  if (kValueBytes != 0 && kValueBytes != in.value_bytes) std::exit(2);  // inputs of another width
  const int variant = g_variant++;
  if (only >= 0 && variant != only) return;
  jmp::MergeCall call{};
  call.key_type = jmp::KeyType::kS32;
  call.descending = false;
  call.payload = kPayload;
  call.value_bytes = sizeof(Value);
  call.layout = jmp::rows_layout(in.rows, in.m, in.n);
  call.a = in.a;
  call.b = in.b;
  call.out = in.out;
  call.a_values = in.va;
  call.b_values = in.vb;
  call.out_payload = in.out_vals;
  call.sms = device_sms();
  auto go = [&] {
    if constexpr (kExactRows) {
      const auto flip = jmp::order_mask<Traits>(call.key_type, call.descending);
      CHECK_CUDA((jmp::launch_rows<Traits, kPayload, Value, Policy>(call, flip, g_stream)));
    } else {
      CHECK_CUDA(
          (jmp::launch_merge<Traits, kPayload, Value, Policy>(call, in.workspace, g_stream)));
    }
  };
  const int64_t total = in.rows * (in.m + in.n);
  CHECK_CUDA(cudaMemsetAsync(in.out, 0, total * sizeof(Bits), g_stream));
  CHECK_CUDA(cudaMemsetAsync(in.out_vals, 0, total * sizeof(Value), g_stream));
  go();
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<Bits> got(total);
  std::vector<Value> got_vals(total);
  CHECK_CUDA(cudaMemcpy(got.data(), in.out, total * sizeof(Bits), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(got_vals.data(), in.out_vals, total * sizeof(Value),
                        cudaMemcpyDeviceToHost));
  int64_t bad = 0;
  for (int64_t k = 0; k < total; ++k) {
    bad += static_cast<uint64_t>(got[k]) != in.expect_keys[k];
    if (kPayload == jmp::PayloadKind::kValue) bad += got_vals[k] != in.expect_vals[k];
  }
  if (only >= 0 && g_profile) {  // profiling run: one checked call is all ncu needs
    std::printf("variant %d %s: %s\n", variant, label, bad ? "WRONG" : "ok");
    return;
  }
  const float ms = time_ms(go, repeats, 3, g_stream);
  const bool tiled = !kExactRows && !jmp::merge_is_packed(Policy::kTile, call.layout, kPayload);
  const float partition_ms =
      tiled ? time_ms([&] { CHECK_CUDA(jmp::launch_partition<Traits>(
                                call, jmp::tile_map(call.layout, Policy::kTile), in.workspace,
                                g_stream)); },
                      repeats, 3, g_stream)
            : 0.0f;
  const double bytes =
      2.0 * total * (sizeof(Bits) + kValueBytes);
  const double copy_rate = 2.0 * total * sizeof(Bits) / (copy_ms * 1e-3);
  const double rate = bytes / (ms * 1e-3);
  // rows kernel: the items merge_rows_items picks from the policy's (tuning/merge.h)
  const int items =
      tiled || kExactRows
          ? Policy::kItems
          : jmp::merge_rows_items(int(sizeof(Bits)), Policy::kThreads, Policy::kItems,
                                  call.layout.row_length());
  std::printf(
      "%2d %-26s T=%3d I=%2d B=%2d tile=%5lld %7.1f us (partition %5.1f) %7.1f GB/s %5.1f%% of "
      "copy  %s\n",
      variant, label, Policy::kThreads, items, Policy::kMinBlocks,
      static_cast<long long>(Policy::kTile), ms * 1e3, partition_ms * 1e3, rate * 1e-9,
      100.0 * rate / copy_rate, bad ? "WRONG" : "ok");
  std::fflush(stdout);
}

template <typename Bits>
float copy_time(Inputs& in, int repeats) {
  const size_t bytes = in.rows * (in.m + in.n) * sizeof(Bits);
  return time_ms([&] { CHECK_CUDA(cudaMemcpyAsync(in.copy_dst, in.out, bytes,
                                                  cudaMemcpyDeviceToDevice, g_stream)); },
                 repeats, 3, g_stream);
}

// Rows items: batches of short rows (2^(log2_total - 1) outputs) of Traits' keys merged by the
// rows kernel with each item count as it is (merge_rows_items' choice printed beside it).
template <typename Traits>
void rows_items(int log2_total, int repeats, const char* name,
                std::initializer_list<int64_t> sides, int64_t only_side) {
  using Bits = typename Traits::Bits;
  const int64_t half = int64_t{1} << (log2_total - 1);
  for (const int64_t side : sides) {
    if (only_side > 0 && side != only_side) continue;
    const int64_t rows = (half / 2) / side;
    Inputs in = make_inputs<Bits>(rows, side, side, false, 4 + side);
    const float copy_ms = copy_time<Bits>(in, repeats);
    char label[64];
    std::snprintf(label, sizeof(label), "%s rows of %lld+%lld (picks %d)", name,
                  static_cast<long long>(side), static_cast<long long>(side),
                  jmp::merge_rows_items(int(sizeof(Bits)), 256, 19, 2 * side));
#define RUN_ROWS(IT)                                                                    \
  run_variant<Traits, jmp::PayloadKind::kNone, Sweep<256, IT, 8>, uint32_t, true>(      \
      label, in, repeats, -1, copy_ms)
    RUN_ROWS(19);
    RUN_ROWS(17);
    RUN_ROWS(15);
    RUN_ROWS(13);
    RUN_ROWS(11);
    RUN_ROWS(9);
    RUN_ROWS(7);
#undef RUN_ROWS
    free_inputs(in);
  }
}

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "rows") == 0) {  // tile_sweep rows [log2_total] [repeats]
    CHECK_CUDA(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking));
    const int log2_total = argc > 2 ? std::atoi(argv[2]) : 27;
    const int repeats = argc > 3 ? std::atoi(argv[3]) : 20;
    const int64_t side = argc > 4 ? std::atoll(argv[4]) : 0;
    rows_items<jmp::S32Key>(log2_total, repeats, "int32", {8, 12, 16, 24, 32, 48, 64, 128, 256},
                            side);
    // (2-byte keys: the same policy; make_inputs' keys stay below 2^16 in rows this short)
    rows_items<jmp::U16Key>(log2_total, repeats, "uint16", {8, 16, 24, 32, 48, 64, 128}, side);
    return 0;
  }
  const int log2_total = argc > 1 ? std::atoi(argv[1]) : 27;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 20;
  const int only = argc > 3 ? std::atoi(argv[3]) : -1;
  g_profile = !(argc > 4 && std::strcmp(argv[4], "time") == 0);
  const int64_t half = int64_t{1} << (log2_total - 1);
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  CHECK_CUDA(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking));
  std::printf("%s, 2^%d outputs (2^%d + 2^%d)\n", prop.name, log2_total, log2_total - 1,
              log2_total - 1);
  using S32 = jmp::S32Key;
  using F32 = jmp::F32Key;
  using S64 = jmp::S64Key;
  using jmp::PayloadKind;
  {
    Inputs in = make_inputs<uint32_t>(1, half, half, false, 1);
    const float copy_ms = copy_time<uint32_t>(in, repeats);
    std::printf("copy of %lld bytes: %.1f us = %.1f GB/s (read + write)\n",
                static_cast<long long>(2 * half * 4), copy_ms * 1e3,
                2.0 * 2 * half * 4 / (copy_ms * 1e-3) * 1e-9);
#define RUN(T, P, TH, IT, MB, LABEL) \
  run_variant<T, PayloadKind::P, Sweep<TH, IT, MB>>(LABEL, in, repeats, only, copy_ms)
    RUN(S32, kNone, 256, 19, 8, "int32 keys");
    RUN(S32, kNone, 256, 17, 8, "int32 keys");
    RUN(S32, kNone, 256, 21, 8, "int32 keys");
    // larger tiles: fewer partition boundaries
    RUN(S32, kNone, 256, 23, 6, "int32 keys");
    RUN(S32, kNone, 256, 27, 5, "int32 keys");
    RUN(S32, kNone, 512, 19, 4, "int32 keys");
    RUN(S32, kValue, 256, 15, 6, "int32 keys + int32 values");
    RUN(S32, kValue, 256, 13, 6, "int32 keys + int32 values");
    RUN(S32, kValue, 256, 17, 6, "int32 keys + int32 values");
    free_inputs(in);
  }
  {
    Inputs in = make_inputs<uint32_t>(1, half, half, true, 2);
    const float copy_ms = copy_time<uint32_t>(in, repeats);
    RUN(F32, kNone, 256, 19, 8, "float32 keys");
    RUN(F32, kNone, 256, 15, 8, "float32 keys");
    // larger tiles: fewer partition boundaries
    RUN(F32, kNone, 256, 21, 8, "float32 keys");
    RUN(F32, kNone, 256, 23, 6, "float32 keys");
    RUN(F32, kNone, 256, 25, 6, "float32 keys");
    RUN(F32, kNone, 256, 27, 5, "float32 keys");
    RUN(F32, kNone, 256, 31, 5, "float32 keys");
    RUN(F32, kNone, 384, 19, 5, "float32 keys");
    RUN(F32, kNone, 512, 19, 4, "float32 keys");
    free_inputs(in);
  }
  {
    Inputs in = make_inputs<uint64_t>(1, half, half, false, 3);
    const float copy_ms = copy_time<uint64_t>(in, repeats);
    RUN(S64, kNone, 256, 11, 6, "int64 keys");
    RUN(S64, kNone, 256, 13, 6, "int64 keys");
    RUN(S64, kNone, 256, 9, 8, "int64 keys");
    // 8 + 4 bytes: 256 x 7 capped at 4 blocks (tuning/merge.h) and uncapped (the first design's),
    // against capped and wider shapes
    RUN(S64, kValue, 256, 7, 4, "int64 keys + int32 values");
    RUN(S64, kValue, 256, 7, 1, "int64 keys + int32 values");
    RUN(S64, kValue, 256, 9, 1, "int64 keys + int32 values");
    RUN(S64, kValue, 256, 9, 4, "int64 keys + int32 values");
    RUN(S64, kValue, 256, 11, 4, "int64 keys + int32 values");
    free_inputs(in);
  }
  {
    Inputs in = make_inputs<uint64_t, uint64_t>(1, half, half, false, 5);
    const float copy_ms = copy_time<uint64_t>(in, repeats);
#define RUN64(TH, IT, MB)                                                                \
  run_variant<S64, PayloadKind::kValue, Sweep<TH, IT, MB>, uint64_t>(                    \
      "int64 keys + int64 values", in, repeats, only, copy_ms)
    // 8 + 8 bytes: 256 x 5, capped at 4 blocks (tuning/merge.h) and uncapped (the first design's),
    // against wider and capped shapes
    RUN64(256, 5, 4);
    RUN64(256, 5, 1);
    RUN64(256, 7, 1);
    RUN64(256, 7, 4);
    RUN64(256, 9, 1);
    RUN64(256, 9, 4);
    free_inputs(in);
  }
  // Batches of rows (2^(log2_total - 1) outputs): the rows kernel with the policy's items.
  for (const int64_t side : {int64_t{32}, int64_t{512}, int64_t{2048}}) {
    const int64_t rows = (half / 2) / side;
    Inputs in = make_inputs<uint32_t>(rows, side, side, false, 4 + side);
    const float copy_ms = copy_time<uint32_t>(in, repeats);
    char label[64];
    std::snprintf(label, sizeof(label), "int32 rows of %lld+%lld", static_cast<long long>(side),
                  static_cast<long long>(side));
    RUN(S32, kNone, 256, 19, 8, label);
    RUN(S32, kNone, 256, 17, 8, label);
    RUN(S32, kNone, 256, 15, 8, label);
    RUN(S32, kNone, 256, 21, 8, label);
    RUN(S32, kNone, 512, 17, 4, label);
    free_inputs(in);
  }
  return 0;
}
