"""Loads the native modules and registers their XLA FFI targets.

Contract: importing this never fails because CUDA is missing; `HAS_CUDA` says whether the CUDA
module was built and loaded, `require_cuda_target` explains at lowering time why a GPU call
cannot run. A missing CPU module (the source tree imported without a build) raises an
ImportError that says how to build. Targets are registered for platform "cpu" and "CUDA"
(spelled so: other spellings register silently and are never found).
"""

from __future__ import annotations

import os
from typing import Any

import jax

_SOURCE_DIR = os.path.dirname(os.path.abspath(__file__))

try:
    from jax_mergepath import _cpu
except ImportError as err:  # the package's source folder imported without its build
    raise ImportError(
        f"jax_mergepath's native module _cpu is missing from {_SOURCE_DIR}: this is the "
        "package's source folder, imported without a build (running Python from the "
        "repository root puts it first on sys.path). Build it in place with "
        "`pip install -e .` from the repository root (README.md), or run from another "
        f"directory with the package installed. (Import error: {err})"
    ) from err

try:  # the CUDA module exists only when the package was built with the CUDA toolkit
    from jax_mergepath import _cuda  # type: ignore[attr-defined]
except ImportError as err:  # pragma: no cover - depends on the build
    _cuda = None
    CUDA_IMPORT_ERROR: str | None = str(err)
else:
    CUDA_IMPORT_ERROR = None

HAS_CUDA = _cuda is not None

_CPU_REGISTRATIONS = _cpu.registrations()
_CUDA_REGISTRATIONS = _cuda.registrations() if _cuda is not None else {}
CPU_TARGETS = frozenset(_CPU_REGISTRATIONS)
CUDA_TARGETS = frozenset(_CUDA_REGISTRATIONS)

for _name, _capsule in _CPU_REGISTRATIONS.items():
    jax.ffi.register_ffi_target(_name, _capsule, platform="cpu")
for _name, _capsule in _CUDA_REGISTRATIONS.items():
    jax.ffi.register_ffi_target(_name, _capsule, platform="CUDA")
# Every target treats its leading dimensions as independent rows: XLA may run a call on each
# device's shard of batch-sharded operands, with no collectives (_lowering.py sets the
# attributes). (jax >= 0.5 has the call; without it sharded batches are gathered.)
if hasattr(jax.ffi, "register_ffi_target_as_batch_partitionable"):
    for _name in CPU_TARGETS | CUDA_TARGETS:
        jax.ffi.register_ffi_target_as_batch_partitionable(_name)


def _has_gpu_backend() -> bool:
    try:
        return bool(jax.devices("gpu"))
    except RuntimeError:
        return False


def require_cuda_target(target: str, op: str) -> None:
    """Raise, at lowering time, a clear error when a GPU call cannot run: the package was built
    without CUDA, or this operation has no CUDA kernels yet. (Exporting for CUDA from a machine
    without a GPU, jax.export's cross-lowering, needs no CUDA module and is let through.)"""
    if not _has_gpu_backend():
        return
    if _cuda is None:
        raise RuntimeError(
            f"jax_mergepath.{op} was called on a GPU, but this jax_mergepath was built without "
            "CUDA (the _cuda module did not load"
            + (f": {CUDA_IMPORT_ERROR}" if CUDA_IMPORT_ERROR else "")
            + "). Rebuild with the CUDA toolkit (nvcc) on PATH: `JMP_CUDA=ON pip install -e .`, "
            "or run on the CPU (JAX_PLATFORMS=cpu / jax.default_device)."
        )
    if target not in CUDA_TARGETS:
        raise NotImplementedError(
            f"jax_mergepath.{op} has no CUDA kernels in this build yet (FFI target {target}); "
            "run it on the CPU (jax.default_device(jax.devices('cpu')[0]))."
        )


def merge_workspace_elements(
    key_bytes: int, payload: int, value_bytes: int, rows: int, m: int, n: int
) -> int:
    """int32 elements of the CUDA merge's partition workspace (tile policy from tuning.h)."""
    return int(_cpu.merge_workspace_elements(key_bytes, payload, value_bytes, rows, m, n))


