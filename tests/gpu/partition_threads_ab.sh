#!/usr/bin/env bash
# partition_threads_ab.sh: A/B of the partition kernels' block size in tests/gpu/quad_sweep.cu.
# Builds three variants from copies of ffi/ and tests/gpu/ with the constants edited by sed
# (A: kQuadPartitionThreads 256 and kPartitionThreads 256, the repo before the change; B: quad 64,
# the repo since; C: both 64), then times a quad pass and its partitions alone, two rounds
# alternating: 8-byte keys with int32 positions at 2^24 in runs of 17408 and 69632 (argsort of
# int64 / float64 2^24's quad passes), int32 keys at 2^27 in runs of 2^15. Logs go to $OUT (or
# /tmp/out). kPartitionThreads is matched at 256, its value in the repo.
# Usage (repo root, GPU machine): bash tests/gpu/partition_threads_ab.sh
set -u
B=${OUT:-/tmp/out}; mkdir -p $B
build() {  # name, quad threads, partition threads
  d=/tmp/v_$1; rm -rf $d; mkdir -p $d/tests; cp -r ffi $d/; cp -r tests/gpu $d/tests/
  sed -i "s/inline constexpr int kQuadPartitionThreads = [0-9]*;/inline constexpr int kQuadPartitionThreads = $2;/" $d/ffi/cuda/quad_merge.cuh
  sed -i "s/inline constexpr int kPartitionThreads = 256;/inline constexpr int kPartitionThreads = $3;/" $d/ffi/include/jax_mergepath/tuning.h
  grep -h "kQuadPartitionThreads = \|kPartitionThreads = " $d/ffi/cuda/quad_merge.cuh $d/ffi/include/jax_mergepath/tuning.h
  nvcc -O3 -std=c++17 -arch=sm_90 --expt-relaxed-constexpr -I$d/ffi/include -I$d/ffi/cuda $d/tests/gpu/quad_sweep.cu -o /tmp/qs_$1 > $B/build_$1.log 2>&1 || echo "BUILD $1 FAILED"
}
build A 256 256 & build B 64 256 & build C 64 64 & wait
for round in 1 2; do
  for v in A B C; do
    echo "=== $v round $round"
    /tmp/qs_$v 25 17408 10 wide | grep -E "two 2-way|quad 256x11 min 3|quad_sweep"
    /tmp/qs_$v 25 69632 10 wide | grep -E "quad 256x11 min 3"
    /tmp/qs_$v 27 15 10 int32 | grep -E "quad 256x33|two 2-way"
  done
done
