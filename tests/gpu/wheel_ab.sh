#!/usr/bin/env bash
# wheel_ab.sh: old / new on one GPU machine, whole package: builds the CUDA wheels of an old
# tree (old_tree/, made here by `mkdir old_tree && git archive HEAD | tar -x -C old_tree` and
# carried: the GPU machine's copy has no git history) and of the working tree (new) side by
# side, then alternates them ROUNDS times (default 2) over probe_cases.py cases (each's time per
# call of back-to-back calls), and leaves the new wheel and its .whl/SOURCE hash in $OUT/whl
# (carry it as .whl to run the suite on it: install.sh).
# Usage (repo root, GPU machine, old_tree/ carried): bash tests/gpu/wheel_ab.sh "CASE[:CALLS] ..."
#   e.g. ROUNDS=2 bash tests/gpu/wheel_ab.sh "sort_i32_20:300 is_sorted_20:300 sort_i32:10"
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out/whl"
repo="$(pwd)"
old="$repo/${OLD_TREE:-old_tree}"
[ -f "$old/pyproject.toml" ] || { echo "no old tree at $old"; exit 1; }
build() {  # $1: source tree, $2: wheel folder
  (cd "$1" && JMP_CUDA=ON python3 -m pip wheel -q --no-build-isolation --no-deps -w "$2" .)
}
build "$old" /tmp/wheel_old > "$out/build_old.log" 2>&1 &
build "$repo" "$out/whl" > "$out/build_new.log" 2>&1 || { echo "NEW BUILD FAILED"; exit 1; }
wait $! || { echo "OLD BUILD FAILED"; exit 1; }
cat CMakeLists.txt pyproject.toml $(find ffi jax_mergepath -type f -not -name "*.pyc" -not -name "*.so" | LC_ALL=C sort) \
  | sha1sum | cut -c1-40 > "$out/whl/SOURCE"
cd tests  # import the installed package, not the source tree
for round in $(seq "${ROUNDS:-2}"); do
  for side in old new; do
    wheel=$([ "$side" = old ] && ls /tmp/wheel_old/*.whl || ls "$out"/whl/*.whl)
    python3 -m pip install -q --no-deps --force-reinstall "$wheel" > /dev/null
    for spec in $1; do
      name="${spec%%:*}"; calls="${spec#*:}"; [ "$calls" = "$spec" ] && calls=100
      echo "round $round $side: $(python3 gpu/probe_cases.py "$name" --calls "$calls" 2>&1 | tail -1)"
    done
  done
done
