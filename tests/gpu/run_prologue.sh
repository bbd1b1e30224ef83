# run_prologue.sh: the opening of the one-call GPU run scripts (examples_run.sh,
# search_rows_run.sh), sourced by them: logs go to $OUT (or ./gpu-logs), made absolute in `out`;
# `repo` is the repository root; the GPU's name to $out/gpu.txt; jax_mergepath installed
# (install.sh: the carried wheel, or a build), exiting on failure; then cd to tests/ (import the
# installed package, not the source tree) with status=0.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"; out="$(cd "$out" && pwd)"
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
repo="$(cd "$(dirname "$0")/../.." && pwd)"
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$out/gpu.txt"
bash "$repo/tests/gpu/install.sh" > "$out/build.log" 2>&1 \
  || { tail -30 "$out/build.log"; echo "BUILD FAILED"; exit 1; }
cd "$repo/tests"
status=0
