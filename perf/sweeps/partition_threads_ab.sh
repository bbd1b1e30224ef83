#!/usr/bin/env bash
# partition_threads_ab.sh: A/B of the partition kernels' block sizes (tuning/merge.h,
# kPartitionThreads; tuning/sort.h kQuadPartitionThreads) in quad_sweep.cu: three builds of this
# tree, the knobs set by their -D overrides (A: quad split 256, two-way partition 256; B: 64 and
# 256, the defaults; C: 64 and 64), then a quad pass and its partitions alone timed, two rounds
# alternating: 8-byte keys with int32 positions, 2^24 of them (quad_sweep's "wide" mode takes
# half of 2^25) in runs of 17408 and 69632 (the quad passes of an argsort of int64 / float64
# 2^24), and int32 keys at 2^27 in runs of 2^15.
# Usage (repo root, GPU machine): bash perf/sweeps/partition_threads_ab.sh
# Logs go to $OUT (or ./gpu-logs): partition_threads_ab.txt, build_<variant>.log.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
build() {  # variant, quad split threads, two-way partition threads
  nvcc -O3 -std=c++17 -arch=sm_90 --expt-relaxed-constexpr -Iffi/include -Iffi/cuda \
    -DJMP_QUAD_PARTITION_THREADS="$2" -DJMP_PARTITION_THREADS="$3" \
    perf/sweeps/quad_sweep.cu -o "/tmp/quad_sweep_$1" > "$out/build_$1.log" 2>&1 ||
    echo "BUILD $1 FAILED (quad $2, partition $3): $out/build_$1.log"
}
build A 256 256 & build B 64 256 & build C 64 64 & wait
for round in 1 2; do
  for v in A B C; do
    [ -x "/tmp/quad_sweep_$v" ] || continue
    echo "=== $v round $round"
    "/tmp/quad_sweep_$v" 25 17408 10 wide | grep -E "two 2-way|quad 256x11 min 3|quad_sweep"
    "/tmp/quad_sweep_$v" 25 69632 10 wide | grep -E "quad 256x11 min 3"
    "/tmp/quad_sweep_$v" 27 15 10 int32 | grep -E "quad 256x33|two 2-way"
  done
done | tee "$out/partition_threads_ab.txt"
