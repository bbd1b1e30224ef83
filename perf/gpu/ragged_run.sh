#!/usr/bin/env bash
# ragged_run.sh: the ragged merge's GPU checks and timings in one call (about 5 minutes on an
# H200 with the build), on the GPU machine from the repository root; installs the package with
# CUDA first (perf/gpu/install.sh). Logs go to $OUT (or ./gpu-logs):
#   ragged_tests.log   pytest on the GPU: test_merge_ragged.py (against a host reference) and
#                      test_merge_gpu.py's ragged cases (GPU = CPU bit for bit, many tiles)
#   gpu_suite.log      tests/gpu_suite.py: every test marked requires_gpu
#   ragged_<tool>.log  compute-sanitizer memcheck and racecheck of sanitizer_cases.py's ragged
#                      cases: "rc=0" is clean
#   ragged_bench.txt   python -m perf.received_runs_bench --log2 28 --trace, keys alone and with
#                      int32 values: the ragged merge against the pairwise levels and the sort
# Env: RAGGED_SKIP_SUITE / _BENCH; RAGGED_TEST_WORKERS (pytest-xdist processes, default 14).
# shellcheck source=run_prologue.sh
source "$(dirname "$0")/run_prologue.sh"  # out, repo (the working directory), the install, status=0
workers="${RAGGED_TEST_WORKERS:-14}"
echo "== ragged tests"
(cd tests && timeout 180 python3 -m pytest -q -rf -p no:cacheprovider -n "$workers" \
   test_merge_ragged.py test_merge_gpu.py -k ragged) > "$out/ragged_tests.log" 2>&1 || status=1
tail -5 "$out/ragged_tests.log"
if [ -z "${RAGGED_SKIP_SUITE:-}" ]; then
  echo "== GPU suite"
  timeout 300 python3 tests/gpu_suite.py -q -rf -p no:cacheprovider -n "$workers" \
    > "$out/gpu_suite.log" 2>&1 || status=1
  tail -14 "$out/gpu_suite.log"
fi
echo "== compute-sanitizer"
for tool in memcheck racecheck; do
  JMP_SANITIZER_CASES=ragged timeout 120 compute-sanitizer --tool "$tool" --error-exitcode 3 \
    --target-processes all python3 tests/tools/sanitizer_cases.py > "$out/ragged_$tool.log" 2>&1
  rc=$?; echo "sanitizer $tool rc=$rc"; [ "$rc" = 0 ] || status=1
done
if [ -z "${RAGGED_SKIP_BENCH:-}" ]; then
  echo "== bench"
  # (from a copy of perf/ outside the repository root, whose unbuilt package would shadow it)
  rm -rf /tmp/ragged_bench && mkdir -p /tmp/ragged_bench && cp -r perf /tmp/ragged_bench/
  (cd /tmp/ragged_bench && python3 -m perf.received_runs_bench --log2 28 --trace \
     && python3 -m perf.received_runs_bench --log2 28 --values --dtypes int32 --trace) \
    2>&1 | tee "$out/ragged_bench.txt" || status=1
fi
exit $status
