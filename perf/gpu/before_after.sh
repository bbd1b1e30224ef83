#!/usr/bin/env bash
# before_after.sh: times the production merge kernels of two source trees with the same harness
# (tile_sweep.cu, and with QUAD_ARGS quad_sweep.cu, of each tree), back to back on one GPU, and
# counts the SASS instructions of their tiled merge kernels: how a change of the merge core is
# checked for speed.
# Usage (repo root, GPU machine): bash perf/gpu/before_after.sh OLD_TREE [log2_total=27]
# OLD_TREE holds an earlier commit's ffi/ and sweeps (git archive <commit> ffi perf/sweeps; a
# commit before the lab moved to perf/: git archive <commit> ffi tests/gpu); each tree's sweeps
# are built from its own perf/sweeps/, or tests/gpu/ where that is what it has.
# Env: SWEEP_ARGS (tile_sweep's arguments after log2_total; default "20": every variant, 20
# repeats; e.g. "20 6" runs variant 6 alone), ROUNDS (default 2), QUAD_ARGS (';'-separated
# quad_sweep argument lists, e.g. "27 15 10 pairs;26 15 10 wide": each runs for both trees,
# every round), SEARCH_ARGS (the same for search_sweep.cu, e.g. "23 20;24 20"), SWEEPS_BUILT
# (set when /tmp/{sweep,quad,search}_{old,new} exist).
set -uo pipefail
old="$1"; log2="${2:-27}"
out="${OUT:-gpu-logs}"; mkdir -p "$out"
flags=(-O3 -std=c++17 -arch=sm_90 --expt-relaxed-constexpr -Iffi/include -Iffi/cuda)
sweep() {  # sweep TREE FILE: FILE's path in TREE, relative to TREE
  if [ -f "$1/perf/sweeps/$2" ]; then echo "perf/sweeps/$2"; else echo "tests/gpu/$2"; fi
}
build() {  # build TREE FILE BINARY
  (cd "$1" && nvcc "${flags[@]}" "$(sweep "$1" "$2")" -o "$3") || echo "BUILD FAILED: $1 $2"
}
if [ -z "${SWEEPS_BUILT:-}" ]; then
  build "$old" tile_sweep.cu /tmp/sweep_old & build . tile_sweep.cu /tmp/sweep_new &
  if [ -n "${QUAD_ARGS:-}" ]; then
    build "$old" quad_sweep.cu /tmp/quad_old & build . quad_sweep.cu /tmp/quad_new &
  fi
  if [ -n "${SEARCH_ARGS:-}" ]; then
    build "$old" search_sweep.cu /tmp/search_old & build . search_sweep.cu /tmp/search_new &
  fi
  wait
fi
IFS=';' read -r -a quad_runs <<< "${QUAD_ARGS:-}"
IFS=';' read -r -a search_runs <<< "${SEARCH_ARGS:-}"
for round in $(seq 1 "${ROUNDS:-2}"); do
  for v in old new; do
    echo "== $v (round $round)"
    # shellcheck disable=SC2086  # (SWEEP_ARGS: several arguments)
    /tmp/sweep_$v "$log2" ${SWEEP_ARGS:-20} | tee -a "$out/before_after.txt"
    for args in ${quad_runs[@]+"${quad_runs[@]}"}; do
      # shellcheck disable=SC2086
      /tmp/quad_$v $args | tee -a "$out/before_after.txt"
    done
    for args in ${search_runs[@]+"${search_runs[@]}"}; do
      # shellcheck disable=SC2086
      /tmp/search_$v $args | tee -a "$out/before_after.txt"
    done
  done
done
for v in old new; do
  cuobjdump -sass /tmp/sweep_$v > "/tmp/sweep_$v.sass" 2>/dev/null || continue
  echo "== $v: SASS instructions per tiled merge kernel"
  awk '/Function :/{name=$3} /^ +\/\*[0-9a-f]+\*\//{count[name]++} END{for (n in count) if (n ~ /merge_tiled/) print count[n], n}' \
    "/tmp/sweep_$v.sass" | sort -k2 | cut -c1-170
done
