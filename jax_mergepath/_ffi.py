"""Loads the native modules and registers their XLA FFI targets.

Contract: importing this never fails because CUDA is missing; `HAS_CUDA` says whether the CUDA
module was built and loaded. Targets are registered for platform "cpu" and "CUDA" (spelled so:
other spellings register silently and are never found).
"""

from __future__ import annotations

import jax

from jax_mergepath import _cpu

try:  # the CUDA module exists only when the package was built with the CUDA toolkit
    from jax_mergepath import _cuda  # type: ignore[attr-defined]
except ImportError as err:  # pragma: no cover - depends on the build
    _cuda = None
    CUDA_IMPORT_ERROR: str | None = str(err)
else:
    CUDA_IMPORT_ERROR = None

HAS_CUDA = _cuda is not None

for _name, _capsule in _cpu.registrations().items():
    jax.ffi.register_ffi_target(_name, _capsule, platform="cpu")
if _cuda is not None:
    for _name, _capsule in _cuda.registrations().items():
        jax.ffi.register_ffi_target(_name, _capsule, platform="CUDA")


def merge_workspace_elements(key_bytes: int, payload_bytes: int, rows: int, row_length: int) -> int:
    """int32 elements of the CUDA merge's partition workspace (tile policy from tuning.h)."""
    return int(_cpu.merge_workspace_elements(key_bytes, payload_bytes, rows, row_length))
