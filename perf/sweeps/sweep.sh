#!/usr/bin/env bash
# sweep.sh: builds tile_sweep.cu (tile-policy timings of the production merge kernels, each
# checked against std::merge), runs it, then profiles the named variants with ncu.
# Usage (repo root, GPU machine): bash perf/sweeps/sweep.sh [log2_total=27] [variant ...]
# Logs go to $OUT (or ./gpu-logs): sweep.txt, ncu-<variant>.txt.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
log2_total="${1:-27}"; shift || true
bin=/tmp/tile_sweep
nvcc -O3 -std=c++17 -arch=sm_90 --expt-relaxed-constexpr -Iffi/include -Iffi/cuda \
  perf/sweeps/tile_sweep.cu -o "$bin" || { echo "SWEEP BUILD FAILED"; exit 1; }
"$bin" "$log2_total" 20 | tee "$out/sweep.txt"
for v in "$@"; do
  ncu --kernel-name regex:'partition_kernel|merge_tiled_kernel' \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    --section SchedulerStats --section MemoryWorkloadAnalysis \
    "$bin" "$log2_total" 1 "$v" > "$out/ncu-$v.txt" 2>&1
  echo "ncu variant $v rc=$?"
done
