// cub_bench.cu: CUB peers of jax_mergepath's sorts and merges, timed the same way on one GPU.
//
// Build and run (CUDA 12+/13 toolkit, which ships CUB):
//   nvcc -O3 -std=c++17 -arch=sm_90 perf/cub_bench.cu -o /tmp/cub_bench
//   /tmp/cub_bench [--sizes 20,24,27] [--repeats 20] [--check-log2 20] [--seg-log2 26]
//                  [--merge-log2 27] [--only SUBSTRING]
//
// Every case is first checked on fresh random data of 2^check-log2 elements against the host
// (std::sort / std::stable_sort / std::merge); a case that fails is reported and not timed, and
// the exit status is 1. Timing: CUDA events around one call (temporary storage allocated
// beforehand, outside the events), two warm-up calls, then the median of --repeats calls, on
// random keys generated on the device (a hash of the index: never zeros, no NaN, no -0.0).
//
// Output, one line per timed case, parsed by `python -m perf.bench --cub PATH`:
//   CUB <case> <n> <microseconds>
// with <case> one of
//   memcpy_d2d                       (n = bytes copied, cudaMemcpy device to device: the ceiling)
//   radix_keys_<T>, radix_pairs_<T>  (cub::DeviceRadixSort::SortKeys / SortPairs, out of place)
//   mergesort_keys_<T>, mergesort_pairs_<T>
//                                    (cub::DeviceMergeSort::SortKeysCopy / SortPairsCopy: the
//                                     out-of-place forms of SortKeys / SortPairs, input kept)
//   segsort_keys_int32_seg<d>        (cub::DeviceSegmentedSort::SortKeys, segments of d)
//   merge_keys_<T>                   (cub::DeviceMerge::MergeKeys of two sorted halves)
// T is int32, int64 or float32 (merge: int32, float32); pairs carry int32 values (an iota,
// like an argsort). Other lines start with '#'.

#include <cub/device/device_merge_sort.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_segmented_sort.cuh>
#include <cub/version.cuh>

#if __has_include(<cub/device/device_merge.cuh>)
#include <cub/device/device_merge.cuh>
#define CUB_BENCH_HAS_MERGE 1
#else
#define CUB_BENCH_HAS_MERGE 0
#endif

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#define CHECK_CUDA(call)                                                                   \
  do {                                                                                     \
    cudaError_t err_ = (call);                                                             \
    if (err_ != cudaSuccess) {                                                             \
      std::fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorName(err_), __FILE__, \
                   __LINE__, cudaGetErrorString(err_));                                    \
      std::exit(2);                                                                        \
    }                                                                                      \
  } while (0)

namespace {

struct Options {
  std::vector<int> sizes{20, 24, 27};
  int repeats = 20;
  int check_log2 = 20;
  int seg_log2 = 26;
  int merge_log2 = 27;
  std::string only;
};

struct Less {
  template <class T>
  __host__ __device__ bool operator()(const T& a, const T& b) const {
    return a < b;
  }
};

template <class T>
struct TypeName;
template <>
struct TypeName<int32_t> {
  static constexpr const char* value = "int32";
};
template <>
struct TypeName<int64_t> {
  static constexpr const char* value = "int64";
};
template <>
struct TypeName<float> {
  static constexpr const char* value = "float32";
};

__host__ __device__ inline uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

template <class T>
__host__ __device__ inline T key_from_hash(uint64_t h);
template <>
__host__ __device__ inline int32_t key_from_hash<int32_t>(uint64_t h) {
  return static_cast<int32_t>(static_cast<uint32_t>(h >> 32));
}
template <>
__host__ __device__ inline int64_t key_from_hash<int64_t>(uint64_t h) {
  return static_cast<int64_t>(h);
}
template <>
__host__ __device__ inline float key_from_hash<float>(uint64_t h) {
  // An integer in [-2^23, 2^23) scaled: finite, no NaN, never -0.0, few duplicates.
  return static_cast<float>(static_cast<int32_t>(h >> 40) - (1 << 23)) * 1e-3f;
}

template <class T>
__global__ void fill_random(T* out, int64_t n, uint64_t seed) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    out[i] = key_from_hash<T>(splitmix64(uint64_t(i) ^ (seed * 0xD1B54A32D192ED03ull)));
  }
}

