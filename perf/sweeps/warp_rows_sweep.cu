// warp_rows_sweep.cu: times the warp merge of short full rows (kernels/warp_merge.cuh through
// launch/merge_launch.cuh launch_warp_rows, the production kernel) for several slot counts (sets
// of rows a warp loads before merging them) and register caps, beside the rows kernel the same
// rows took before (launch_rows with merge_rows_items' items), on one GPU, to choose
// tuning/merge.h's warp_rows_slots / kWarpRowsMinBlocks / kWarpRowsMaxLength. Batches of 2^26 outputs: int32 rows of
// 4+4 to 16+16 (keys alone and with indices), int64 and uint16 rows of 16+16. Every variant's
// output is checked against a host merge first. Prints device time (CUDA events, median of warm
// repeats) and the % of a cudaMemcpyDeviceToDevice of the same bytes measured in the same run.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 --expt-relaxed-constexpr -Iffi/include -Iffi/cuda \
//        perf/sweeps/warp_rows_sweep.cu -o /tmp/warp_rows_sweep
//   /tmp/warp_rows_sweep [repeats=20]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "../../ffi/cuda/launch/merge_launch.cuh"
#include "sweep_timing.cuh"

namespace jmp = jax_mergepath;

cudaStream_t g_stream = nullptr;
int g_repeats = 20;
int g_failures = 0;
float g_copy_ms_per_byte = 0;  // a D2D copy's time a byte (read + write)

template <typename Bits>
struct Rows {
  int64_t rows, m, n;
  Bits *a, *b, *out;
  int32_t* out_idx;
  std::vector<Bits> want;        // merged keys
  std::vector<int32_t> want_ix;  // their positions in [A | B]
};

