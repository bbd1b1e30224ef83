// search_sweep.cu: times searchsorted with sorted queries (search_kernels.cu: one merge of the
// queries with the sorted array, a ranks payload, through launch_merge) for several tile shapes
// (threads x items, min blocks), to choose the ranks payload's merge shape in tuning/merge.h: 2^k
// sorted int32 queries in 2^k sorted int32 keys (duplicates), side "left" and "right". Every
// variant's ranks are checked against std::lower_bound / upper_bound before they are timed.
// Prints device time (CUDA events, median of warm repeats), the partition launch alone, and
// the % of a cudaMemcpy D2D of the bytes moved (both inputs read, the ranks written).
//
//   nvcc -O3 -std=c++17 -arch=sm_90 --expt-relaxed-constexpr -Iffi/include -Iffi/cuda \
//        perf/sweeps/search_sweep.cu -o /tmp/search_sweep
//   /tmp/search_sweep [log2=23] [repeats=20]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "../../ffi/cuda/launch/merge_launch.cuh"
#include "sweep_timing.cuh"

namespace jmp = jax_mergepath;

template <int kThreadsT, int kItemsT, int kMinBlocksT>
using Shape = jmp::TilePolicy<kThreadsT, kItemsT, kMinBlocksT, int64_t{kThreadsT} * kItemsT>;

cudaStream_t g_stream = nullptr;

struct Inputs {
  int64_t n = 0;
  std::vector<int32_t> a, v, want_left, want_right;
  int32_t *d_a = nullptr, *d_v = nullptr, *d_out = nullptr, *d_work = nullptr;
  void* d_copy = nullptr;
  float copy_ms = 0;
};

template <typename Policy>
void run(Inputs& in, bool right, int repeats) {
  jmp::SearchCall s{};
  s.key_type = jmp::KeyType::kS32;
  s.right = right;
  s.sorted_queries = true;
  s.rows = 1;
  s.length = in.n;
  s.queries = in.n;
  s.a = in.d_a;
  s.v = in.d_v;
  s.out = in.d_out;
  s.sms = device_sms();
  const jmp::MergeCall call = jmp::search_as_merge(s);
  auto go = [&] {
    if (right) {
      CHECK_CUDA((jmp::launch_merge<jmp::S32Key, jmp::PayloadKind::kRanksOfB, int32_t, Policy>(
          call, in.d_work, g_stream)));
    } else {
      CHECK_CUDA((jmp::launch_merge<jmp::S32Key, jmp::PayloadKind::kRanksOfA, int32_t, Policy>(
          call, in.d_work, g_stream)));
    }
  };
  CHECK_CUDA(cudaMemsetAsync(in.d_out, 0xff, in.n * sizeof(int32_t), g_stream));
  go();
  CHECK_CUDA(cudaStreamSynchronize(g_stream));
  std::vector<int32_t> got(in.n);
  CHECK_CUDA(cudaMemcpy(got.data(), in.d_out, in.n * sizeof(int32_t), cudaMemcpyDeviceToHost));
  const bool ok = got == (right ? in.want_right : in.want_left);
  const float ms = time_ms(go, repeats, 3, g_stream);
  const float part_ms = time_ms(
      [&] {
        CHECK_CUDA(jmp::launch_partition<jmp::S32Key>(
            call, jmp::tile_map(call.layout, Policy::kTile), in.d_work, g_stream));
      },
      repeats, 3, g_stream);
  // Moved: a and v read, the ranks written (12 n bytes); the copy moved 16 n.
  const double of_copy = 100.0 * 0.75 * in.copy_ms / ms;
  std::printf("%-5s T=%3d I=%2d B=%d tile=%5lld %7.1f us (partition %5.1f us) %5.1f%% of copy  %s\n",
              right ? "right" : "left", Policy::kThreads, Policy::kItems, Policy::kMinBlocks,
              static_cast<long long>(Policy::kTile), ms * 1e3, part_ms * 1e3, of_copy,
              ok ? "ok" : "WRONG");
  std::fflush(stdout);
}

int main(int argc, char** argv) {
  const int log2 = argc > 1 ? std::atoi(argv[1]) : 23;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 20;
  CHECK_CUDA(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking));
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  Inputs in;
  in.n = int64_t{1} << log2;
  std::mt19937 rng(3);
  in.a.resize(in.n);
  in.v.resize(in.n);
  for (auto& x : in.a) x = static_cast<int32_t>(rng() % (4 * in.n));
  for (auto& x : in.v) x = static_cast<int32_t>(rng() % (4 * in.n));
  std::sort(in.a.begin(), in.a.end());
  std::sort(in.v.begin(), in.v.end());
  in.want_left.resize(in.n);
  in.want_right.resize(in.n);
  for (int64_t q = 0; q < in.n; ++q) {
    in.want_left[q] = int32_t(std::lower_bound(in.a.begin(), in.a.end(), in.v[q]) - in.a.begin());
    in.want_right[q] = int32_t(std::upper_bound(in.a.begin(), in.a.end(), in.v[q]) - in.a.begin());
  }
  const size_t bytes = in.n * sizeof(int32_t);
  CHECK_CUDA(cudaMalloc(&in.d_a, 2 * bytes));  // a, then v: the copy reads both
  in.d_v = in.d_a + in.n;
  CHECK_CUDA(cudaMalloc(&in.d_out, bytes));
  CHECK_CUDA(cudaMalloc(&in.d_work, sizeof(int32_t) * (in.n / 64 + 4096)));
  CHECK_CUDA(cudaMalloc(&in.d_copy, 2 * bytes));
  CHECK_CUDA(cudaMemcpy(in.d_a, in.a.data(), bytes, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(in.d_v, in.v.data(), bytes, cudaMemcpyHostToDevice));
  in.copy_ms = time_ms([&] { CHECK_CUDA(cudaMemcpyAsync(in.d_copy, in.d_a, 2 * bytes,
                                                        cudaMemcpyDeviceToDevice, g_stream)); },
                       repeats, 3, g_stream);
  std::printf("# search_sweep on %s: 2^%d sorted queries in 2^%d sorted int32; copy of %zu bytes "
              "%.1f us\n", prop.name, log2, log2, 2 * bytes, in.copy_ms * 1e3);
  for (const bool right : {false, true}) {
    run<Shape<256, 15, 6>>(in, right, repeats);  // tuning/merge.h's 4 + 4 byte merge shape
    run<Shape<256, 19, 6>>(in, right, repeats);
    run<Shape<256, 19, 8>>(in, right, repeats);
    run<Shape<256, 23, 6>>(in, right, repeats);
    run<Shape<256, 27, 4>>(in, right, repeats);  // tuning/merge.h's ranks shape (merge_shape_for)
    run<Shape<256, 31, 4>>(in, right, repeats);
    run<Shape<256, 35, 4>>(in, right, repeats);
    run<Shape<256, 27, 3>>(in, right, repeats);
    run<Shape<256, 31, 3>>(in, right, repeats);
    run<Shape<256, 39, 3>>(in, right, repeats);
    run<Shape<512, 19, 3>>(in, right, repeats);
    run<Shape<256, 11, 8>>(in, right, repeats);
  }
  return 0;
}
