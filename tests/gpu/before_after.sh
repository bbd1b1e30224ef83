#!/usr/bin/env bash
# before_after.sh: times the production merge kernels of two source trees with the same harness
# (tests/gpu/tile_sweep.cu, and with QUAD_ARGS quad_sweep.cu, of each tree), back to back on
# one GPU, and counts the SASS instructions of their tiled merge kernels: how a change of the
# merge core is checked for speed.
# Usage (repo root, GPU machine): bash tests/gpu/before_after.sh OLD_TREE [log2_total=27]
# OLD_TREE holds an earlier commit's ffi/ and tests/gpu/ (git archive <commit> ffi tests/gpu).
# Env: SWEEP_ARGS (tile_sweep's arguments after log2_total; default "20": every variant, 20
# repeats; e.g. "20 6" runs variant 6 alone), ROUNDS (default 2), QUAD_ARGS (';'-separated
# quad_sweep argument lists, e.g. "27 15 10 pairs;26 15 10 wide": each runs for both trees,
# every round), SEARCH_ARGS (the same for search_sweep.cu, e.g. "23 20;24 20"), SWEEPS_BUILT
# (set when /tmp/{sweep,quad,search}_{old,new} exist).
set -uo pipefail
old="$1"; log2="${2:-27}"
out="${OUT:-gpu-logs}"; mkdir -p "$out"
flags=(-O3 -std=c++17 -arch=sm_90 --expt-relaxed-constexpr -Iffi/include -Iffi/cuda)
if [ -z "${SWEEPS_BUILT:-}" ]; then
  (cd "$old" && nvcc "${flags[@]}" tests/gpu/tile_sweep.cu -o /tmp/sweep_old) &
  nvcc "${flags[@]}" tests/gpu/tile_sweep.cu -o /tmp/sweep_new &
  if [ -n "${QUAD_ARGS:-}" ]; then
    (cd "$old" && nvcc "${flags[@]}" tests/gpu/quad_sweep.cu -o /tmp/quad_old) &
    nvcc "${flags[@]}" tests/gpu/quad_sweep.cu -o /tmp/quad_new &
  fi
  if [ -n "${SEARCH_ARGS:-}" ]; then
    (cd "$old" && nvcc "${flags[@]}" tests/gpu/search_sweep.cu -o /tmp/search_old) &
    nvcc "${flags[@]}" tests/gpu/search_sweep.cu -o /tmp/search_new &
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