// rows x (m + n): sorted random keys (duplicates within and across A and B).
template <typename Bits>
Rows<Bits> make_rows(int64_t rows, int64_t m, int64_t n, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<Bits> a(rows * m), b(rows * n);
  Rows<Bits> r{rows, m, n, nullptr, nullptr, nullptr, nullptr, {}, {}};
  r.want.resize(rows * (m + n));
  r.want_ix.resize(rows * (m + n));
  for (int64_t row = 0; row < rows; ++row) {
    Bits* ra = a.data() + row * m;
    Bits* rb = b.data() + row * n;
    for (int64_t i = 0; i < m; ++i) ra[i] = static_cast<Bits>(gen() % (2 * (m + n)));
    for (int64_t j = 0; j < n; ++j) rb[j] = static_cast<Bits>(gen() % (2 * (m + n)));
    std::sort(ra, ra + m);
    std::sort(rb, rb + n);
    int64_t i = 0, j = 0;
    for (int64_t p = 0; p < m + n; ++p) {  // stable: A first on ties
      const bool from_b = j < n && (i >= m || rb[j] < ra[i]);
      r.want[row * (m + n) + p] = from_b ? rb[j] : ra[i];
      r.want_ix[row * (m + n) + p] = static_cast<int32_t>(from_b ? m + j++ : i++);
    }
  }
  CHECK_CUDA(cudaMalloc(&r.a, a.size() * sizeof(Bits)));
  CHECK_CUDA(cudaMalloc(&r.b, b.size() * sizeof(Bits)));
  CHECK_CUDA(cudaMalloc(&r.out, r.want.size() * sizeof(Bits)));
  CHECK_CUDA(cudaMalloc(&r.out_idx, r.want.size() * sizeof(int32_t)));
  CHECK_CUDA(cudaMemcpy(r.a, a.data(), a.size() * sizeof(Bits), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(r.b, b.data(), b.size() * sizeof(Bits), cudaMemcpyHostToDevice));
  return r;
}

template <typename Bits>
void free_rows(Rows<Bits>& r) {
  CHECK_CUDA(cudaFree(r.a));
  CHECK_CUDA(cudaFree(r.b));
  CHECK_CUDA(cudaFree(r.out));
  CHECK_CUDA(cudaFree(r.out_idx));
}

template <typename Traits, jmp::PayloadKind kPayload>
jmp::MergeCall merge_call(const Rows<typename Traits::Bits>& r) {
  jmp::MergeCall call{};
  call.key_type = sizeof(typename Traits::Bits) == 8   ? jmp::KeyType::kU64
                  : sizeof(typename Traits::Bits) == 2 ? jmp::KeyType::kU16
                                                       : jmp::KeyType::kU32;
  call.payload = kPayload;
  call.layout = jmp::rows_layout(r.rows, r.m, r.n);
  call.a = r.a;
  call.b = r.b;
  call.out = r.out;
  call.out_payload = kPayload == jmp::PayloadKind::kIndex ? r.out_idx : nullptr;
  call.sms = device_sms();
  return call;
}

// Checks then times launch(); prints one line.
template <typename Bits, bool kIndex, typename Launch>
void run(const char* label, Rows<Bits>& r, Launch&& launch) {
  const size_t total = r.want.size();
  CHECK_CUDA(cudaMemset(r.out, 0, total * sizeof(Bits)));
  CHECK_CUDA(cudaMemset(r.out_idx, 0, total * sizeof(int32_t)));
  CHECK_CUDA(launch());
  CHECK_CUDA(cudaStreamSynchronize(g_stream));
  std::vector<Bits> got(total);
  CHECK_CUDA(cudaMemcpy(got.data(), r.out, total * sizeof(Bits), cudaMemcpyDeviceToHost));
  bool ok = got == r.want;
  if (kIndex) {
    std::vector<int32_t> ix(total);
    CHECK_CUDA(cudaMemcpy(ix.data(), r.out_idx, total * 4, cudaMemcpyDeviceToHost));
    ok = ok && ix == r.want_ix;
  }
  if (!ok) ++g_failures;
  const float ms = time_ms([&] { CHECK_CUDA(launch()); }, g_repeats, 3, g_stream);
  const double bytes = 2.0 * total * (sizeof(Bits) + (kIndex ? 2 : 0));  // keys read + written
  std::printf("%-44s %8.1f us  %5.1f%% of copy  %s\n", label, ms * 1e3,
              100.0 * g_copy_ms_per_byte * bytes / ms, ok ? "ok" : "WRONG");
}

// The rows kernel these rows took before the warp merge (merge_launch.cuh launch_rows_cut).
template <typename Traits, jmp::PayloadKind kPayload, typename Value>
cudaError_t launch_rows_kernel(const jmp::MergeCall& call) {
  using Policy = jmp::MergePolicyFor<Traits, kPayload, Value>;
  const auto flip = jmp::order_mask<Traits>(call.key_type, false);
  const int items = jmp::merge_rows_items(int(sizeof(typename Traits::Bits)), Policy::kThreads,
                                          Policy::kItems, call.layout.row_length());
  return jmp::launch_rows_cut<Traits, kPayload, Value, Policy>(call, flip, Policy::kItems - items,
                                                               g_stream);
}

template <typename Traits, jmp::PayloadKind kPayload, int kSlots, int kMinBlocks>
void warp_variant(const char* name, Rows<typename Traits::Bits>& r) {
  using Value = int32_t;
  const jmp::MergeCall call = merge_call<Traits, kPayload>(r);
  const auto flip = jmp::order_mask<Traits>(call.key_type, false);
  char label[96];
  std::snprintf(label, sizeof(label), "%s slots %d min_blocks %d%s", name, kSlots, kMinBlocks,
                kSlots == jmp::warp_rows_slots(int(sizeof(typename Traits::Bits))) &&
                        kMinBlocks == jmp::kWarpRowsMinBlocks
                    ? " (tuning)"
                    : "");
  run<typename Traits::Bits, kPayload == jmp::PayloadKind::kIndex>(label, r, [&] {
    return jmp::launch_warp_rows<Traits, kPayload, Value, kSlots, kMinBlocks>(call, flip,
                                                                             g_stream);
  });
}

template <typename Traits, jmp::PayloadKind kPayload>
void sweep(const char* name, int64_t side) {
  using Bits = typename Traits::Bits;
  const int64_t rows = (int64_t{1} << 25) / side;  // 2^26 outputs
  Rows<Bits> r = make_rows<Bits>(rows, side, side, 7 + side);
  char label[96];
  std::snprintf(label, sizeof(label), "%s %lld x (%lld+%lld) rows kernel", name,
                static_cast<long long>(rows), static_cast<long long>(side),
                static_cast<long long>(side));
  const jmp::MergeCall call = merge_call<Traits, kPayload>(r);
  run<Bits, kPayload == jmp::PayloadKind::kIndex>(
      label, r, [&] { return launch_rows_kernel<Traits, kPayload, int32_t>(call); });
  std::snprintf(label, sizeof(label), "%s %lld x (%lld+%lld) warp", name,
                static_cast<long long>(rows), static_cast<long long>(side),
                static_cast<long long>(side));
  warp_variant<Traits, kPayload, 4, 1>(label, r);
  warp_variant<Traits, kPayload, 8, 1>(label, r);
  warp_variant<Traits, kPayload, 16, 1>(label, r);
  warp_variant<Traits, kPayload, 8, 4>(label, r);
  free_rows(r);
}

int main(int argc, char** argv) {
  if (argc > 1) g_repeats = std::atoi(argv[1]);
  CHECK_CUDA(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking));
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  {  // the copy rate of this run
    const size_t bytes = size_t{1} << 30;
    void *src, *dst;
    CHECK_CUDA(cudaMalloc(&src, bytes));
    CHECK_CUDA(cudaMalloc(&dst, bytes));
    const float ms = time_ms(
        [&] { CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, g_stream)); },
        g_repeats, 3, g_stream);
    g_copy_ms_per_byte = ms / (2.0f * bytes);
    std::printf("%s, %d SMs; copy %.3f TB/s (read + write); warp rows up to %d outputs\n",
                prop.name, prop.multiProcessorCount, 2.0 * bytes / (ms * 1e9),
                jmp::kWarpRowsMaxLength);
    CHECK_CUDA(cudaFree(src));
    CHECK_CUDA(cudaFree(dst));
  }
  using jmp::PayloadKind;
  sweep<jmp::U32Key, PayloadKind::kNone>("int32", 16);
  sweep<jmp::U32Key, PayloadKind::kNone>("int32", 8);
  sweep<jmp::U32Key, PayloadKind::kNone>("int32", 4);
  sweep<jmp::U32Key, PayloadKind::kNone>("int32", 2);
  sweep<jmp::U32Key, PayloadKind::kIndex>("int32+index", 16);
  sweep<jmp::U64Key, PayloadKind::kNone>("int64", 16);
  sweep<jmp::U16Key, PayloadKind::kNone>("uint16", 16);
  std::printf("%d variant(s) WRONG\n", g_failures);
  return g_failures != 0;
}
