"""Loads the native modules and registers their XLA FFI targets.

Contract: importing this never fails because CUDA is missing; `HAS_CUDA` says whether the CUDA
module was built and loaded, `require_cuda_target` explains at lowering time why a GPU call
cannot run. A missing CPU module (the source tree imported without a build) raises an
ImportError that says how to build. Targets are registered for platform "cpu" and "CUDA"
(spelled so: other spellings register silently and are never found).
"""

from __future__ import annotations

import contextlib
import enum
import functools
import os
from collections.abc import Iterator
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


# The CUDA workspaces, sized at lowering time from the row length alone (no device; under
# jax.export possibly a symbolic dimension): tuning/workspace.h's bound per row, which the _cpu
# module exports as (multiplier, divisor, at_most_one) terms: a row of L elements needs at most the
# sum of multiplier * q, q = L // divisor (at_most_one: min(q, 1)) int32, whatever the number of
# rows (so a shard of a batch-sharded call has enough in its rows' part). The handlers check the
# buffer against the exact size. The same arithmetic (+, *, // by constants, min) serves
# concrete and symbolic L.
DimSize = Any  # an int, or a symbolic dimension of jax.export
Terms = tuple[tuple[int, int, bool], ...]  # (multiplier, divisor, at_most_one) a term


def _per_row(terms: Terms, length: DimSize) -> DimSize:
    total: DimSize = 0
    for multiplier, divisor, at_most_one in terms:
        q = length // divisor
        total = total + multiplier * (jax.core.min_dim(q, 1) if at_most_one else q)
    return total


@functools.cache
def _merge_terms(key_bytes: int, payload: int, value_bytes: int) -> Terms:
    return tuple(_cpu.merge_workspace_bound(key_bytes, payload, value_bytes))


@functools.cache
def _sort_terms(key_bytes: int, payload: int, value_bytes: int) -> Terms:
    return tuple(_cpu.sort_workspace_bound(key_bytes, payload, value_bytes))


def merge_workspace_per_row(
    key_bytes: int, payload: int, value_bytes: int, length: DimSize
) -> DimSize:
    """int32 elements a row of the CUDA merge's partition workspace, for rows of `length`
    outputs (searchsorted's sorted queries: a ranks payload)."""
    return _per_row(_merge_terms(key_bytes, int(payload), value_bytes), length)


def ragged_merge_workspace_per_row(key_bytes: int, value_bytes: int, out_length: int) -> int:
    """int32 elements a row of the CUDA ragged merge's workspace, for rows of out_length
    outputs (concrete: the sharded sort's shards)."""
    return int(_cpu.ragged_merge_workspace_elements(key_bytes, value_bytes, 1, out_length))


class SortMethod(enum.IntEnum):
    """How a sort runs: the FFI attribute `method` (ffi/include/jax_mergepath/call_args.h
    SortMethod), resolved once when the call is lowered (resolve_sort_method)."""

    ADAPTIVE = 0  # the launcher decides from the run-time shape (a symbolic length)
    MERGE = 1  # the merge sort
    RADIX = 2  # the radix path where it can run the call's rows, else the merge sort
    RADIX_DIRECT = 3  # (CUDA) the direct radix sort, its spares in the workspace


def sort_workspace_per_row(
    key_bytes: int, payload: int, value_bytes: int, length: DimSize, *,
    method: int = SortMethod.MERGE, rows: int | None = None,
) -> DimSize:
    """int32 elements a row of the CUDA sort's partition workspace, for rows of `length` keys
    lowered with `method` (resolve_sort_method; the default, MERGE, the merge sort's alone): the
    merge sort's bound, and for a static length lowered RADIX or RADIX_DIRECT the radix path's
    part if larger (tuning/workspace.h sort_radix_workspace_per_row: for a call of
    one row, `rows` == 1, its exact size, else a bound a row whatever the count of rows)."""
    merge = _per_row(_sort_terms(key_bytes, int(payload), value_bytes), length)
    if not isinstance(length, int):
        return merge
    carried = 0 if payload == 0 else (value_bytes if payload == 2 else 4)  # (int32 positions)
    radix = _cpu.sort_radix_workspace_per_row(int(method), key_bytes, carried,
                                              -1 if rows is None else rows, length)
    return max(merge, int(radix))


def resolve_sort_method(
    platform: str, key_bytes: int, payload: int, value_bytes: int, length: DimSize, *,
    rows: int | None, integer_keys: bool, descending: bool,
) -> SortMethod:
    """The method a sort call is lowered with, resolved once (sort_method.h): on "cuda" from the
    knob sort_method() (resolve_sort_method: the merge sort, the radix path, its direct sort,
    ADAPTIVE where the length is symbolic), on "cpu" the CPU sort's own choice
    (resolve_cpu_sort_method; the knob is the CUDA sort's). `rows`: the static count of batch
    rows, None where the batch shape is symbolic; a call of several rows may run on a shard of
    fewer, and the method holds for any (sort_method.h). RADIX_DIRECT calls leave their spare
    buffers empty (CUB's are in the workspace sort_workspace_per_row gives them)."""
    static_length = length if isinstance(length, int) else -1
    if platform == "cpu":
        return SortMethod(_cpu.resolve_cpu_sort_method(key_bytes, integer_keys, static_length))
    return SortMethod(_cpu.resolve_sort_method(
        sort_method(), key_bytes, int(payload), value_bytes, integer_keys, descending,
        -1 if rows is None else rows, static_length, short_keys_onesweep(),
    ))


def short_keys_onesweep() -> bool:
    """Whether the CUDA module's CUB sorts 2-byte keys by onesweep (every architecture built is
    sm_90 or newer), where tuning/workspace.h's bound holds their direct radix sort; without the
    module (a lowering for export on a machine without it), the default build's sm_90."""
    return _cuda is None or bool(_cuda.short_keys_onesweep())


# The user's knob, an input to the resolution: "auto" (ADAPTIVE, before resolution: the radix
# path where tuning/radix.h measured it faster: one-byte keys' counting sort or scatter, CUB's
# radix sort of one row of 2-, 4- or 8-byte keys or of rows of 2-byte keys), "merge" forces the
# merge sort, "radix" the radix path wherever it can run. All give the same bits. Read when a call
# is lowered, so a change reaches calls traced afterwards; for benchmarks and the bit-identity
# tests: set JAX_MERGEPATH_SORT_METHOD or use `forced_sort_method`. The CPU sort keeps its own
# choice.
SORT_METHODS = {
    "auto": SortMethod.ADAPTIVE, "merge": SortMethod.MERGE, "radix": SortMethod.RADIX,
}
_sort_method = os.environ.get("JAX_MERGEPATH_SORT_METHOD", "auto")


def sort_method() -> int:
    """The knob's SortMethod (ADAPTIVE, MERGE or RADIX), which resolve_sort_method resolves."""
    if _sort_method not in SORT_METHODS:
        raise ValueError(
            f"JAX_MERGEPATH_SORT_METHOD={_sort_method!r}: expected one of {sorted(SORT_METHODS)}"
        )
    return int(SORT_METHODS[_sort_method])


@contextlib.contextmanager
def forced_sort_method(method: str) -> Iterator[None]:
    """Lower the sorts traced inside this block with `method` ("auto", "merge" or "radix").
    Functions traced (and cached by jax.jit) before it keep their method."""
    global _sort_method
    if method not in SORT_METHODS:
        raise ValueError(f"method={method!r}: expected one of {sorted(SORT_METHODS)}")
    before, _sort_method = _sort_method, method
    try:
        yield
    finally:
        _sort_method = before


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
