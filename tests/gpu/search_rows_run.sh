#!/usr/bin/env bash
# search_rows_run.sh: one GPU run for searchsorted's short rows in the rows kernel: install (the
# carried wheel or a build), the test files in JMP_TEST_ARGS (default: test_searchsorted.py
# test_sort_gpu.py), compute-sanitizer memcheck and racecheck of sanitizer_cases.py's
# searchsorted cases, the bench's searchsorted cases, species_energy's GPU time per step by
# kernel, and bf16_fix_probe.py (fuzz case 1000445: the CPU device's bfloat16 flush). Every step has a timeout so
# the run fits one device call (JMP_SKIP_SANITIZER=1 skips compute-sanitizer). Logs to $OUT (or
# ./gpu-logs); non-zero exit when a step failed.
# shellcheck source=run_prologue.sh
source "$(dirname "$0")/run_prologue.sh"  # out, repo, the install, cd tests/, status=0
step() {  # step SECONDS LOG command...: runs it, keeps its output, shows its tail
  local limit=$1 log=$2; shift 2
  timeout "$limit" "$@" > "$out/$log" 2>&1 || { echo "FAILED (rc $?): $*"; status=1; }
  tail -"${TAIL:-6}" "$out/$log"
}
# shellcheck disable=SC2086
step "${JMP_TEST_SECONDS:-240}" pytest.log python3 -m pytest -q -p no:cacheprovider \
  ${JMP_TEST_ARGS:-test_searchsorted.py test_sort_gpu.py}
[ -n "${JMP_SKIP_SANITIZER:-}" ] || for tool in memcheck racecheck; do
  JMP_SANITIZER_CASES=search step 90 "sanitizer-$tool.log" compute-sanitizer --tool "$tool" \
    --error-exitcode 3 --target-processes all python3 gpu/sanitizer_cases.py
done
# (from tests/: the repository root would import the unbuilt source package)
TAIL=40 step 150 bench.txt python3 -m jax_mergepath.bench --family sort --case searchsorted \
  --no-torch --no-memory --quiet
TAIL=30 step 90 species_energy.txt python3 gpu/example_timeline.py species_energy --size gpu
TAIL=40 step 90 bf16_probe.txt python3 gpu/bf16_fix_probe.py
exit $status
