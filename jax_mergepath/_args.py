"""Argument checking shared by the public functions: everything here runs at trace time and
raises TypeError / ValueError naming the function and the argument.

Contract: keys come out as jax arrays of a key dtype (_keys.py) with at least one dimension, the
two sides of a merge promoted to one dtype as jnp.concatenate promotes them; axes come out
normalized; lengths, splits and k are clamped integers that never wrap (int32, int64 for an axis
of 2**31 elements or more).

Dimensions may be symbolic (jax.export shape polymorphism): a check that cannot be decided for
every value of a symbolic dimension is left to the kernels, which check lengths again at run
time; symbolic dimensions are >= 1 (jax.export's assumption), so a trivial-size shortcut taken
only when a size is provably small is always safe.
"""

from __future__ import annotations

import operator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jax_mergepath._dtypes import DimSize, check_x64_length, position_dtype, promote
from jax_mergepath._keys import is_key_dtype, key_dtype_names

ArrayLike = Any
PyTree = Any


class OperandShapeError(ValueError, TypeError):
    """Operands of lax_sort / sort_key_val whose shapes differ: a ValueError as every
    mismatched shape here, and a TypeError as ``jax.lax.sort`` raises for the same call."""


def _is_arraylike(x: Any) -> bool:
    """What jnp's functions take as an array argument (jnp's ensure_arraylike): arrays (numpy,
    jax, tracers), objects with __jax_array__, and scalars; never a list or a tuple."""
    return (isinstance(x, np.ndarray | jax.Array) or hasattr(x, "__jax_array__")
            or np.isscalar(x))


def _check_arraylike(x: Any, name: str, op: str) -> None:
    """A TypeError for an array argument jnp would refuse (a list, a tuple, any other object:
    as jnp's functions refuse them) or could not hold (strings, objects), naming the argument."""
    if not _is_arraylike(x):
        raise TypeError(
            f"jax_mergepath.{op}: {name} must be an array or a scalar, got a Python "
            f"{type(x).__name__}, as jnp's functions refuse them (jnp.sort([3, 1]) raises a "
            f"TypeError): pass jnp.asarray({name})"
        )
    if isinstance(x, jax.Array) or hasattr(x, "__jax_array__"):
        return
    dtype = np.asarray(x).dtype
    # strings, bytes, objects, datetimes, structured records (ml_dtypes' bfloat16 and float8
    # types are void-kind too, but jax takes them)
    if dtype.kind in "USOMm" or dtype.fields is not None:
        raise TypeError(
            f"jax_mergepath.{op}: {name} has dtype {dtype}, which JAX arrays cannot hold "
            f"(numeric or bool arrays only; keys may be: {key_dtype_names()})"
        )


def as_array(x: ArrayLike, name: str, op: str) -> jax.Array:
    """The array argument `name` as a jax array: arrays and scalars, as jnp takes them (a list
    or a tuple raises a TypeError, as in jnp)."""
    _check_arraylike(x, name, op)
    return jnp.asarray(x)


def as_key_array(x: ArrayLike, name: str, op: str) -> jax.Array:
    """A key array of a supported dtype with at least one dimension."""
    arr = as_array(x, name, op)
    check_key_dtype(arr, name, op)
    if arr.ndim == 0:
        raise ValueError(
            f"jax_mergepath.{op}: {name} must have at least one dimension, got a 0-d array"
        )
    return arr


def check_key_dtype(arr: jax.Array, name: str, op: str) -> None:
    if not is_key_dtype(arr.dtype):
        raise TypeError(
            f"jax_mergepath.{op}: {name} has unsupported dtype {arr.dtype}; keys must be one "
            f"of: {key_dtype_names()}"
        )


