// topk_sweep.cu: the CUDA top_k's production launches (ffi/cuda/launch/topk_launch.cuh) on one GPU.
// Every case is first checked against a host reference (every row's (order key, index) pairs,
// the k first by key descending, index ascending: topk.h's result), values and indices, then
// timed: device time of the whole call (CUDA events around it, median of warm repeats), the keys'
// bytes over that time, and the share of one read of the keys at the copy rate measured in the
// same run (a cudaMemcpy D2D reads and writes: one read is half its time). A case runs under
// tuning's strategy ("auto", named) and under the strategies listed with it (forced, as the
// attribute `strategy` forces them: the old ones beside the new, on the same keys). Grid and
// stream strategies also time their filter kernel alone (the one read of the data: the tile
// filter, or the stream filter). Cases: 1-D float32 2^24 / 2^27 at k 10 and 1000 (stream vs
// grid), the exact path forced (equal keys, few distinct keys, clipped normals), rows 16384 x
// 4096 k 32, 1024 x 65536 k 256 (also the stream strategy; bfloat16, float64 and int8 too),
// 131072 x 512 k 8 (registers / vectorized block vs the scalar block), the vectorized block by
// row count, int32 / bfloat16 / float64 / int64 / int8 keys (8-byte keys of a narrow range too),
// smallest first, rows of every length class around the registers strategy's shapes (a warp of
// 4, 8, 16 keys a lane; blocks of 64 to 512 threads) at k up to their limit, ties, and the
// lengths around kTopkGridMinLength. Larger k (k > kTopkFinalMaxK: the candidates' merge sort,
// the library's sort launchers, whose instances this single translation unit does not compile)
// are timed by the bench: python -m perf.bench --family topk.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 --expt-relaxed-constexpr -Iffi/include -Iffi/cuda \
//        perf/sweeps/topk_sweep.cu -o /tmp/topk_sweep
//   /tmp/topk_sweep [repeats=20] [only: run the cases whose label holds this]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "../../ffi/cuda/kernels/topk_regs.cuh"
#include "../../ffi/cuda/launch/topk_launch.cuh"
#include "sweep_timing.cuh"

namespace jmp = jax_mergepath;

namespace jax_mergepath {
// The merge sort of larger k's candidates is the library's (launch/sort_launch.cuh, instantiated
// in instances/sort_*.cu); a harness of one translation unit has none: such cases are refused
// before they run.
template <typename Traits>
cudaError_t sort_for_traits(const SortCall&, int32_t*, int64_t, cudaStream_t) {
  return cudaErrorNotSupported;
}
}  // namespace jax_mergepath

cudaStream_t g_stream = nullptr;
int g_repeats = 20;
const char* g_only = nullptr;
int g_failures = 0;

enum class Pattern { kRandom, kEqual, kFew, kTopTies, kClipped, kNarrow };

const char* pattern_name(Pattern p) {
  switch (p) {
    case Pattern::kRandom: return "random";
    case Pattern::kEqual: return "equal";
    case Pattern::kFew: return "few";
    case Pattern::kClipped: return "clipped";
    case Pattern::kNarrow: return "narrow";
    default: return "top ties";
  }
}

// The largest number of a key class and width: +inf of a float, the largest signed integer, all
// ones unsigned (random keys below it but by chance).
template <typename Bits>
Bits top_bits(jmp::TopkKeyClass key_class, int float_bits) {
  const Bits sign = static_cast<Bits>(Bits(1) << (8 * sizeof(Bits) - 1));
  if (key_class == jmp::TopkKeyClass::kSigned) return static_cast<Bits>(~sign);
  if (key_class != jmp::TopkKeyClass::kFloat) return static_cast<Bits>(~Bits(0));
  const int mantissa = float_bits == 64 ? 52 : (float_bits == 32 ? 23 : 7);
  return static_cast<Bits>((~sign) >> mantissa << mantissa);  // the exponent all ones
}

