#!/usr/bin/env bash
# before_after.sh: times the production merge kernels of two source trees with the same harness
# (tests/gpu/tile_sweep.cu of each tree), back to back on one GPU, and counts the SASS
# instructions of their tiled merge kernels: how a refactor of the merge core is checked for
# speed. Usage (repo root, GPU machine): bash tests/gpu/before_after.sh OLD_TREE [log2_total=27]
# OLD_TREE holds an earlier commit's ffi/ and tests/gpu/tile_sweep.cu (git archive <commit>).
set -uo pipefail
old="$1"; log2="${2:-27}"
out="${OUT:-gpu-logs}"; mkdir -p "$out"
flags=(-O3 -std=c++17 -arch=sm_90 --expt-relaxed-constexpr)
if [ -z "${SWEEPS_BUILT:-}" ]; then  # (set it when /tmp/sweep_old and /tmp/sweep_new exist)
  (cd "$old" && nvcc "${flags[@]}" -Iffi/include -Iffi/cuda tests/gpu/tile_sweep.cu -o /tmp/sweep_old) &
  nvcc "${flags[@]}" -Iffi/include -Iffi/cuda tests/gpu/tile_sweep.cu -o /tmp/sweep_new
  wait
fi
for round in 1 2; do
  for v in old new; do
    echo "== $v (round $round)"; /tmp/sweep_$v "$log2" 20 | tee -a "$out/before_after.txt"
  done
done
for v in old new; do
  cuobjdump -sass /tmp/sweep_$v > "/tmp/sweep_$v.sass" 2>/dev/null || continue
  echo "== $v: SASS instructions per tiled merge kernel"
  awk '/Function :/{name=$3} /^ +\/\*[0-9a-f]+\*\//{count[name]++} END{for (n in count) if (n ~ /merge_tiled/) print count[n], n}' \
    "/tmp/sweep_$v.sass" | sort -k2 | cut -c1-170
done
