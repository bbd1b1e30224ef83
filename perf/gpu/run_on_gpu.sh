#!/usr/bin/env bash
# run_on_gpu.sh: the one GPU run: install with CUDA (install.sh: the carried wheel or a build),
# run the test suite (GPU cases included), a small set under compute-sanitizer memcheck +
# racecheck, then the benchmark.
# Usage (repo root, on a GPU machine with jax[cuda], nanobind, scikit-build-core installed):
#   bash perf/gpu/run_on_gpu.sh [bench args...]     # logs go to $OUT (or ./gpu-logs)
# Env: JMP_TEST_ARGS (test files relative to tests/, default all), JMP_TEST_WORKERS
# (pytest-xdist processes, e.g. 8 for the whole suite), JMP_SKIP_TESTS / JMP_SKIP_SANITIZER /
# JMP_SKIP_BENCH, JMP_SANITIZER_TOOLS (default "memcheck racecheck") and JMP_SANITIZER_CASES
# (tests/tools/sanitizer_cases.py: racecheck of "base" and of "wide64" take one device call each, ~9
# and ~2.5 min; "search": searchsorted alone); a CUDA wheel carried in .whl/
# (perf/gpu/build_wheel.sh) is installed instead of building when it matches.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"; out="$(cd "$out" && pwd)"
cd "$(dirname "$0")/../.."  # the repository root
export PYTHONUNBUFFERED=1
status=0
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$out/gpu.txt"
echo "== build"
bash perf/gpu/install.sh 2>&1 | tee "$out/build.log" || { echo "BUILD FAILED"; exit 1; }
# From tests/: the repository root would import the unbuilt source package.
(cd tests && python3 -c "import jax, jax_mergepath as j; print('HAS_CUDA', j.HAS_CUDA, jax.devices())")
echo "== tests"
if [ -z "${JMP_SKIP_TESTS:-}" ]; then
  # JMP_TEST_WORKERS=N: N pytest-xdist processes share the GPU (memory on demand).
  workers=()
  if [ -n "${JMP_TEST_WORKERS:-}" ]; then
    workers=(-n "$JMP_TEST_WORKERS"); export XLA_PYTHON_CLIENT_PREALLOCATE=false
  fi
  # shellcheck disable=SC2086  # (JMP_TEST_ARGS: several arguments)
  (cd tests && python3 -m pytest -q --maxfail=20 -p no:cacheprovider \
    ${workers[@]+"${workers[@]}"} ${JMP_TEST_ARGS:-.}) 2>&1 \
    | tee "$out/pytest.log" | tail -25 || status=1
fi
echo "== compute-sanitizer"
if [ -z "${JMP_SKIP_SANITIZER:-}" ]; then
  for tool in ${JMP_SANITIZER_TOOLS:-memcheck racecheck}; do
    XLA_PYTHON_CLIENT_PREALLOCATE=false compute-sanitizer --tool "$tool" --error-exitcode 3 \
      --target-processes all python3 tests/tools/sanitizer_cases.py > "$out/sanitizer-$tool.log" 2>&1
    rc=$?; tail -3 "$out/sanitizer-$tool.log"; echo "sanitizer $tool rc=$rc"
    [ "$rc" = 0 ] || status=1
  done
fi
echo "== bench"
if [ -z "${JMP_SKIP_BENCH:-}" ]; then
  python3 -m perf.bench "$@" 2>&1 | tee "$out/bench.txt" || status=1
fi
exit $status
