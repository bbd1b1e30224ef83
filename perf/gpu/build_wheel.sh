#!/usr/bin/env bash
# build_wheel.sh: builds the CUDA wheel for the GPU machine's Python (3.12) here, from a clean
# clone of HEAD (commit first: uncommitted changes are not in it), into .whl/ (git-ignored), with
# .whl/SOURCE (source_hash.sh of that clone) for install.sh, which installs the wheel on the GPU
# machine only when the tree there hashes the same.
# Needs a python3.12 venv with build-requirements.txt and nvcc: PY312=/path/to/venv/bin/python.
#   PY312=... bash perf/gpu/build_wheel.sh
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
src=$(mktemp -d)
git clone -q "$repo" "$src/src"
cd "$src/src"
mkdir -p "$repo/.whl" && rm -f "$repo/.whl"/jax_mergepath-*.whl
JMP_CUDA=ON "${PY312:?set PY312}" -m pip wheel --no-build-isolation --no-deps -w "$repo/.whl" .
bash perf/gpu/source_hash.sh > "$repo/.whl/SOURCE"