__global__ void fill_iota(int32_t* out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    out[i] = static_cast<int32_t>(i);
  }
}

__global__ void fill_offsets(int32_t* out, int64_t count, int32_t step) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    out[i] = static_cast<int32_t>(i * step);
  }
}

constexpr int kFillBlocks = 4096;
constexpr int kFillThreads = 256;

template <class T>
T* device_random(int64_t n, uint64_t seed) {
  T* p = nullptr;
  CHECK_CUDA(cudaMalloc(&p, sizeof(T) * std::max<int64_t>(n, 1)));
  fill_random<T><<<kFillBlocks, kFillThreads>>>(p, n, seed);
  CHECK_CUDA(cudaGetLastError());
  return p;
}

template <class T>
T* device_alloc(int64_t n) {
  T* p = nullptr;
  CHECK_CUDA(cudaMalloc(&p, sizeof(T) * std::max<int64_t>(n, 1)));
  return p;
}

template <class T>
std::vector<T> to_host(const T* d, int64_t n) {
  std::vector<T> h(n);
  CHECK_CUDA(cudaMemcpy(h.data(), d, sizeof(T) * n, cudaMemcpyDeviceToHost));
  return h;
}

// Temporary storage for one CUB call: ask for the size with a null pointer, allocate, return.
struct Temp {
  void* ptr = nullptr;
  size_t bytes = 0;
  template <class Call>
  explicit Temp(Call&& call) {
    CHECK_CUDA(call(static_cast<void*>(nullptr), bytes));
    CHECK_CUDA(cudaMalloc(&ptr, std::max<size_t>(bytes, 1)));
  }
  ~Temp() { cudaFree(ptr); }
  Temp(const Temp&) = delete;
  Temp& operator=(const Temp&) = delete;
};

// Median of `repeats` event-timed calls after two warm-up calls, in microseconds.
template <class Launch>
double time_us(Launch&& launch, int repeats) {
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  for (int i = 0; i < 2; ++i) CHECK_CUDA(launch());
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<double> samples;
  for (int i = 0; i < repeats; ++i) {
    CHECK_CUDA(cudaEventRecord(start));
    CHECK_CUDA(launch());
    CHECK_CUDA(cudaEventRecord(stop));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float ms = 0.f;
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    samples.push_back(1e3 * ms);
  }
  CHECK_CUDA(cudaEventDestroy(start));
  CHECK_CUDA(cudaEventDestroy(stop));
  std::sort(samples.begin(), samples.end());
  const size_t k = samples.size();
  return k % 2 ? samples[k / 2] : 0.5 * (samples[k / 2 - 1] + samples[k / 2]);
}

int g_failures = 0;

void report_check(const std::string& name, int64_t n, bool ok, const char* detail = "") {
  std::printf("# check %s n=%lld %s%s%s\n", name.c_str(), static_cast<long long>(n),
              ok ? "OK" : "FAILED", detail[0] ? " " : "", detail);
  if (!ok) ++g_failures;
  std::fflush(stdout);
}

void report_time(const std::string& name, int64_t n, double us) {
  std::printf("CUB %s %lld %.3f\n", name.c_str(), static_cast<long long>(n), us);
  std::fflush(stdout);
}

bool selected(const Options& opt, const std::string& name) {
  return opt.only.empty() || name.find(opt.only) != std::string::npos;
}

// ---- whole-array sorts -------------------------------------------------------------------

enum class Algo { kRadix, kMergeSort };

template <class T>
cudaError_t sort_keys(Algo algo, void* temp, size_t& bytes, const T* in, T* out, int64_t n) {
  if (algo == Algo::kRadix) return cub::DeviceRadixSort::SortKeys(temp, bytes, in, out, n);
  return cub::DeviceMergeSort::SortKeysCopy(temp, bytes, in, out, n, Less{});
}

