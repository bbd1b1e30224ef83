// sort_sweep.cu: times the production block sort (block_sort.cuh) for several tile shapes
// (threads x items) on one GPU, to choose tuning/sort.h's SortPolicy: int32 keys alone as rows of
// 64, 512, 2048 and 4096 (one block sorts whole rows: the whole row sort when the tile holds a
// row), and as the tiles of one long row (the first step of a 1-D sort), plus float32 keys alone,
// 4-byte keys with int32 positions (argsort's block sort) and 8-byte keys alone and with
// positions. Every variant's output is checked against std::stable_sort of each row (tile)
// before it is timed. Prints device time (CUDA events, median of warm repeats) and the % of a
// cudaMemcpy D2D of the same bytes measured in the same run.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 --expt-relaxed-constexpr -Iffi/include -Iffi/cuda \
//        perf/sweeps/sort_sweep.cu -o /tmp/sort_sweep
//   /tmp/sort_sweep [log2_total=26] [repeats=10] [only: "d,threads,items", e.g. 512,256,15 (d -1:
//   a long row), for ncu; "all" for every shape] [long: only the long-row shapes of twice the tile;
//   pairs: the wide shapes of 4-byte keys with positions; int64: those of 8-byte keys]
//   [nan: a NaN and a -0.0 in every 4096 keys, so float tiles take the NaN-last order, not
//   PlainHeldKey's]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <type_traits>
#include <vector>

#include "../../ffi/cuda/kernels/block_sort.cuh"
#include "sweep_timing.cuh"

namespace jmp = jax_mergepath;

template <int kThreadsT, int kItemsT, int kMinBlocksT = 0>
struct Shape {
  static constexpr int kThreads = kThreadsT;
  static constexpr int kItems = kItemsT;
  static constexpr int kMinBlocks = kMinBlocksT;
  static constexpr int64_t kTile = int64_t{kThreadsT} * kItemsT;
};

struct Buffers {
  int64_t total = 0;
  std::vector<uint32_t> host;  // random int32 / float32 bits
  std::vector<uint64_t> host64;  // random int64 bits (two of host's words)
  void *keys = nullptr, *out = nullptr, *pos = nullptr, *copy = nullptr;
  uint8_t* flags = nullptr;
};

float g_copy_ms = 0;
int64_t g_only[3] = {0, 0, 0};  // d, threads, items of the one case to run (d == 0: all)

