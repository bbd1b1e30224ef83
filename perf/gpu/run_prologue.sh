# run_prologue.sh: the opening of a one-call GPU run script (examples_run.sh, ragged_run.sh),
# sourced by it: logs go to $OUT (or ./gpu-logs), made absolute in `out`; `repo` is the repository
# root and the working directory (Python runs perf's scripts and `-m perf.bench` from there; pytest
# from tests/, where the unbuilt source package is not on sys.path); the GPU's name to
# $out/gpu.txt; jax_mergepath installed (install.sh: the carried wheel, or a build), exiting on
# failure; status=0.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"; out="$(cd "$out" && pwd)"
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$out/gpu.txt"
bash perf/gpu/install.sh > "$out/build.log" 2>&1 \
  || { tail -30 "$out/build.log"; echo "BUILD FAILED"; exit 1; }
status=0