template <class T>
cudaError_t sort_pairs(Algo algo, void* temp, size_t& bytes, const T* kin, T* kout,
                       const int32_t* vin, int32_t* vout, int64_t n) {
  if (algo == Algo::kRadix) {
    return cub::DeviceRadixSort::SortPairs(temp, bytes, kin, kout, vin, vout, n);
  }
  return cub::DeviceMergeSort::SortPairsCopy(temp, bytes, kin, vin, kout, vout, n, Less{});
}

// Sorts (and times, when time_it) keys or pairs of n random T; checks against the host first
// when check is set. Returns false when the check failed.
template <class T>
bool run_sort(const Options& opt, Algo algo, bool pairs, int64_t n, bool check, bool time_it) {
  const std::string name = std::string(algo == Algo::kRadix ? "radix" : "mergesort") +
                           (pairs ? "_pairs_" : "_keys_") + TypeName<T>::value;
  if (!selected(opt, name)) return true;
  T* kin = device_random<T>(n, 0x5EED0000ull + n);
  T* kout = device_alloc<T>(n);
  int32_t* vin = nullptr;
  int32_t* vout = nullptr;
  if (pairs) {
    vin = device_alloc<int32_t>(n);
    vout = device_alloc<int32_t>(n);
    fill_iota<<<kFillBlocks, kFillThreads>>>(vin, n);
    CHECK_CUDA(cudaGetLastError());
  }
  auto call = [&](void* temp, size_t& bytes) {
    return pairs ? sort_pairs<T>(algo, temp, bytes, kin, kout, vin, vout, n)
                 : sort_keys<T>(algo, temp, bytes, kin, kout, n);
  };
  bool ok = true;
  {
    Temp temp(call);
    if (check) {
      CHECK_CUDA(call(temp.ptr, temp.bytes));
      CHECK_CUDA(cudaDeviceSynchronize());
      const std::vector<T> in = to_host(kin, n);
      const std::vector<T> got = to_host(kout, n);
      std::vector<T> want = in;
      std::sort(want.begin(), want.end());
      ok = want == got;
      const char* detail = "";
      if (ok && pairs) {
        // Values must be the input positions of the keys they travel with, each once.
        const std::vector<int32_t> v = to_host(vout, n);
        std::vector<char> seen(n, 0);
        for (int64_t i = 0; i < n && ok; ++i) {
          const int32_t j = v[i];
          ok = j >= 0 && j < n && !seen[j] && in[j] == got[i];
          if (ok) seen[j] = 1;
        }
        if (ok) {
          std::vector<int32_t> idx(n);
          for (int64_t i = 0; i < n; ++i) idx[i] = static_cast<int32_t>(i);
          std::stable_sort(idx.begin(), idx.end(),
                           [&](int32_t a, int32_t b) { return in[a] < in[b]; });
          detail = idx == v ? "(stable: equals std::stable_sort)" : "(not stable)";
        }
      }
      report_check(name, n, ok, detail);
    }
    if (ok && time_it) {
      report_time(name, n, time_us([&] { return call(temp.ptr, temp.bytes); }, opt.repeats));
    }
  }
  CHECK_CUDA(cudaFree(kin));
  CHECK_CUDA(cudaFree(kout));
  if (pairs) {
    CHECK_CUDA(cudaFree(vin));
    CHECK_CUDA(cudaFree(vout));
  }
  return ok;
}

template <class T>
void sorts_for_type(const Options& opt) {
  for (Algo algo : {Algo::kRadix, Algo::kMergeSort}) {
    for (bool pairs : {false, true}) {
      if (!run_sort<T>(opt, algo, pairs, int64_t(1) << opt.check_log2, true, false)) continue;
      for (int log2 : opt.sizes) run_sort<T>(opt, algo, pairs, int64_t(1) << log2, false, true);
    }
  }
}

// ---- segmented sort (fixed-size segments, as rows of a 2-d array) -------------------------

