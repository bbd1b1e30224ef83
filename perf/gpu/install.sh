#!/usr/bin/env bash
# install.sh: installs jax_mergepath (CUDA on) on a GPU machine: the wheel carried in .whl/ when
# it was built from these very sources (.whl/SOURCE holds perf/gpu/source_hash.sh's hash at
# build time; build_wheel.sh and wheel_ab.sh write both), else a build here.
#   bash perf/gpu/install.sh     # from anywhere; works on the repository root
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$repo"
py_tag="cp$(python3 -c 'import sys; print(f"{sys.version_info[0]}{sys.version_info[1]}")')"
wheel=$(ls .whl/jax_mergepath-*-"$py_tag"-*.whl 2>/dev/null | head -1 || true)
if [ -n "$wheel" ] && [ -f .whl/SOURCE ] && [ "$(cat .whl/SOURCE)" = "$(bash perf/gpu/source_hash.sh)" ]; then
  echo "installing the carried wheel $wheel"
  python3 -m pip install --no-deps --force-reinstall -q "$wheel"
else
  echo "no carried wheel for these sources ($py_tag): building here"
  JMP_CUDA=ON python3 -m pip install --no-build-isolation --no-deps -q .
fi