def sort_partition_elements(
    key_bytes: int, payload: int, value_bytes: int, rows: int, length: int
) -> int:
    """int32 elements of the CUDA sort's partition workspace (tuning.h)."""
    return int(_cpu.sort_partition_elements(key_bytes, payload, value_bytes, rows, length))


# Symbolic shapes (jax.export shape polymorphism): the exact sizes above need concrete dims, so
# a workspace of symbolic shape gets an upper bound per batch row written in dimension
# arithmetic (+, *, // by constants). The handlers only require at least the exact size
# (tests/test_export.py checks the bounds against the exact sizes).
DimSize = Any  # an int, or a symbolic dimension of jax.export


def _payload_bytes(payload: int, value_bytes: int) -> int:
    """key_types.h's payload_bytes: 0 (none), the value's bytes (value), else 4 (int32)."""
    return 0 if payload == 0 else (value_bytes if payload == 2 else 4)


def merge_workspace_per_row(
    key_bytes: int, payload: int, value_bytes: int, length: DimSize
) -> DimSize:
    """An upper bound of merge_workspace_elements per row merging `length` outputs: the
    splits of a tiled row, B = ceil(length / tile) + 1, and the partition's chain flags and
    masks (a flag and one mask word a partition block of 8 boundaries sharing one, up to 4096
    boundaries; a flag and 8 words a block of 256 past that: at most B in all, so 2 B a row
    bounds both; a packed row needs 1 for the batch)."""
    tile = int(_cpu.merge_tile_for(key_bytes, payload, value_bytes))
    return 2 * ((length + tile - 1) // tile + 1)


def sort_partition_per_row(
    key_bytes: int, payload: int, value_bytes: int, length: DimSize
) -> DimSize:
    """An upper bound of sort_partition_elements per row of `length` keys. A tile map of run
    pairs of width W (sort tile <= W / 2 < length) has P = ceil(length / W) pairs of at most W
    outputs, T = ceil(min(length, W) / tile) tiles each: P (T + 1) boundaries, at most
    2 length / tile + 2 length / sort tile + 2. A two-way pass has one such map on the merge
    tile; a quad pass two on the quad tile, the second with 3 int32 a boundary."""
    carried = _payload_bytes(payload, value_bytes)  # a pass carries the payload as values
    merge = int(_cpu.merge_tile(key_bytes, carried))
    quad = int(_cpu.quad_tile(key_bytes, carried))
    sort = int(_cpu.sort_tile(key_bytes, carried))

    def boundaries(tile: int) -> DimSize:
        return 2 * ((length + tile - 1) // tile) + 2 * ((length + sort - 1) // sort) + 2

    return boundaries(merge) + 4 * boundaries(quad)


def export_disabled_checks() -> list[jax.export.DisabledSafetyCheck]:
    """The ``disabled_checks`` that ``jax.export.export`` needs for a program that calls
    jax_mergepath: one ``DisabledSafetyCheck.custom_call`` for each of its FFI targets.

    ``jax.export`` refuses custom calls that are not JAX's own (their compatibility is the
    library's promise, not JAX's); pass these to export. The deserialized program runs wherever
    this package is imported (it registers the targets) and finds the same target names.
    Shapes may be symbolic (``jax.export.symbolic_shape``), batch dimensions included; an axis
    of 2**31 or more elements is then refused at run time by the kernel (JaxRuntimeError)
    instead of at trace time.

    Returns:
        A list of ``jax.export.DisabledSafetyCheck``, one for each FFI target (CPU and CUDA).

    Example:
        >>> import jax, jax.numpy as jnp, jax_mergepath as jmp
        >>> n, m = jax.export.symbolic_shape("n, m")
        >>> exported = jax.export.export(
        ...     jax.jit(jmp.merge), disabled_checks=jmp.export_disabled_checks()
        ... )(jax.ShapeDtypeStruct((n,), jnp.int32), jax.ShapeDtypeStruct((m,), jnp.int32))
        >>> restored = jax.export.deserialize(exported.serialize())
        >>> restored.call(jnp.array([1, 3, 5]), jnp.array([2, 4]))
        Array([1, 2, 3, 4, 5], dtype=int32)
    """
    return [
        jax.export.DisabledSafetyCheck.custom_call(target)
        for target in sorted(CPU_TARGETS | CUDA_TARGETS)
    ]