bool run_segmented(const Options& opt, int64_t n, int32_t seg, bool check, bool time_it) {
  const std::string name = "segsort_keys_int32_seg" + std::to_string(seg);
  if (!selected(opt, name)) return true;
  const int64_t nseg = n / seg;
  int32_t* kin = device_random<int32_t>(n, 0xC0FFEEull + n + seg);
  int32_t* kout = device_alloc<int32_t>(n);
  int32_t* off = device_alloc<int32_t>(nseg + 1);
  fill_offsets<<<kFillBlocks, kFillThreads>>>(off, nseg + 1, seg);
  CHECK_CUDA(cudaGetLastError());
  auto call = [&](void* temp, size_t& bytes) {
    return cub::DeviceSegmentedSort::SortKeys(temp, bytes, kin, kout, n, nseg, off, off + 1);
  };
  bool ok = true;
  {
    Temp temp(call);
    if (check) {
      CHECK_CUDA(call(temp.ptr, temp.bytes));
      CHECK_CUDA(cudaDeviceSynchronize());
      std::vector<int32_t> want = to_host(kin, n);
      const std::vector<int32_t> got = to_host(kout, n);
      for (int64_t s = 0; s < nseg; ++s) {
        std::sort(want.begin() + s * seg, want.begin() + (s + 1) * seg);
      }
      ok = want == got;
      report_check(name, n, ok);
    }
    if (ok && time_it) {
      report_time(name, n, time_us([&] { return call(temp.ptr, temp.bytes); }, opt.repeats));
    }
  }
  CHECK_CUDA(cudaFree(kin));
  CHECK_CUDA(cudaFree(kout));
  CHECK_CUDA(cudaFree(off));
  return ok;
}

// ---- merge of two sorted halves -----------------------------------------------------------

#if CUB_BENCH_HAS_MERGE
template <class T>
bool run_merge(const Options& opt, int64_t n, bool check, bool time_it) {
  const std::string name = std::string("merge_keys_") + TypeName<T>::value;
  if (!selected(opt, name)) return true;
  const int64_t m = n / 2;
  // Two sorted halves of random keys, sorted on the device by a radix sort.
  T* raw = device_random<T>(n, 0xABCDEFull + n);
  T* in = device_alloc<T>(n);
  {
    auto sort_half = [&](void* temp, size_t& bytes, int64_t off, int64_t len) {
      return cub::DeviceRadixSort::SortKeys(temp, bytes, raw + off, in + off, len);
    };
    Temp temp([&](void* t, size_t& b) { return sort_half(t, b, 0, n - m); });
    CHECK_CUDA(sort_half(temp.ptr, temp.bytes, 0, m));
    CHECK_CUDA(sort_half(temp.ptr, temp.bytes, m, n - m));
  }
  CHECK_CUDA(cudaFree(raw));
  T* out = device_alloc<T>(n);
  auto call = [&](void* temp, size_t& bytes) {
    return cub::DeviceMerge::MergeKeys(temp, bytes, in, m, in + m, n - m, out, Less{});
  };
  bool ok = true;
  {
    Temp temp(call);
    if (check) {
      CHECK_CUDA(call(temp.ptr, temp.bytes));
      CHECK_CUDA(cudaDeviceSynchronize());
      const std::vector<T> h = to_host(in, n);
      const std::vector<T> got = to_host(out, n);
      std::vector<T> want(n);
      std::merge(h.begin(), h.begin() + m, h.begin() + m, h.end(), want.begin());
      ok = want == got;
      report_check(name, n, ok);
    }
    if (ok && time_it) {
      report_time(name, n, time_us([&] { return call(temp.ptr, temp.bytes); }, opt.repeats));
    }
  }
  CHECK_CUDA(cudaFree(in));
  CHECK_CUDA(cudaFree(out));
  return ok;
}
#endif

// ---- device-to-device copy: the ceiling -----------------------------------------------------

void run_memcpy(const Options& opt) {
  if (!selected(opt, "memcpy_d2d")) return;
  const int64_t bytes = int64_t(1) << 30;
  int32_t* src = device_random<int32_t>(bytes / 4, 7);
  int32_t* dst = device_alloc<int32_t>(bytes / 4);
  const double us = time_us(
      [&] { return cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice); }, opt.repeats);
  report_time("memcpy_d2d", bytes, us);
  std::printf("# memcpy_d2d: %.2f TB/s (read + write counted)\n", 2.0 * bytes / us / 1e6);
  CHECK_CUDA(cudaFree(src));
  CHECK_CUDA(cudaFree(dst));
}