def static_int(
    value: Any, arg: str, op: str, traced_error: type[Exception] = TypeError
) -> int:
    """value as a Python int, known at trace time. A traced value (an argument of a jitted
    function) raises traced_error naming `arg` and saying how to make it static; bools and
    non-integers raise TypeError."""
    if isinstance(value, jax.core.Tracer):
        raise traced_error(
            f"jax_mergepath.{op}: {arg} must be a static int, known when the function is "
            f"traced, but got a traced value ({value.aval.str_short()}). Pass it as a static "
            f"argument: jax.jit(f, static_argnames='{arg}') or static_argnums=..."
        )
    if not isinstance(value, bool | np.bool_):
        try:
            return operator.index(value)  # ints, numpy ints, concrete 0-d int arrays
        except TypeError:
            pass
    raise TypeError(f"jax_mergepath.{op}: {arg} must be an int, got {value!r}")


def normalize_axis(
    axis: Any,
    ndim: int,
    name: str,
    op: str,
    arg: str = "axis",
    traced_error: type[Exception] = TypeError,
) -> int:
    """The axis `arg` of `name` (ndim dimensions) as an int in [0, ndim): static_int's errors,
    ValueError out of range."""
    axis = static_int(axis, arg, op, traced_error)
    if not -ndim <= axis < ndim:
        raise ValueError(
            f"jax_mergepath.{op}: {arg} {axis} is out of range for {name} with {ndim} "
            f"dimension(s)"
        )
    return axis % ndim


def batch_shape(x: jax.Array, axis: int) -> tuple[int, ...]:
    return tuple(d for i, d in enumerate(x.shape) if i != axis)


def check_batch(shapes: dict[str, tuple[int, ...]], op: str) -> tuple[int, ...]:
    items = list(shapes.items())
    first_name, first = items[0]
    for name, shape in items[1:]:
        if shape != first:
            raise ValueError(
                f"jax_mergepath.{op}: batch dimensions (all but the merged or sorted axis) "
                f"must be equal: {first_name} has {first}, {name} has {shape}"
            )
    return first


def _host_index_array(x: Any, dtype: Any) -> Any:
    """Integer host data (numpy arrays and scalars) clamped to [0, max of dtype] on the host, as
    dtype (int32 or int64): with x64 off `jnp.asarray` would wrap int64 / uint64 values past int32
    (2**32 + 1 -> 1) before any clamp could see them. Anything else (jax arrays, bools, floats)
    unchanged."""
    if isinstance(x, jax.Array):
        return x
    host = np.asarray(x)
    if host.dtype.kind not in "iu":
        return x
    wide = host.astype(np.uint64 if host.dtype.kind == "u" else np.int64)  # (numpy 2.0 refuses
    return np.clip(wide, 0, np.iinfo(dtype).max).astype(dtype)  # bounds its dtype cannot hold)


def as_index_array(x: ArrayLike, name: str, op: str, dtype: Any) -> jax.Array:
    """The integer array argument `name` (lengths, splits, k) as a jax array (as_array's rules),
    host integers clamped to [0, max of dtype] first (_host_index_array); TypeError unless of an
    integer dtype."""
    _check_arraylike(x, name, op)
    v = jnp.asarray(_host_index_array(x, dtype))
    check_int_dtype(v, name, op)
    return v


def clamp_index(v: ArrayLike, hi: DimSize, dtype: Any = np.int32) -> jax.Array:
    """Integers clamped to [0, hi] (hi at most dtype's max, or a symbolic dimension), as dtype
    (int32 or int64), never wrapped: Python ints and host arrays are clamped on the host (any
    size), jax int arrays in their own dtype with a bound it can hold."""
    top = int(np.iinfo(dtype).max)
    if isinstance(v, int | np.integer) and not isinstance(v, bool | np.bool_):
        host = min(max(int(v), 0), top)
        return jnp.asarray(jax.core.min_dim(host, hi), dtype)
    v = jnp.asarray(_host_index_array(v, dtype))
    bound = jax.core.min_dim(hi, min(top, int(jnp.iinfo(v.dtype).max)))
    return jnp.clip(v, 0, bound).astype(dtype)


def check_int_dtype(v: jax.Array, name: str, op: str) -> None:
    if not jnp.issubdtype(v.dtype, jnp.integer):
        raise TypeError(
            f"jax_mergepath.{op}: {name} must be an int or an int array, got dtype {v.dtype}"
        )


