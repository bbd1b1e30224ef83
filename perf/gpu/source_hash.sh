#!/usr/bin/env bash
# source_hash.sh: prints the hash of what a CUDA wheel is built from (CMakeLists.txt,
# pyproject.toml and every file of ffi/ and jax_mergepath/ but build outputs), run from the repo
# root. build_wheel.sh and wheel_ab.sh write it to .whl/SOURCE beside a wheel; install.sh installs
# a carried wheel only when it matches the tree it runs in. (perf/ is not in the wheel, so an
# edit there keeps a carried wheel valid.)
set -euo pipefail
cat CMakeLists.txt pyproject.toml \
  $(find ffi jax_mergepath -type f -not -name "*.pyc" -not -name "*.so" | LC_ALL=C sort) \
  | sha1sum | cut -c1-40
