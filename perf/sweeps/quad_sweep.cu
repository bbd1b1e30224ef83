// quad_sweep.cu: times the sort's quad pass (quad_merge.cuh: runs of width w merged four at a
// time) against the two two-way passes it replaces (launch_merge of the run pairs of width w,
// then of 2 w), on one GPU, for several quad shapes (threads x items, min blocks), to choose
// tuning/sort.h's quad_shape. Input: 2^log2 keys in sorted runs of width w (int32 keys alone,
// float32 keys with int32 values: argsort's passes, int64 keys alone, int64 and float64 keys with
// int32 values). Every output is checked against the host's stable sort of each group of four runs
// before it is timed; WRONG marks a mismatch.
// Prints device time (CUDA events, median of warm repeats), the quad's partition launches alone,
// and the % of a cudaMemcpy D2D of the keys (and values) measured in the same run.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 --expt-relaxed-constexpr -Iffi/include -Iffi/cuda \
//        perf/sweeps/quad_sweep.cu -o /tmp/quad_sweep
//   /tmp/quad_sweep [log2_total=27] [width=15: a log2 below 64] [repeats=10]
//                   [mode=all: int32 | pairs (4-byte keys + int32 positions) | float32 | int64 |
//                    wide (8-byte keys + int32 positions) | eight (eight-way passes against a
//                    quad pass and a two-way pass; not part of all)]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../../ffi/cuda/kernels/eight_way_merge.cuh"
#include "../../ffi/cuda/kernels/quad_merge.cuh"
#include "../../ffi/cuda/launch/merge_launch.cuh"
#include "sweep_timing.cuh"

namespace jmp = jax_mergepath;

// A quad shape: (threads - 1) x items outputs a tile (tuning/sort.h quad_shape).
template <int kThreadsT, int kItemsT, int kMinBlocksT>
using QuadShapeT =
    jmp::TilePolicy<kThreadsT, kItemsT, kMinBlocksT, int64_t{kThreadsT - 1} * kItemsT>;

cudaStream_t g_stream = nullptr;

template <typename Bits, typename Value>
struct Data {
  int64_t total = 0, width = 0;
  std::vector<Bits> keys;
  std::vector<Value> vals;
  std::vector<Bits> want_keys;
  std::vector<Value> want_vals;
  Bits *d_keys = nullptr, *d_out = nullptr, *d_mid = nullptr;
  Value *d_vals = nullptr, *d_out_vals = nullptr, *d_mid_vals = nullptr;
  int32_t* d_work = nullptr;
  float copy_ms = 0;
};