std::vector<int> parse_sizes(const char* s) {
  std::vector<int> out;
  for (const char* p = s; *p;) {
    char* end = nullptr;
    const long v = std::strtol(p, &end, 10);
    if (end == p || v < 1 || v > 30) {
      std::fprintf(stderr, "bad --sizes %s (log2 sizes 1..30, comma separated)\n", s);
      std::exit(64);
    }
    out.push_back(static_cast<int>(v));
    p = *end == ',' ? end + 1 : end;
  }
  return out;
}

Options parse(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(64);
      }
      return argv[++i];
    };
    if (a == "--sizes") {
      opt.sizes = parse_sizes(value());
    } else if (a == "--repeats") {
      opt.repeats = std::max(1, std::atoi(value()));
    } else if (a == "--check-log2") {
      opt.check_log2 = std::atoi(value());
    } else if (a == "--seg-log2") {
      opt.seg_log2 = std::atoi(value());
    } else if (a == "--merge-log2") {
      opt.merge_log2 = std::atoi(value());
    } else if (a == "--only") {
      opt.only = value();
    } else {
      std::printf(
          "usage: %s [--sizes 20,24,27] [--repeats 20] [--check-log2 20] [--seg-log2 26]\n"
          "          [--merge-log2 27] [--only SUBSTRING]\n"
          "  --sizes       log2 sizes of the whole-array sorts (default 20,24,27)\n"
          "  --repeats     timed calls per case, median reported (default 20)\n"
          "  --check-log2  log2 size checked against the host before timing (default 20)\n"
          "  --seg-log2    log2 size of the segmented sorts, segments 64/512/4096 (default 26)\n"
          "  --merge-log2  log2 total size of the merges, equal halves (default 27)\n"
          "  --only        run only the cases whose name contains SUBSTRING\n",
          argv[0]);
      std::exit(a == "--help" || a == "-h" ? 0 : 64);
    }
  }
  if (opt.check_log2 < 12 || opt.check_log2 > 26) {
    std::fprintf(stderr, "--check-log2 must be in [12, 26]\n");
    std::exit(64);
  }
  return opt;
}

}  // namespace

int main(int argc, char** argv) {
  const Options opt = parse(argc, argv);
  int dev = 0;
  CHECK_CUDA(cudaGetDevice(&dev));
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, dev));
  int runtime = 0;
  CHECK_CUDA(cudaRuntimeGetVersion(&runtime));
  std::printf("# cub_bench: %s (sm_%d%d), CUDA runtime %d, CUB %d.%d.%d, DeviceMerge %s\n",
              prop.name, prop.major, prop.minor, runtime, CUB_MAJOR_VERSION, CUB_MINOR_VERSION,
              CUB_SUBMINOR_VERSION, CUB_BENCH_HAS_MERGE ? "yes" : "no (header missing)");
  std::printf("# median of %d event-timed calls after 2 warm-up calls; times in microseconds\n",
              opt.repeats);
  std::fflush(stdout);

  run_memcpy(opt);
  sorts_for_type<int32_t>(opt);
  sorts_for_type<int64_t>(opt);
  sorts_for_type<float>(opt);
  for (int32_t seg : {64, 512, 4096}) {
    if (run_segmented(opt, int64_t(1) << opt.check_log2, seg, true, false)) {
      run_segmented(opt, int64_t(1) << opt.seg_log2, seg, false, true);
    }
  }
#if CUB_BENCH_HAS_MERGE
  if (run_merge<int32_t>(opt, int64_t(1) << opt.check_log2, true, false)) {
    run_merge<int32_t>(opt, int64_t(1) << opt.merge_log2, false, true);
  }
  if (run_merge<float>(opt, int64_t(1) << opt.check_log2, true, false)) {
    run_merge<float>(opt, int64_t(1) << opt.merge_log2, false, true);
  }
#else
  std::printf("# cub/device/device_merge.cuh not found: merge cases skipped\n");
#endif
  if (g_failures) std::printf("# %d CHECK(S) FAILED: those cases were not timed\n", g_failures);
  return g_failures ? 1 : 0;
}