// Keys of `Bits` whose class is `key_class`: random bits of numbers (floats: finite, from a
// normal distribution), all one key, four distinct keys, or random with one key in 768 the
// largest number (ties at the top: at 2^22 keys more than a block's buffer, fewer than a grid
// row's capacity at k = 1000, so the candidates' block takes its exact path), or normals clipped
// at their top 1 in 128 (floats; the shape of jax.random.normal in bfloat16, whose top value
// repeats ~131 K times in 2^24 keys: past a grid row's capacity, the grid's exact path), or
// numbers of a narrow range (integers below 2^20, floats 1e9 + normals x 100: 8-byte keys whose
// high words tie, the registers strategy's second level).
template <typename Bits>
std::vector<Bits> make_keys(int64_t count, jmp::TopkKeyClass key_class, int float_bits,
                            Pattern pattern, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> normal;
  std::vector<Bits> keys(static_cast<size_t>(count));
  auto number = [&]() -> Bits {
    if (key_class != jmp::TopkKeyClass::kFloat) {
      return static_cast<Bits>(pattern == Pattern::kNarrow ? gen() % (1u << 20) : gen());
    }
    double x = normal(gen) * 100.0 + (pattern == Pattern::kNarrow ? 1e9 : 0.0);
    if (pattern == Pattern::kClipped) x = std::min(x, 241.8);  // (2.418: the normal's 1 - 1/128)
    if (float_bits == 32) {
      const float f = static_cast<float>(x);
      uint32_t b;
      std::memcpy(&b, &f, 4);
      return static_cast<Bits>(b);
    }
    if (float_bits == 64) {
      uint64_t b;
      std::memcpy(&b, &x, 8);
      return static_cast<Bits>(b);
    }
    const float f = static_cast<float>(x);  // bfloat16: the top half of the float32
    uint32_t b;
    std::memcpy(&b, &f, 4);
    return static_cast<Bits>(b >> 16);
  };
  const Bits pool[4] = {number(), number(), number(), number()};
  const Bits top = top_bits<Bits>(key_class, float_bits);
  for (auto& k : keys) {
    if (pattern == Pattern::kTopTies) {
      k = gen() % 768 == 0 ? top : number();
      continue;
    }
    k = pattern == Pattern::kRandom || pattern == Pattern::kClipped ||
                pattern == Pattern::kNarrow
            ? number()
        : pattern == Pattern::kEqual ? pool[0]
                                     : pool[gen() % 4];
  }
  return keys;
}

// The host reference: every row's k first (order key descending, index ascending).
template <typename Bits>
void reference(const std::vector<Bits>& keys, int64_t rows, int64_t n, int64_t k,
               jmp::TopkOrder<Bits> order, std::vector<Bits>& values,
               std::vector<int32_t>& indices) {
  values.assign(static_cast<size_t>(rows * k), Bits(0));
  indices.assign(static_cast<size_t>(rows * k), 0);
  std::vector<std::pair<Bits, int32_t>> row(static_cast<size_t>(n));
  auto before = [](const std::pair<Bits, int32_t>& a, const std::pair<Bits, int32_t>& b) {
    return jmp::topk_before(a.first, a.second, b.first, b.second);
  };
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < n; ++i) {
      row[static_cast<size_t>(i)] = {order.key(keys[static_cast<size_t>(r * n + i)]),
                                     static_cast<int32_t>(i)};
    }
    std::nth_element(row.begin(), row.begin() + (k - 1), row.end(), before);
    std::sort(row.begin(), row.begin() + k, before);
    for (int64_t j = 0; j < k; ++j) {
      const int32_t at = row[static_cast<size_t>(j)].second;
      indices[static_cast<size_t>(r * k + j)] = at;
      values[static_cast<size_t>(r * k + j)] = keys[static_cast<size_t>(r * n + at)];
    }
  }
}

using jmp::TopkStrategy;