// One shape on rows of d keys (d <= 0: one long row cut into tiles); Traits: S32Key or F32Key,
// kIndex: with argsort's int32 positions.
template <typename Traits, jmp::PayloadKind kPayload, typename Policy>
void run(Buffers& b, int64_t d_arg, int repeats) {
  using Bits = typename Traits::Bits;
  constexpr bool kLong = sizeof(Bits) == 8;  // int64 or float64 keys (S64Key, F64Key)
  constexpr bool kFloat =
      std::is_same_v<Traits, jmp::F32Key> || std::is_same_v<Traits, jmp::F64Key>;
  const Bits* host = kLong ? reinterpret_cast<const Bits*>(b.host64.data())
                           : reinterpret_cast<const Bits*>(b.host.data());
  constexpr bool kIndex = kPayload == jmp::PayloadKind::kIndex;
  const bool long_row = d_arg <= 0;
  const int64_t d = long_row ? b.total : d_arg;
  if (!long_row && d > Policy::kTile) return;  // rows of several tiles need passes
  if (g_only[0] != 0 && (g_only[0] != d_arg || g_only[1] != Policy::kThreads ||
                         g_only[2] != Policy::kItems)) {
    return;
  }
  const int64_t rows = b.total / d;
  jmp::SortCall call{};
  call.key_type = kLong ? (kFloat ? jmp::KeyType::kF64 : jmp::KeyType::kS64)
                        : (kFloat ? jmp::KeyType::kF32 : jmp::KeyType::kS32);
  call.payload = kPayload;
  call.value_bytes = 4;
  call.rows = rows;
  call.length = d;
  call.keys = b.keys;
  call.out_keys = b.out;
  call.out_payload = b.pos;
  call.row_sorted = b.flags;
  const int64_t span = jmp::sort_segment(d, Policy::kItems, Policy::kTile);
  const int64_t tiles_per_row = jmp::ceil_div(d, Policy::kTile);
  const int64_t blocks = span < Policy::kTile ? jmp::ceil_div(rows, Policy::kTile / span)
                                              : rows * tiles_per_row;
  CHECK_CUDA(cudaMemcpy(b.keys, host, b.total * sizeof(Bits), cudaMemcpyHostToDevice));
  auto go = [&] {
    CHECK_CUDA((jmp::launch_block_sort<Traits, kPayload, int32_t, Policy>(
        static_cast<unsigned>(blocks), nullptr, call, static_cast<Bits*>(b.out),
        static_cast<int32_t*>(b.pos), Bits(0), static_cast<int>(span), tiles_per_row,
        long_row)));
  };
  CHECK_CUDA(cudaMemset(b.out, 0, b.total * sizeof(Bits)));
  go();
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<Bits> got(b.total);
  std::vector<int32_t> got_pos(b.total);
  CHECK_CUDA(cudaMemcpy(got.data(), b.out, b.total * sizeof(Bits), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(got_pos.data(), b.pos, b.total * 4, cudaMemcpyDeviceToHost));
  // Check the first and last 64 units (rows or tiles) against a stable sort of their keys.
  const int64_t unit = long_row ? Policy::kTile : d;
  const int64_t units = jmp::ceil_div(b.total, unit);
  int64_t bad = 0;
  for (int64_t u = 0; u < units; ++u) {
    if (u >= 64 && u < units - 64) continue;
    const int64_t begin = u * unit, len = std::min(unit, b.total - begin);
    std::vector<int32_t> order(len);
    std::iota(order.begin(), order.end(), 0);
    auto value = [&](int32_t i) -> double {
      if constexpr (kLong && kFloat) {
        double f;
        std::memcpy(&f, &host[begin + i], 8);
        return f;
      }
      const uint32_t bits = static_cast<uint32_t>(host[begin + i]);
      if (kFloat) {
        float f;
        std::memcpy(&f, &bits, 4);
        return f;
      }
      return static_cast<double>(static_cast<int32_t>(bits));
    };
    std::stable_sort(order.begin(), order.end(), [&](int32_t x, int32_t y) {
      if constexpr (kLong && !kFloat) {
        return static_cast<int64_t>(host[begin + x]) < static_cast<int64_t>(host[begin + y]);
      }
      const double vx = value(x), vy = value(y);
      return vx < vy || (std::isnan(vy) && !std::isnan(vx));  // NaN last
    });
    for (int64_t k = 0; k < len; ++k) {
      bad += got[begin + k] != host[begin + order[k]];
      if (kIndex) {
        bad += got_pos[begin + k] != static_cast<int32_t>((long_row ? begin : 0) + order[k]);
      }
    }
  }
  const float ms = time_ms(go, repeats);
  const double bytes = 2.0 * b.total * (sizeof(Bits) + (kIndex ? 4 : 0));
  const double copy_bytes = 2.0 * b.total * 4;
  std::printf("%-14s rows of %-9lld T=%4d I=%2d min %d tile=%5lld %8.1f us  %6.1f%% of copy  %s\n",
              kLong ? (kIndex ? (kFloat ? "f64+index" : "int64+index") : (kFloat ? "f64" : "int64"))
                    : kIndex ? (kFloat ? "f32+index" : "int32+index") : (kFloat ? "f32" : "int32"),
              static_cast<long long>(long_row ? -1 : d), Policy::kThreads, Policy::kItems,
              Policy::kMinBlocks, static_cast<long long>(Policy::kTile), ms * 1e3,
              100.0 * (bytes / ms) / (copy_bytes / g_copy_ms), bad ? "WRONG" : "ok");
  std::fflush(stdout);
}

template <typename Traits, jmp::PayloadKind kPayload, typename... Policies>
void sweep(Buffers& b, int64_t d, int repeats) {
  (run<Traits, kPayload, Policies>(b, d, repeats), ...);
}

int main(int argc, char** argv) {
  const int log2_total = argc > 1 ? std::atoi(argv[1]) : 26;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 10;
  if (argc > 3) {
    std::sscanf(argv[3], "%lld,%lld,%lld", reinterpret_cast<long long*>(&g_only[0]),
                reinterpret_cast<long long*>(&g_only[1]), reinterpret_cast<long long*>(&g_only[2]));
  }
  Buffers b;
  b.total = int64_t{1} << log2_total;
  b.host.resize(b.total);
  std::mt19937 gen(7);
  for (auto& x : b.host) x = gen() & ~(1u << 30);  // finite as float32 too
  if (argc > 5 && std::strcmp(argv[5], "nan") == 0) {
    // A NaN and a -0.0 in every 4096 keys: every float tile takes the NaN-last order.
    for (int64_t i = 0; i + 4096 <= b.total; i += 4096) {
      b.host[i + 1000] = 0x7fc00000u;
      b.host[i + 3000] = 0x80000000u;
    }
  }
  b.host64.resize(b.total);
  for (int64_t i = 0; i < b.total; ++i) {
    b.host64[i] = (uint64_t{b.host[i]} << 32) ^ b.host[(i * 7 + 1) % b.total];
  }
  CHECK_CUDA(cudaMalloc(&b.keys, b.total * 8));
  CHECK_CUDA(cudaMalloc(&b.out, b.total * 8));
  CHECK_CUDA(cudaMalloc(&b.pos, b.total * 4));
  CHECK_CUDA(cudaMalloc(&b.copy, b.total * 4));
  CHECK_CUDA(cudaMalloc(&b.flags, 1 << 20));
  CHECK_CUDA(cudaMemset(b.flags, 0, 1 << 20));
  CHECK_CUDA(cudaMemcpy(b.keys, b.host.data(), b.total * 4, cudaMemcpyHostToDevice));
  g_copy_ms = time_ms(
      [&] { CHECK_CUDA(cudaMemcpy(b.copy, b.keys, b.total * 4, cudaMemcpyDeviceToDevice)); },
      repeats);
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s, 2^%d keys, copy %.1f us (%.2f TB/s)\n", prop.name, log2_total, g_copy_ms * 1e3,
              2.0 * b.total * 4 / (g_copy_ms * 1e-3) * 1e-12);
  using S32 = jmp::S32Key;
  using S64 = jmp::S64Key;
  using F64 = jmp::F64Key;
  using F32 = jmp::F32Key;
  constexpr auto kNone = jmp::PayloadKind::kNone;
  constexpr auto kIndex = jmp::PayloadKind::kIndex;
  if (argc > 4 && std::strcmp(argv[4], "int64") == 0) {
    // Wide tiles for 8-byte keys, alone and with positions (dynamic shared memory past 48 KB): a
    // tile of 8192 keys or more leaves a quad pass fewer at 2^27.
    sweep<S64, kNone, Shape<256, 11>, Shape<256, 23>, Shape<256, 23, 3>, Shape<256, 33>,
          Shape<256, 33, 2>, Shape<512, 17>, Shape<512, 17, 1>>(b, -1, repeats);
    sweep<S64, kIndex, Shape<256, 9>, Shape<256, 33>, Shape<256, 33, 2>, Shape<512, 17>,
          Shape<512, 17, 2>>(b, -1, repeats);
    sweep<F64, kNone, Shape<256, 11>, Shape<256, 23, 3>, Shape<256, 33, 2>>(b, -1, repeats);
    sweep<F64, kIndex, Shape<256, 9>, Shape<512, 17, 2>>(b, -1, repeats);
    // Tiles of 16384 keys or more with positions (one block an SM): a 2^24 argsort of 8-byte
    // keys is then 10 merge levels (five quad passes) instead of 11 (a two-way pass first).
    sweep<S64, kIndex, Shape<1024, 17, 1>, Shape<512, 33, 1>>(b, -1, repeats);
    sweep<F64, kIndex, Shape<1024, 17, 1>>(b, -1, repeats);
    return 0;
  }
  if (argc > 4 && std::strcmp(argv[4], "pairs") == 0) {
    // Wide tiles for 4-byte keys with 4-byte positions (argsort, sort_by_key): with and without
    // a register cap of 3 blocks an SM.
    // (256 x 23 was the widest whose 8-byte pairs fit 48 KB of static shared memory; the block
    // sort's shared memory is dynamic since, see the "int64" mode.)
    sweep<F32, kIndex, Shape<256, 11>, Shape<256, 19>, Shape<256, 21>, Shape<256, 21, 3>,
          Shape<256, 23>, Shape<256, 23, 3>>(b, -1, repeats);
    sweep<S32, kIndex, Shape<256, 11>, Shape<256, 19>, Shape<256, 21>, Shape<256, 21, 3>,
          Shape<256, 23>, Shape<256, 23, 3>>(b, -1, repeats);
    return 0;
  }
  if (argc > 4 && std::strcmp(argv[4], "long") == 0) {
    // Tiles of twice the keys or more for the long rows of large sorts (tuning/sort.h
    // wide_sort_shape: a pass fewer, e.g. the two-way pass before the quads of odd levels).
    sweep<S32, kNone, Shape<256, 17>, Shape<256, 33>, Shape<256, 35>, Shape<256, 37>,
          Shape<256, 39>, Shape<512, 17>, Shape<256, 33, 3>, Shape<256, 35, 3>,
          Shape<256, 37, 3>, Shape<256, 39, 3>>(b, -1, repeats);
    sweep<F32, kNone, Shape<256, 17>, Shape<256, 33>, Shape<256, 35>, Shape<256, 37>,
          Shape<256, 39>, Shape<512, 17>, Shape<256, 33, 3>, Shape<256, 35, 3>,
          Shape<256, 37, 3>, Shape<256, 39, 3>>(b, -1, repeats);
    sweep<F32, kIndex, Shape<256, 11>, Shape<256, 21>, Shape<256, 23>, Shape<512, 11>>(b, -1,
                                                                                      repeats);
    sweep<S32, kIndex, Shape<256, 11>, Shape<256, 21>, Shape<256, 23>>(b, -1, repeats);
    return 0;
  }
  for (int64_t d : {int64_t{64}, int64_t{512}, int64_t{2048}, int64_t{4096}, int64_t{-1}}) {
    sweep<S32, kNone, Shape<256, 15>, Shape<128, 15>, Shape<256, 7>, Shape<256, 11>,
          Shape<256, 17>, Shape<256, 19>, Shape<256, 23>, Shape<512, 9>, Shape<512, 11>,
          Shape<512, 15>>(b, d, repeats);
  }
  for (int64_t d : {int64_t{512}, int64_t{-1}}) {
    sweep<F32, kNone, Shape<256, 15>, Shape<256, 17>, Shape<256, 19>>(b, d, repeats);
  }
  for (int64_t d : {int64_t{-1}}) {
    sweep<F32, kIndex, Shape<256, 11>, Shape<256, 7>, Shape<256, 9>, Shape<256, 13>,
          Shape<512, 11>>(b, d, repeats);
  }
  return 0;
}