def row_lengths(
    value: ArrayLike | None, default: DimSize, batch: tuple[int, ...], name: str, op: str
) -> jax.Array:
    """Per-row lengths of the batch shape, clamped to [0, default] (None: default), as
    position_dtype(default)."""
    dtype = position_dtype(default)
    if value is None:
        return jnp.full(batch, default, dtype)
    if isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_):
        return jnp.full(batch, clamp_index(value, default, dtype))
    v = as_index_array(value, name, op, dtype)
    try:
        v = jnp.broadcast_to(v, batch)
    except ValueError:
        raise ValueError(
            f"jax_mergepath.{op}: {name} has shape {v.shape}; expected a scalar or "
            f"the batch shape {batch}"
        ) from None
    return clamp_index(v, default, dtype)


def jnp_flag(value: Any, arg: str, op: str) -> bool:
    """A flag of a jnp drop-in that jnp takes as a static argument (sort's and argsort's
    descending), as jnp takes it: any value, by its truth (descending=1 is True). A traced value
    or an unhashable one (an array) raises the ValueError jnp raises for it, naming `arg`."""
    if isinstance(value, jax.core.Tracer):
        raise ValueError(
            f"jax_mergepath.{op}: {arg} must be known when the function is traced, got a traced "
            f"value ({value.aval.str_short()}), as jnp.{op} requires: pass it as a static "
            f"argument, jax.jit(f, static_argnames='{arg}')"
        )
    try:
        hash(value)
    except TypeError:
        raise ValueError(
            f"jax_mergepath.{op}: {arg} must be hashable, as jnp.{op}'s static arguments are, "
            f"got a {type(value).__name__}: pass a Python bool"
        ) from None
    return bool(value)


def check_direction(descending: Any, op: str) -> bool:
    if not isinstance(descending, bool | np.bool_):
        raise TypeError(f"jax_mergepath.{op}: descending must be a Python bool")
    return bool(descending)


def check_key_pair(
    a: ArrayLike, b: ArrayLike, names: tuple[str, str], axis: int, op: str
) -> tuple[jax.Array, jax.Array, int, tuple[int, ...]]:
    """The two sorted key arrays of a merge: arrays of key dtypes promoted to one (promote_keys),
    same rank, equal batch dimensions, a merged length whose positions fit (check_x64_length).
    Returns (a, b, axis, batch shape)."""
    a_arr, b_arr = promote_keys(a, b, names, op)
    ax = normalize_axis(axis, a_arr.ndim, names[0], op)
    if b_arr.ndim != a_arr.ndim:
        raise ValueError(
            f"jax_mergepath.{op}: {names[0]} and {names[1]} must have the same number of "
            f"dimensions, got {a_arr.ndim} and {b_arr.ndim}"
        )
    batch = check_batch(
        {names[0]: batch_shape(a_arr, ax), names[1]: batch_shape(b_arr, ax)}, op
    )
    check_x64_length(a_arr.shape[ax] + b_arr.shape[ax], op, "the merged axis")
    return a_arr, b_arr, ax, batch


def promote_keys(
    a: ArrayLike, b: ArrayLike, names: tuple[str, str], op: str
) -> tuple[jax.Array, jax.Array]:
    """The keys of a merge or search as arrays of key dtypes with at least one dimension, in
    their common dtype as jnp.concatenate promotes them (weak types included)."""
    a_arr = as_key_array(a, names[0], op)
    b_arr = as_key_array(b, names[1], op)
    a_arr, b_arr = promote(a_arr, b_arr)
    check_key_dtype(a_arr, f"{names[0]} and {names[1]} (promoted)", op)
    return a_arr, b_arr


def check_values(leaves: list[jax.Array], keys: jax.Array, name: str, op: str) -> None:
    for leaf in leaves:
        if leaf.shape[: keys.ndim] != keys.shape:
            raise ValueError(
                f"jax_mergepath.{op}: every leaf of {name} must have the shape of "
                f"its keys {keys.shape} (trailing dimensions allowed), got "
                f"{leaf.shape}"
            )