const char* strategy_name(TopkStrategy s) {
  switch (s) {
    case TopkStrategy::kBlock: return "block";
    case TopkStrategy::kGridSmall: return "grid+block";
    case TopkStrategy::kGridSort: return "grid+sort";
    case TopkStrategy::kRegs: return "regs";
    case TopkStrategy::kBlockVec: return "block_vec";
    case TopkStrategy::kStreamSmall: return "stream+block";
    case TopkStrategy::kStreamSort: return "stream+sort";
    default: return "none";
  }
}

// A case's keys on the device and its reference, run under tuning's strategy (-1) and each
// strategy of `forced` that can run it: checked, timed, one line each.
template <typename Bits>
void run_case(const char* type, jmp::TopkKeyClass key_class, int float_bits, int64_t rows,
              int64_t n, int64_t k, bool largest, Pattern pattern,
              std::vector<TopkStrategy> forced = {}) {
  char label[160];
  std::snprintf(label, sizeof(label), "%-8s %7lld x %-10lld k=%-6lld %s %-7s", type,
                static_cast<long long>(rows), static_cast<long long>(n),
                static_cast<long long>(k), largest ? "largest " : "smallest",
                pattern_name(pattern));
  if (g_only && !std::strstr(label, g_only)) return;
  std::vector<int64_t> runs = {-1};
  for (TopkStrategy f : forced) {
    const TopkStrategy s = jmp::topk_resolve_strategy(static_cast<int64_t>(f), k, n);
    if (s != TopkStrategy::kInvalid && s != jmp::topk_strategy(k, n)) {
      runs.push_back(static_cast<int64_t>(f));
    }
  }
  const int64_t total = rows * n;
  const std::vector<Bits> keys = make_keys<Bits>(total, key_class, float_bits, pattern,
                                                 static_cast<uint64_t>(total + k));
  std::vector<Bits> want_values;
  std::vector<int32_t> want_indices;
  reference(keys, rows, n, k, jmp::topk_order<Bits>(key_class, largest), want_values,
            want_indices);
  void *d_keys = nullptr, *d_values = nullptr, *d_copy = nullptr;
  int32_t* d_indices = nullptr;
  const size_t key_bytes = static_cast<size_t>(total) * sizeof(Bits);
  CHECK_CUDA(cudaMalloc(&d_keys, key_bytes));
  CHECK_CUDA(cudaMalloc(&d_copy, key_bytes));
  CHECK_CUDA(cudaMalloc(&d_values, static_cast<size_t>(rows * k) * sizeof(Bits)));
  CHECK_CUDA(cudaMalloc(&d_indices, static_cast<size_t>(rows * k) * 4));
  CHECK_CUDA(cudaMemcpy(d_keys, keys.data(), key_bytes, cudaMemcpyHostToDevice));
  const float copy_ms = time_ms(
      [&] { CHECK_CUDA(cudaMemcpyAsync(d_copy, d_keys, key_bytes, cudaMemcpyDeviceToDevice,
                                       g_stream)); },
      g_repeats, 3, g_stream);
  const double one_read_ms = copy_ms / 2.0;
  for (int64_t forced_strategy : runs) {
    const jmp::TopkStrategy strategy = jmp::topk_resolve_strategy(forced_strategy, k, n);
    char name[40];
    std::snprintf(name, sizeof(name), "%s%s", forced_strategy < 0 ? "auto " : "",
                  strategy_name(strategy));
    if (strategy == TopkStrategy::kGridSort || strategy == TopkStrategy::kStreamSort) {
      std::printf("%s %-17s (the candidates' merge sort: timed by the bench)\n", label, name);
      continue;
    }
    jmp::TopkCall call{};
    call.key_bytes = int(sizeof(Bits));
    call.key_class = key_class;
    call.largest = largest;
    call.rows = rows;
    call.length = n;
    call.k = k;
    call.strategy = forced_strategy;
    call.sms = device_sms();
    call.keys = d_keys;
    call.out_values = d_values;
    call.out_indices = d_indices;
    const jmp::TopkLayout layout = jmp::topk_layout(call.key_bytes, k, rows, n, forced_strategy);
    void* d_ws = nullptr;
    CHECK_CUDA(cudaMalloc(&d_ws, static_cast<size_t>(std::max<int64_t>(layout.bytes, 8))));
    auto go = [&] { CHECK_CUDA(jmp::topk::topk_launch(call, d_ws, layout.bytes, g_stream)); };
    CHECK_CUDA(cudaMemsetAsync(d_values, 0xff, static_cast<size_t>(rows * k) * sizeof(Bits),
                               g_stream));
    CHECK_CUDA(cudaMemsetAsync(d_indices, 0xff, static_cast<size_t>(rows * k) * 4, g_stream));
    go();
    CHECK_CUDA(cudaStreamSynchronize(g_stream));
    std::vector<Bits> got_values(static_cast<size_t>(rows * k));
    std::vector<int32_t> got_indices(static_cast<size_t>(rows * k));
    CHECK_CUDA(cudaMemcpy(got_values.data(), d_values, got_values.size() * sizeof(Bits),
                          cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(got_indices.data(), d_indices, got_indices.size() * 4,
                          cudaMemcpyDeviceToHost));
    int64_t bad = 0;
    for (size_t j = 0; j < got_indices.size(); ++j) {
      bad += got_indices[j] != want_indices[j] || got_values[j] != want_values[j];
    }
    g_failures += bad != 0;
    const float ms = time_ms(go, g_repeats, 3, g_stream);
    char extra[96] = "";
    const bool stream = strategy == TopkStrategy::kStreamSmall;
    if (strategy == TopkStrategy::kGridSmall || stream) {
      const jmp::topk::GridRows<Bits> g =
          jmp::topk::grid_rows<Bits>(static_cast<unsigned char*>(d_ws), layout);
      const jmp::TopkOrder<Bits> order = jmp::topk_order<Bits>(key_class, largest);
      const jmp::topk::StreamGrid<Bits> sg = jmp::topk::stream_grid<Bits>(call);
      const float filter_ms = time_ms(
          [&] {
            if (stream) {
              CHECK_CUDA(jmp::launch_kernel(jmp::topk::topk_stream_filter_kernel<Bits>,
                                            sg.blocks, jmp::kTopkStreamThreads, g_stream, call,
                                            order, g, sg.chunks_per_row, sg.aligned));
            } else {
              CHECK_CUDA(jmp::launch_kernel(jmp::topk::topk_filter_kernel<Bits>,
                                            static_cast<unsigned>(rows * layout.tiles),
                                            jmp::kTopkFilterThreads, g_stream, call, order, g));
            }
          },
          g_repeats, 3, g_stream);
      std::snprintf(extra, sizeof(extra), "  filter %8.1f us (%5.1f%% of a read)",
                    filter_ms * 1e3, 100.0 * one_read_ms / filter_ms);
    }
    std::printf("%s %-17s %9.1f us %7.1f GB/s %5.1f%% of a read%s  %s\n", label, name, ms * 1e3,
                key_bytes / (ms * 1e-3) * 1e-9, 100.0 * one_read_ms / ms, extra,
                bad ? "WRONG" : "ok");
    std::fflush(stdout);
    CHECK_CUDA(cudaFree(d_ws));
  }
  for (void* p : {d_keys, d_copy, d_values, static_cast<void*>(d_indices)}) {
    CHECK_CUDA(cudaFree(p));
  }
}

int main(int argc, char** argv) {
  g_repeats = argc > 1 ? std::atoi(argv[1]) : 20;
  g_only = argc > 2 ? argv[2] : nullptr;
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  CHECK_CUDA(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking));
  std::printf("%s, %d SMs; top_k: the grid from rows of %lld keys, a block's buffer %d pairs, "
              "rows in registers up to %lld keys\n",
              prop.name, device_sms(), static_cast<long long>(jmp::kTopkGridMinLength),
              jmp::kTopkBlockMaxCap, static_cast<long long>(jmp::kTopkRegsMaxLength));
  using jmp::TopkKeyClass;
  const auto F = TopkKeyClass::kFloat;
  const auto S = TopkKeyClass::kSigned;
  const auto R = Pattern::kRandom;
  const auto kGrid = TopkStrategy::kGridSmall;
  const auto kStream = TopkStrategy::kStreamSmall;
  const auto kBlock = TopkStrategy::kBlock;
  const auto kBlockVec = TopkStrategy::kBlockVec;
  const auto kRegs = TopkStrategy::kRegs;
  const std::vector<TopkStrategy> grids = {kGrid, kStream};
  const std::vector<TopkStrategy> blocks = {kBlock, kBlockVec, kRegs};
  // 1-D float32: the stream strategy vs the grid (k 10, 1000), the exact path forced
  for (int64_t n : {int64_t{1} << 24, int64_t{1} << 27}) {
    for (int64_t k : {10, 1000}) run_case<uint32_t>("float32", F, 32, 1, n, k, true, R, grids);
  }
  run_case<uint32_t>("float32", F, 32, 1, int64_t{1} << 24, 1000, false, R, grids);
  run_case<uint32_t>("float32", F, 32, 1, int64_t{1} << 24, 10, true, Pattern::kEqual, grids);
  run_case<uint32_t>("float32", F, 32, 1, int64_t{1} << 24, 1000, true, Pattern::kFew, grids);
  // ties at the top past a block's buffer: the candidates' exact path (ties by index, not by
  // the order they were appended in)
  run_case<uint32_t>("float32", F, 32, 1, int64_t{1} << 22, 1000, true, Pattern::kTopTies, grids);
  run_case<uint32_t>("int32", S, 0, 1, int64_t{1} << 22, 1000, true, Pattern::kTopTies, grids);
  run_case<uint16_t>("bfloat16", F, 16, 1, int64_t{1} << 22, 1000, true, Pattern::kTopTies, grids);
  // other keys, a key's time against float32's
  run_case<uint32_t>("int32", S, 0, 1, int64_t{1} << 24, 1000, true, R, grids);
  run_case<uint16_t>("bfloat16", F, 16, 1, int64_t{1} << 24, 1000, true, R, grids);
  run_case<uint16_t>("bfloat16", F, 16, 1, int64_t{1} << 24, 1000, true, Pattern::kClipped, grids);
  run_case<uint32_t>("float32", F, 32, 1, int64_t{1} << 24, 1000, true, Pattern::kClipped, grids);
  run_case<uint64_t>("float64", F, 64, 1, int64_t{1} << 24, 1000, true, R, grids);
  run_case<uint8_t>("int8", S, 0, 1, int64_t{1} << 24, 100, true, R, grids);
  // the issue's rows: registers / the vectorized block vs the scalar block
  run_case<uint32_t>("float32", F, 32, 16384, 4096, 32, true, R, blocks);
  run_case<uint32_t>("float32", F, 32, 1024, 65536, 256, true, R,
                     {kBlock, kBlockVec, kStream});
  // the vectorized block's other key widths on long rows
  run_case<uint16_t>("bfloat16", F, 16, 1024, 65536, 256, true, R, {kBlock});
  run_case<uint64_t>("float64", F, 64, 1024, 65536, 256, true, R, {kBlock});
  run_case<uint8_t>("int8", S, 0, 1024, 65536, 256, true, R, {kBlock});
  // the vectorized block by row count (its blocks an SM against the rows: the last wave's share)
  for (int64_t rows : {int64_t{132}, int64_t{396}, int64_t{2048}, int64_t{4096}}) {
    run_case<uint32_t>("float32", F, 32, rows, 65536, 256, true, R, {});
  }
  for (int64_t rows : {int64_t{1024}, int64_t{4096}, int64_t{8192}}) {
    run_case<uint32_t>("float32", F, 32, rows, 16384, 64, true, R, {});
  }
  run_case<uint32_t>("float32", F, 32, 131072, 512, 8, true, R, blocks);
  run_case<uint32_t>("float32", F, 32, 16384, 4096, 32, true, Pattern::kEqual, blocks);
  run_case<uint32_t>("float32", F, 32, 16384, 4096, 32, true, Pattern::kFew, blocks);
  run_case<uint32_t>("int32", S, 0, 16384, 4096, 32, true, R, blocks);
  run_case<uint16_t>("bfloat16", F, 16, 16384, 4096, 32, true, R, blocks);
  run_case<uint64_t>("float64", F, 64, 16384, 4096, 32, true, R, blocks);
  run_case<uint64_t>("float64", F, 64, 16384, 4096, 32, true, Pattern::kNarrow, blocks);
  run_case<uint64_t>("int64", S, 0, 16384, 4096, 32, true, R, blocks);
  run_case<uint64_t>("int64", S, 0, 16384, 4096, 32, true, Pattern::kNarrow, blocks);
  run_case<uint32_t>("float32", F, 32, 131072, 512, 8, false, R, blocks);
  run_case<uint64_t>("float64", F, 64, 131072, 512, 8, true, R, blocks);
  run_case<uint64_t>("int64", S, 0, 131072, 512, 8, true, Pattern::kNarrow, blocks);
  run_case<uint16_t>("bfloat16", F, 16, 131072, 512, 8, true, R, blocks);
  // 2-byte keys in register groups of 64 and 128 threads, against float32's
  for (int64_t n : {int64_t{1024}, int64_t{2048}}) {
    run_case<uint16_t>("bfloat16", F, 16, (int64_t{1} << 26) / n, n, 32, true, R, blocks);
    run_case<uint32_t>("float32", F, 32, (int64_t{1} << 26) / n, n, 32, true, R, blocks);
  }
  run_case<uint8_t>("int8", S, 0, 131072, 512, 8, true, R, blocks);
  // every length class of the registers strategy and its neighbours, k up to its limit, ties
  for (int64_t n : {int64_t{33}, int64_t{100}, int64_t{128}, int64_t{129}, int64_t{256},
                    int64_t{500}, int64_t{512}, int64_t{513}, int64_t{1000}, int64_t{1024},
                    int64_t{2048}, int64_t{4000}, int64_t{4096}, int64_t{8192}, int64_t{8193}}) {
    for (int64_t k : {int64_t{1}, int64_t{8}, int64_t{16}, int64_t{17}, int64_t{32},
                      int64_t{100}, int64_t{256}}) {
      if (k <= n) run_case<uint32_t>("float32", F, 32, 4096, n, k, true, R, blocks);
    }
    run_case<uint32_t>("float32", F, 32, 512, n, std::min<int64_t>(n, 16), true, Pattern::kFew,
                       blocks);
    run_case<uint64_t>("float64", F, 64, 512, n, std::min<int64_t>(n, 8), false, R, blocks);
    run_case<uint8_t>("int8", S, 0, 512, n, std::min<int64_t>(n, 8), true, R, blocks);
  }
  // around the grid's shortest row (tuning.h kTopkGridMinLength): one row, many rows
  for (int64_t n : {int64_t{1} << 15, int64_t{1} << 16, int64_t{1} << 17, int64_t{1} << 18}) {
    const std::vector<TopkStrategy> all = {kBlock, kBlockVec, kGrid, kStream};
    run_case<uint32_t>("float32", F, 32, 1, n, 10, true, R, all);
    run_case<uint32_t>("float32", F, 32, 64, n, 10, true, R, all);
  }
  // larger k: the grid's candidates sorted (the bench)
  run_case<uint32_t>("float32", F, 32, 1, int64_t{1} << 24, 100000, true, R);
  std::printf("%d case(s) WRONG\n", g_failures);
  return g_failures ? 1 : 0;
}
