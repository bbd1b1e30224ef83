#!/usr/bin/env bash
# wheel_ab.sh: old / new on one GPU machine, whole package: builds the CUDA wheels of an old
# tree (old_tree/, made here by `mkdir old_tree && git archive HEAD | tar -x -C old_tree` and
# carried: the GPU machine's copy has no git history) and of the working tree (new) side by
# side, then alternates them ROUNDS times (default 2) over perf/gpu/probe_cases.py cases (each
# case's best of three runs of back-to-back calls, time per call), and leaves the new wheel and
# its .whl/SOURCE hash in $OUT/whl (carry it as .whl to run the suite on it: install.sh).
# Usage (repo root, GPU machine, old_tree/ carried): bash perf/gpu/wheel_ab.sh "CASE[:CALLS] ..."
#   e.g. ROUNDS=2 bash perf/gpu/wheel_ab.sh "sort_i32_20:300 is_sorted_20:300 sort_i32:10"
set -uo pipefail
cases="${1:?usage: bash perf/gpu/wheel_ab.sh "CASE[:CALLS] ..."}"
out="${OUT:-gpu-logs}"; mkdir -p "$out/whl"; out="$(cd "$out" && pwd)"
repo="$(pwd)"
old="$repo/${OLD_TREE:-old_tree}"
[ -f "$old/pyproject.toml" ] || { echo "no old tree at $old"; exit 1; }
build() {  # $1: source tree, $2: wheel folder (emptied first)
  rm -rf "$2" && mkdir -p "$2" &&
    (cd "$1" && JMP_CUDA=ON python3 -m pip wheel -q --no-build-isolation --no-deps -w "$2" .)
}
build "$old" /tmp/wheel_old > "$out/build_old.log" 2>&1 &
old_build=$!
build "$repo" "$out/whl" > "$out/build_new.log" 2>&1 || { echo "NEW BUILD FAILED"; kill "$old_build"; exit 1; }
wait "$old_build" || { echo "OLD BUILD FAILED"; exit 1; }
bash perf/gpu/source_hash.sh > "$out/whl/SOURCE"
the_wheel() {  # the one wheel in folder $1
  local found=("$1"/*.whl)
  [ "${#found[@]}" = 1 ] && [ -f "${found[0]}" ] || { echo "not one wheel in $1" >&2; return 1; }
  echo "${found[0]}"
}
old_wheel=$(the_wheel /tmp/wheel_old) && new_wheel=$(the_wheel "$out/whl") || exit 1
# The cases are this tree's probe_cases.py for both wheels (it imports the installed package).
for round in $(seq "${ROUNDS:-2}"); do
  for side in old new; do
    if [ "$side" = old ]; then wheel="$old_wheel"; else wheel="$new_wheel"; fi
    python3 -m pip install -q --no-deps --force-reinstall "$wheel" > /dev/null || {
      echo "INSTALL FAILED: $wheel"; exit 1; }
    for spec in $cases; do
      name="${spec%%:*}"; calls="${spec#*:}"; [ "$calls" = "$spec" ] && calls=100
      echo "round $round $side: $(python3 perf/gpu/probe_cases.py "$name" --calls "$calls" 2>&1 | tail -1)"
    done
  done
done
