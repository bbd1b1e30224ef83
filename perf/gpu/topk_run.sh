#!/usr/bin/env bash
# topk_run.sh: the top_k GPU checks and timings in one call (about 6 minutes on an H200), on the
# GPU machine from the repository root, after the package is installed with CUDA
# (perf/gpu/install.sh). Logs go to $OUT (or ./gpu-logs):
#   topk_tests.log      pytest on the GPU: test_top_k_gpu.py (GPU = CPU bit for bit on every
#                       strategy, the exact path forced, ties, NaN, +-0.0, k at the edges, rows,
#                       every key width, routes, partition, repeated calls) and the CPU suites
#                       test_top_k.py / test_partition.py run on the GPU (lax / jnp / reference)
#   topk_sweep.txt      perf/sweeps/topk_sweep.cu: every case checked against a host reference,
#                       then device times (CUDA events), % of one read of the keys, the filter
#                       kernel alone; "N case(s) WRONG" at the end
#   topk_sanitizer.log  compute-sanitizer memcheck of tests/tools/sanitizer_cases.py's top_k
#                       cases (every strategy, the exact paths): "sanitizer rc=0" is clean
#   topk_bench.txt/.json  python -m perf.bench --family topk: user-visible and kernel times
#                       against lax.top_k, sorts then a slice, argsort then a take,
#                       lax.approx_max_k; the thresholds' cases with every route forced
# Usage: bash perf/gpu/topk_run.sh [more perf.bench arguments]
# Env: TOPK_TEST_WORKERS (pytest-xdist processes, default 4), TOPK_SKIP_TESTS / _SWEEP /
# _SANITIZER / _BENCH.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"; out="$(cd "$out" && pwd)"
cd "$(dirname "$0")/../.."  # the repository root
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
status=0
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$out/gpu.txt"
(cd tests && python3 -c "import jax, jax_mergepath as j; print('HAS_CUDA', j.HAS_CUDA, jax.devices())")
bin=/tmp/topk_sweep
if [ -z "${TOPK_SKIP_SWEEP:-}" ]; then  # (built on the CPU cores while the tests run)
  (nvcc -O3 -std=c++17 -arch=sm_90 --expt-relaxed-constexpr -Iffi/include -Iffi/cuda \
     perf/sweeps/topk_sweep.cu -o "$bin" > "$out/topk_sweep_build.log" 2>&1
   echo "rc=$?" >> "$out/topk_sweep_build.log") &
  build=$!
fi
echo "== tests"
if [ -z "${TOPK_SKIP_TESTS:-}" ]; then
  (cd tests && timeout 240 python3 -m pytest -q -p no:cacheprovider -n "${TOPK_TEST_WORKERS:-4}" \
     test_top_k_gpu.py test_top_k.py test_partition.py) > "$out/topk_tests.log" 2>&1 || status=1
  tail -15 "$out/topk_tests.log"
fi
echo "== harness"
if [ -z "${TOPK_SKIP_SWEEP:-}" ]; then
  wait "$build"
  if grep -q "^rc=0" "$out/topk_sweep_build.log"; then
    timeout 150 "$bin" 10 2>&1 | tee "$out/topk_sweep.txt" || status=1
  else
    echo "HARNESS BUILD FAILED"; tail -30 "$out/topk_sweep_build.log"; status=1
  fi
fi
echo "== compute-sanitizer (memcheck, top_k cases)"
if [ -z "${TOPK_SKIP_SANITIZER:-}" ]; then
  JMP_SANITIZER_CASES=topk timeout 150 compute-sanitizer --tool memcheck --error-exitcode 3 \
    --target-processes all python3 tests/tools/sanitizer_cases.py > "$out/topk_sanitizer.log" 2>&1
  rc=$?; tail -3 "$out/topk_sanitizer.log"; echo "sanitizer rc=$rc"
  [ "$rc" = 0 ] || status=1
fi
echo "== bench"
if [ -z "${TOPK_SKIP_BENCH:-}" ]; then
  timeout 200 python3 -m perf.bench --family topk --no-torch --no-memory --rounds 1 --repeats 3 \
    --calls 10 --max-batch-s 0.1 --json "$out/topk_bench.json" "$@" 2>&1 \
    | tee "$out/topk_bench.txt" || status=1
fi
exit $status