// Sorted runs of `width` random keys (few distinct values for float32: ties across runs), their
// values the positions; the wanted output: each group of `group` runs stably sorted.
template <typename Bits, typename Value, bool kFloat>
void make_data(Data<Bits, Value>& d, int64_t total, int64_t width, int64_t group = 4) {
  d.total = total;
  d.width = width;
  d.keys.resize(total);
  d.vals.resize(total);
  std::mt19937_64 rng(7);
  for (int64_t i = 0; i < total; ++i) {
    if constexpr (kFloat) {
      using Float = std::conditional_t<sizeof(Bits) == 4, float, double>;
      const Float f = static_cast<Float>(static_cast<int>(rng() % 100000) - 50000) * Float(0.5);
      std::memcpy(&d.keys[i], &f, sizeof(f));
    } else {
      d.keys[i] = static_cast<Bits>(rng());
    }
    d.vals[i] = static_cast<Value>(i);
  }
  auto less = [](Bits x, Bits y) {
    if constexpr (kFloat) {
      using Float = std::conditional_t<sizeof(Bits) == 4, float, double>;
      Float a, b;
      std::memcpy(&a, &x, sizeof(Bits));
      std::memcpy(&b, &y, sizeof(Bits));
      return a < b;
    } else {
      return static_cast<std::make_signed_t<Bits>>(x) < static_cast<std::make_signed_t<Bits>>(y);
    }
  };
  for (int64_t r = 0; r < total; r += width) {  // the runs
    std::sort(d.keys.begin() + r, d.keys.begin() + std::min(total, r + width), less);
  }
  // Each group of `group` runs merged stably: its positions stably sorted by key (ties keep
  // position order, which is run order).
  d.want_keys.resize(total);
  d.want_vals.resize(total);
  std::vector<int64_t> z;
  auto by_key = [&](int64_t i, int64_t j) { return less(d.keys[i], d.keys[j]); };
  for (int64_t g = 0; g < total; g += group * width) {
    z.clear();
    for (int64_t i = g; i < std::min(total, g + group * width); ++i) z.push_back(i);
    std::stable_sort(z.begin(), z.end(), by_key);
    for (size_t i = 0; i < z.size(); ++i) {
      d.want_keys[g + i] = d.keys[z[i]];
      d.want_vals[g + i] = static_cast<Value>(z[i]);
    }
  }
  const size_t kb = total * sizeof(Bits), vb = total * sizeof(Value);
  CHECK_CUDA(cudaMalloc(&d.d_keys, kb));
  CHECK_CUDA(cudaMalloc(&d.d_out, kb));
  CHECK_CUDA(cudaMalloc(&d.d_mid, kb));
  CHECK_CUDA(cudaMalloc(&d.d_vals, vb));
  CHECK_CUDA(cudaMalloc(&d.d_out_vals, vb));
  CHECK_CUDA(cudaMalloc(&d.d_mid_vals, vb));
  // Partition workspace: a two-way pass's splits, a quad pass's (tuning/workspace.h
  // quad_workspace_elements: ~2.5 total / width + a few a quad) or an eight-way pass's
  // (eight_way_workspace_elements: 8 a boundary, ~8 total / tile + 8 a group), with room to spare.
  CHECK_CUDA(cudaMalloc(&d.d_work, sizeof(int32_t) * (4 * total / width + total / 256 + 4096)));
  CHECK_CUDA(cudaMemcpy(d.d_keys, d.keys.data(), kb, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(d.d_vals, d.vals.data(), vb, cudaMemcpyHostToDevice));
  d.copy_ms = time_ms([&] { CHECK_CUDA(cudaMemcpyAsync(d.d_mid, d.d_keys, kb,
                                                       cudaMemcpyDeviceToDevice, g_stream)); },
                      10, 3, g_stream);
}

template <typename Bits, typename Value>
void free_data(Data<Bits, Value>& d) {
  for (void* p : {static_cast<void*>(d.d_keys), static_cast<void*>(d.d_out),
                  static_cast<void*>(d.d_mid), static_cast<void*>(d.d_vals),
                  static_cast<void*>(d.d_out_vals), static_cast<void*>(d.d_mid_vals),
                  static_cast<void*>(d.d_work)}) {
    CHECK_CUDA(cudaFree(p));
  }
}

template <typename Bits, typename Value>
bool check(Data<Bits, Value>& d, bool values) {
  std::vector<Bits> got(d.total);
  std::vector<Value> got_v(d.total);
  CHECK_CUDA(cudaStreamSynchronize(g_stream));
  CHECK_CUDA(cudaMemcpy(got.data(), d.d_out, d.total * sizeof(Bits), cudaMemcpyDeviceToHost));
  if (got != d.want_keys) return false;
  if (!values) return true;
  CHECK_CUDA(cudaMemcpy(got_v.data(), d.d_out_vals, d.total * sizeof(Value),
                        cudaMemcpyDeviceToHost));
  return got_v == d.want_vals;
}

template <typename Traits, jmp::PayloadKind kPayload, typename Value>
jmp::MergeCall pass_call(Data<typename Traits::Bits, Value>& d, int64_t width, const void* in,
                         void* out, const void* vin, void* vout) {
  jmp::SortCall sc{};
  sc.rows = 1;
  sc.length = d.total;
  sc.row_sorted = nullptr;
  sc.sms = device_sms();
  return jmp::sort_pass(sc, width, in, out, vin, vout,
                        kPayload == jmp::PayloadKind::kValue ? int(sizeof(Value)) : 0);
}

// Runs `go` once into d_out, checks the output, then times it: {ok, ms}.
template <typename Bits, typename Value, typename Go>
std::pair<bool, float> checked_time(Data<Bits, Value>& d, bool values, int repeats, const Go& go) {
  CHECK_CUDA(cudaMemsetAsync(d.d_out, 0, d.total * sizeof(Bits), g_stream));
  go();
  const bool ok = check(d, values);
  return {ok, time_ms(go, repeats, 3, g_stream)};
}

// The bytes a pass moves over those of the keys alone (the copy timed in make_data).
template <typename Bits, typename Value>
double bytes_ratio(bool values) {
  return values ? (sizeof(Bits) + sizeof(Value)) / double(sizeof(Bits)) : 1.0;
}

// Two passes: the runs of width w merged by a two-way pass (kQuadFirst: a quad pass of Shape),
// then the result's runs by a two-way pass: two levels (three: what an eight-way pass replaces).
template <typename Traits, jmp::PayloadKind kPayload, typename Value, bool kQuadFirst = false,
          typename Shape = QuadShapeT<256, 33, 2>>
void run_then_two_way(const char* label, Data<typename Traits::Bits, Value>& d, int repeats) {
  constexpr bool kValues = kPayload == jmp::PayloadKind::kValue;
  const jmp::MergeCall p1 = pass_call<Traits, kPayload, Value>(d, d.width, d.d_keys, d.d_mid,
                                                               d.d_vals, d.d_mid_vals);
  const int64_t width2 = (kQuadFirst ? 4 : 2) * d.width;
  const jmp::MergeCall p2 = pass_call<Traits, kPayload, Value>(d, width2, d.d_mid, d.d_out,
                                                               d.d_mid_vals, d.d_out_vals);
  const auto [ok, ms] = checked_time(d, kValues, repeats, [&] {
    if constexpr (kQuadFirst) {
      CHECK_CUDA((jmp::launch_quad_pass<Traits, kPayload, Value, Shape>(p1, d.d_work, g_stream)));
    } else {
      CHECK_CUDA((jmp::launch_merge<Traits, kPayload, Value>(p1, d.d_work, g_stream)));
    }
    CHECK_CUDA((jmp::launch_merge<Traits, kPayload, Value>(p2, d.d_work, g_stream)));
  });
  std::printf("%-34s %-23s%9.1f us  (%5.1f%% of 2 copies)  %s\n", label,
              kQuadFirst ? "quad + 2-way" : "two 2-way passes", ms * 1e3,
              100.0 * 2 * d.copy_ms * bytes_ratio<typename Traits::Bits, Value>(kValues) / ms,
              ok ? "ok" : "WRONG");
}

template <typename Traits, jmp::PayloadKind kPayload, typename Value, typename Shape>
void run_quad(const char* label, Data<typename Traits::Bits, Value>& d, int repeats) {
  constexpr bool kValues = kPayload == jmp::PayloadKind::kValue;
  const jmp::MergeCall p = pass_call<Traits, kPayload, Value>(d, d.width, d.d_keys, d.d_out,
                                                              d.d_vals, d.d_out_vals);
  const auto [ok, ms] = checked_time(d, kValues, repeats, [&] {
    CHECK_CUDA((jmp::launch_quad_pass<Traits, kPayload, Value, Shape>(p, d.d_work, g_stream)));
  });
  // The partition launches alone (pair partition + quad_co_rank).
  const float part_ms = time_ms(
      [&] {
        CHECK_CUDA(jmp::launch_quad_partition<Traits>(p, Shape::kTile, d.d_work, g_stream));
      },
      repeats, 3, g_stream);
  std::printf("%-34s quad %3dx%-2d min %d     %9.1f us  (%5.1f%% of 2 copies; partitions %.1f us)  %s\n",
              label, Shape::kThreads, Shape::kItems, Shape::kMinBlocks, ms * 1e3,
              100.0 * 2 * d.copy_ms * bytes_ratio<typename Traits::Bits, Value>(kValues) / ms,
              part_ms * 1e3, ok ? "ok" : "WRONG");
}

// One eight-way pass of width w (eight_way_merge.cuh).
template <typename Traits, jmp::PayloadKind kPayload, typename Value, typename Shape>
void run_eight(const char* label, Data<typename Traits::Bits, Value>& d, int repeats) {
  constexpr bool kValues = kPayload == jmp::PayloadKind::kValue;
  const jmp::MergeCall p = pass_call<Traits, kPayload, Value>(d, d.width, d.d_keys, d.d_out,
                                                              d.d_vals, d.d_out_vals);
  const auto [ok, ms] = checked_time(d, kValues, repeats, [&] {
    CHECK_CUDA((jmp::launch_eight_way_pass<Traits, kPayload, Value, Shape>(p, d.d_work,
                                                                          g_stream)));
  });
  const float part_ms = time_ms(
      [&] {
        CHECK_CUDA(
            jmp::launch_eight_way_partition<Traits>(p, Shape::kTile, d.d_work, g_stream));
      },
      repeats, 3, g_stream);
  std::printf("%-34s eight %3dx%-2d min %d    %9.1f us  (%5.1f%% of a copy; partition %.1f us)  %s\n",
              label, Shape::kThreads, Shape::kItems, Shape::kMinBlocks, ms * 1e3,
              100.0 * d.copy_ms * bytes_ratio<typename Traits::Bits, Value>(kValues) / ms,
              part_ms * 1e3, ok ? "ok" : "WRONG");
}

// An eight-way shape: (threads - 3) x items outputs a tile (tuning/sort.h eight_way_shape).
template <int kThreadsT, int kItemsT, int kMinBlocksT>
using EightShapeT =
    jmp::TilePolicy<kThreadsT, kItemsT, kMinBlocksT, int64_t{kThreadsT - 3} * kItemsT>;

int main(int argc, char** argv) {
  const int log2_total = argc > 1 ? std::atoi(argv[1]) : 27;
  const int64_t width_arg = argc > 2 ? std::atoll(argv[2]) : 15;  // < 64: a log2
  const int repeats = argc > 3 ? std::atoi(argv[3]) : 10;
  const std::string mode = argc > 4 ? argv[4] : "all";
  auto runs = [&](const char* m) {
    return mode == m || (mode == "all" && std::string(m) != "eight");
  };
  const int64_t total = int64_t{1} << log2_total;
  const int64_t width = width_arg < 64 ? int64_t{1} << width_arg : width_arg;
  CHECK_CUDA(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking));
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("# quad_sweep on %s: 2^%d keys in runs of %lld, median of %d\n", prop.name,
              log2_total, static_cast<long long>(width), repeats);
  using jmp::PayloadKind;
  if (runs("int32")) {
    Data<uint32_t, uint8_t> d;
    make_data<uint32_t, uint8_t, false>(d, total, width);
    std::printf("copy of the keys: %.1f us\n", d.copy_ms * 1e3);
    run_then_two_way<jmp::S32Key, PayloadKind::kNone, uint8_t>("int32", d, repeats);
    run_quad<jmp::S32Key, PayloadKind::kNone, uint8_t, QuadShapeT<256, 19, 4>>("int32", d, repeats);
    run_quad<jmp::S32Key, PayloadKind::kNone, uint8_t, QuadShapeT<256, 25, 3>>("int32", d, repeats);
    run_quad<jmp::S32Key, PayloadKind::kNone, uint8_t, QuadShapeT<256, 29, 3>>("int32", d, repeats);
    run_quad<jmp::S32Key, PayloadKind::kNone, uint8_t, QuadShapeT<256, 33, 2>>("int32", d, repeats);
    free_data(d);
  }
  if (runs("pairs")) {  // argsort's float32 keys with int32 positions
    Data<uint32_t, int32_t> d;
    make_data<uint32_t, int32_t, true>(d, total, width);
    run_then_two_way<jmp::F32Key, PayloadKind::kValue, int32_t>("float32 + int32", d, repeats);
    run_quad<jmp::F32Key, PayloadKind::kValue, int32_t, QuadShapeT<256, 15, 3>>("float32 + int32", d, repeats);
    run_quad<jmp::F32Key, PayloadKind::kValue, int32_t, QuadShapeT<256, 17, 3>>("float32 + int32", d, repeats);
    run_quad<jmp::F32Key, PayloadKind::kValue, int32_t, QuadShapeT<256, 17, 2>>("float32 + int32", d, repeats);
    run_quad<jmp::F32Key, PayloadKind::kValue, int32_t, QuadShapeT<256, 19, 2>>("float32 + int32", d, repeats);
    run_quad<jmp::F32Key, PayloadKind::kValue, int32_t, QuadShapeT<256, 13, 4>>("float32 + int32", d, repeats);
    free_data(d);
    Data<uint32_t, int32_t> i;  // argsort's int32 keys with int32 positions (the same shape)
    make_data<uint32_t, int32_t, false>(i, total, width);
    run_then_two_way<jmp::S32Key, PayloadKind::kValue, int32_t>("int32 + int32", i, repeats);
    run_quad<jmp::S32Key, PayloadKind::kValue, int32_t, QuadShapeT<256, 15, 3>>("int32 + int32", i, repeats);
    run_quad<jmp::S32Key, PayloadKind::kValue, int32_t, QuadShapeT<256, 13, 4>>("int32 + int32", i, repeats);
    free_data(i);
  }
  if (runs("float32")) {  // float32 keys alone (sort's passes: the int32 shape)
    Data<uint32_t, uint8_t> d;
    make_data<uint32_t, uint8_t, true>(d, total, width);
    run_then_two_way<jmp::F32Key, PayloadKind::kNone, uint8_t>("float32", d, repeats);
    run_quad<jmp::F32Key, PayloadKind::kNone, uint8_t, QuadShapeT<256, 33, 2>>("float32", d, repeats);
    free_data(d);
  }
  if (runs("int64")) {
    Data<uint64_t, uint8_t> d;
    make_data<uint64_t, uint8_t, false>(d, total / 2, width);
    run_then_two_way<jmp::S64Key, PayloadKind::kNone, uint8_t>("int64 (half the keys)", d, repeats);
    run_quad<jmp::S64Key, PayloadKind::kNone, uint8_t, QuadShapeT<256, 17, 3>>("int64 (half the keys)", d, repeats);
    run_quad<jmp::S64Key, PayloadKind::kNone, uint8_t, QuadShapeT<256, 19, 3>>("int64 (half the keys)", d, repeats);
    run_quad<jmp::S64Key, PayloadKind::kNone, uint8_t, QuadShapeT<256, 21, 2>>("int64 (half the keys)", d, repeats);
    run_quad<jmp::S64Key, PayloadKind::kNone, uint8_t, QuadShapeT<256, 21, 3>>("int64 (half the keys)", d, repeats);
    run_quad<jmp::S64Key, PayloadKind::kNone, uint8_t, QuadShapeT<256, 23, 2>>("int64 (half the keys)", d, repeats);
    free_data(d);
  }
  if (runs("eight")) {  // eight-way passes against a quad pass and a two-way pass
    Data<uint32_t, uint8_t> d;
    make_data<uint32_t, uint8_t, false>(d, total, width, 8);
    std::printf("copy of the keys: %.1f us\n", d.copy_ms * 1e3);
    run_then_two_way<jmp::S32Key, PayloadKind::kNone, uint8_t, true, QuadShapeT<256, 33, 2>>("int32", d, repeats);
    run_eight<jmp::S32Key, PayloadKind::kNone, uint8_t, EightShapeT<256, 33, 2>>("int32", d, repeats);
    run_eight<jmp::S32Key, PayloadKind::kNone, uint8_t, EightShapeT<256, 29, 2>>("int32", d, repeats);
    run_eight<jmp::S32Key, PayloadKind::kNone, uint8_t, EightShapeT<256, 25, 3>>("int32", d, repeats);
    run_eight<jmp::S32Key, PayloadKind::kNone, uint8_t, EightShapeT<256, 37, 2>>("int32", d, repeats);
    free_data(d);
    Data<uint32_t, uint8_t> f;
    make_data<uint32_t, uint8_t, true>(f, total, width, 8);
    run_then_two_way<jmp::F32Key, PayloadKind::kNone, uint8_t, true, QuadShapeT<256, 33, 2>>("float32", f, repeats);
    run_eight<jmp::F32Key, PayloadKind::kNone, uint8_t, EightShapeT<256, 33, 2>>("float32", f, repeats);
    free_data(f);
    Data<uint32_t, int32_t> p;
    make_data<uint32_t, int32_t, true>(p, total, width, 8);
    run_then_two_way<jmp::F32Key, PayloadKind::kValue, int32_t, true, QuadShapeT<256, 13, 4>>("float32 + int32", p, repeats);
    run_eight<jmp::F32Key, PayloadKind::kValue, int32_t, EightShapeT<256, 13, 4>>("float32 + int32", p, repeats);
    run_eight<jmp::F32Key, PayloadKind::kValue, int32_t, EightShapeT<256, 15, 3>>("float32 + int32", p, repeats);
    free_data(p);
    Data<uint64_t, uint8_t> l;
    make_data<uint64_t, uint8_t, false>(l, total / 2, width, 8);
    run_then_two_way<jmp::S64Key, PayloadKind::kNone, uint8_t, true, QuadShapeT<256, 17, 3>>("int64 (half the keys)", l, repeats);
    run_eight<jmp::S64Key, PayloadKind::kNone, uint8_t, EightShapeT<256, 17, 3>>("int64 (half the keys)", l, repeats);
    run_eight<jmp::S64Key, PayloadKind::kNone, uint8_t, EightShapeT<256, 21, 2>>("int64 (half the keys)", l, repeats);
    free_data(l);
    Data<uint64_t, int32_t> w;
    make_data<uint64_t, int32_t, false>(w, total / 2, width, 8);
    run_then_two_way<jmp::S64Key, PayloadKind::kValue, int32_t, true, QuadShapeT<256, 11, 3>>("int64 + int32 (half the keys)", w, repeats);
    run_eight<jmp::S64Key, PayloadKind::kValue, int32_t, EightShapeT<256, 11, 3>>("int64 + int32 (half the keys)", w, repeats);
    run_eight<jmp::S64Key, PayloadKind::kValue, int32_t, EightShapeT<256, 13, 3>>("int64 + int32 (half the keys)", w, repeats);
    free_data(w);
  }
  if (runs("wide")) {  // argsort's 8-byte keys with int32 positions (int64, then float64)
    Data<uint64_t, int32_t> d;
    make_data<uint64_t, int32_t, false>(d, total / 2, width);
    const char* label = "int64 + int32 (half the keys)";
    run_then_two_way<jmp::S64Key, PayloadKind::kValue, int32_t>(label, d, repeats);
    run_quad<jmp::S64Key, PayloadKind::kValue, int32_t, QuadShapeT<256, 7, 3>>(label, d, repeats);
    run_quad<jmp::S64Key, PayloadKind::kValue, int32_t, QuadShapeT<256, 7, 4>>(label, d, repeats);
    run_quad<jmp::S64Key, PayloadKind::kValue, int32_t, QuadShapeT<256, 9, 3>>(label, d, repeats);
    run_quad<jmp::S64Key, PayloadKind::kValue, int32_t, QuadShapeT<256, 11, 3>>(label, d, repeats);
    run_quad<jmp::S64Key, PayloadKind::kValue, int32_t, QuadShapeT<256, 11, 2>>(label, d, repeats);
    run_quad<jmp::S64Key, PayloadKind::kValue, int32_t, QuadShapeT<256, 13, 3>>(label, d, repeats);
    run_quad<jmp::S64Key, PayloadKind::kValue, int32_t, QuadShapeT<256, 13, 2>>(label, d, repeats);
    free_data(d);
    Data<uint64_t, int32_t> f;
    make_data<uint64_t, int32_t, true>(f, total / 2, width);
    label = "float64 + int32 (half the keys)";
    run_then_two_way<jmp::F64Key, PayloadKind::kValue, int32_t>(label, f, repeats);
    run_quad<jmp::F64Key, PayloadKind::kValue, int32_t, QuadShapeT<256, 7, 3>>(label, f, repeats);
    run_quad<jmp::F64Key, PayloadKind::kValue, int32_t, QuadShapeT<256, 11, 3>>(label, f, repeats);
    run_quad<jmp::F64Key, PayloadKind::kValue, int32_t, QuadShapeT<256, 13, 3>>(label, f, repeats);
    free_data(f);
  }
  return 0;
}
