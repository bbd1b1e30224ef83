#!/usr/bin/env bash
# run_gpu_bench.sh: the benchmark run on a GPU machine (H100 / H200, sm_90).
#   1. builds the CUB peer program perf/cub_bench.cu to /tmp/cub_bench (nvcc, sm_90);
#   2. runs it once at small sizes, alone: every CUB case checked against the host (smoke test);
#   3. runs `python3 -m perf.bench --family all --cub /tmp/cub_bench --json $OUT/bench.json`
#      from the repository root (the bench runs the CUB program again at full sizes, before JAX
#      starts, and prints CUB ratios beside its cases).
# Everything is teed to $OUT (default ./gpu-logs): gpu.txt, cub_build.log, cub_smoke.txt,
# bench.txt, bench.json.
#
# Usage (repository root, jax_mergepath installed with CUDA, e.g. by perf/gpu/install.sh;
# JMP_BUILD=1 runs install.sh first: the carried wheel of these sources, or a build):
#   bash perf/run_gpu_bench.sh [extra bench args, e.g. --quick or --family sort]
# JMP_SKIP_CUB=1 runs the Python bench without CUB.
set -uo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
out="${OUT:-gpu-logs}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
export PYTHONUNBUFFERED=1
status=0
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$out/gpu.txt"

if [ -n "${JMP_BUILD:-}" ]; then
  echo "== install jax_mergepath (CUDA on)"
  bash "$repo/perf/gpu/install.sh" 2>&1 | tee "$out/build.log" || { echo "BUILD FAILED"; exit 1; }
fi

cub_args=()
if [ -z "${JMP_SKIP_CUB:-}" ]; then
  echo "== cub_bench build"
  if nvcc -O3 -std=c++17 -arch=sm_90 "$repo/perf/cub_bench.cu" -o /tmp/cub_bench \
      2>&1 | tee "$out/cub_build.log"; then
    echo "== cub_bench smoke run (checks at 2^20, small timings)"
    /tmp/cub_bench --sizes 20 --seg-log2 20 --merge-log2 20 --repeats 5 2>&1 \
      | tee "$out/cub_smoke.txt" || status=1
    cub_args=(--cub /tmp/cub_bench)
  else
    echo "CUB BUILD FAILED: bench runs without CUB"
    status=1
  fi
fi

echo "== bench"
cd "$repo"  # perf moves the root behind site-packages: the installed package is measured
python3 -m perf.bench --family all "${cub_args[@]}" --json "$out/bench.json" "$@" \
  2>&1 | tee "$out/bench.txt" || status=1
exit $status
