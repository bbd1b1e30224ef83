#!/usr/bin/env bash
# build_wheel.sh: builds the CUDA wheel for the GPU machine's Python (3.12) here, from a clean
# clone of HEAD, into .whl/ (git-ignored via .git/info/exclude), with .whl/SOURCE for install.sh.
# Needs a python3.12 venv with build-requirements.txt: PY312=/path/to/venv/bin/python.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
src=$(mktemp -d)
git clone -q "$repo" "$src/src"
cd "$src/src"
mkdir -p "$repo/.whl" && rm -f "$repo/.whl"/jax_mergepath-*.whl
JMP_CUDA=ON "${PY312:?set PY312}" -m pip wheel --no-build-isolation --no-deps -w "$repo/.whl" .
bash tests/gpu/source_hash.sh > "$repo/.whl/SOURCE"
