"""The selection family: top_k, top_k_by_key, partition, argpartition (docs/contract.md
"Selection"), with lax's and jnp's signatures and, where they raise for an argument, their
exception types.

Contract: arguments are checked at trace time (_args.py); the selected axis is moved last for
the row-level top-k (_select_dispatch.py) and moved back; an axis split over devices (an explicit
mesh axis, or `axis_name` inside shard_map) goes to _select_sharded.py.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jax_mergepath._args import (
    ArrayLike,
    PyTree,
    as_array,
    check_key_dtype,
    check_values,
    normalize_axis,
    static_int,
)
from jax_mergepath._bits import concatenate_bits, gather_along, moveaxis_bits, take_along_bits
from jax_mergepath._dispatch import sort_rows
from jax_mergepath._dtypes import INT32_LIMIT, definitely
from jax_mergepath._primitives import Payload
from jax_mergepath._select_dispatch import partition_keys, top_k_rows
from jax_mergepath._select_sharded import AxisName, topk_split_axis


def _operand(operand: ArrayLike, name: str, op: str) -> jax.Array:
    """A key array of at least one dimension; complex keys raise lax.top_k's ValueError."""
    x = as_array(operand, name, op)
    if jnp.issubdtype(x.dtype, jnp.complexfloating):
        raise ValueError(f"jax_mergepath.{op}: top_k is not compatible with complex inputs.")
    check_key_dtype(x, name, op)
    if x.ndim == 0:
        raise TypeError(
            f"jax_mergepath.{op}: top_k operand must have >= 1 dimension, got {x.shape} ({name})"
        )
    return x


def _largest(largest, op: str) -> bool:
    if not isinstance(largest, bool | np.bool_):
        raise TypeError(f"jax_mergepath.{op}: largest must be a Python bool, got {largest!r}")
    return bool(largest)


def _check_k(k, x: jax.Array, ax: int, length, op: str) -> int:
    """k as a static int in [0, length] (lax.top_k's messages); length: the axis's global
    length."""
    k = static_int(k, "k", op)
    if k < 0:
        raise ValueError(f"jax_mergepath.{op}: k argument to top_k must be nonnegative, got {k}")
    if definitely(lambda: length < k):
        raise ValueError(
            f"jax_mergepath.{op}: k argument to top_k must be no larger than size along axis; "
            f"got k={k} with shape={list(x.shape)} and axis={ax}"
        )
    return k


def _check_int32(x: jax.Array, length, op: str) -> None:
    """lax.top_k's int32 indices: an axis of more than 2**31 keys raises its ValueError."""
    if definitely(lambda: length > INT32_LIMIT):
        raise ValueError(
            f"jax_mergepath.{op}: top_k returns int32 indices, which will overflow for array "
            f"dimensions larger than the maximum int32 ({INT32_LIMIT - 1}). Got "
            f"operand.shape={x.shape}"
        )


def _top_k(x: jax.Array, k, ax: int, largest: bool, axis_name: AxisName | None, op: str,
           leaves: list[jax.Array] = ()):
    """(values, indices, the leaves gathered at the indices) of x's top k along ax."""
    split = topk_split_axis(x, list(leaves), k, ax, axis_name, largest=largest, op=op,
                            check_k=lambda length: _checked_global(k, x, ax, length, op))
    if split is not None:
        return split
    k = _check_k(k, x, ax, x.shape[ax], op)
    _check_int32(x, x.shape[ax], op)
    values, idx = top_k_rows(moveaxis_bits(x, ax, -1), k, largest=largest)
    idx = jnp.moveaxis(idx, -1, ax)
    return moveaxis_bits(values, -1, ax), idx, [gather_along(leaf, idx, ax) for leaf in leaves]


def _checked_global(k, x: jax.Array, ax: int, length, op: str) -> int:
    """k checked against a sharded axis's global length, whose indices need int64 past 2**31
    keys (jax_enable_x64)."""
    k = _check_k(k, x, ax, length, op)
    if not jax.config.jax_enable_x64:
        _check_int32(x, length, op)
    return k


def top_k(
    operand: ArrayLike,
    k: int,
    *,
    axis: int = -1,
    largest: bool = True,
    axis_name: AxisName | None = None,
) -> list[jax.Array]:
    """The ``k`` largest entries along ``axis`` and their indices: a drop-in for
    ``jax.lax.top_k``, with its results bit for bit.

    Largest first; equal keys by lower index first. Floats in XLA's total order of their bits:
    positive NaN first, then +inf, ..., +0.0 before -0.0, ..., -inf, negative NaN last (the one
    place where this package follows lax's order rather than the sorts', which put every NaN
    last and treat -0.0 == +0.0). Values are the operand's bits (NaN payloads, -0.0 kept).
    ``largest=False`` selects the smallest first (ties still lower index first).

    Reads the keys about once (a threshold from samples, then one filtering pass; an exact
    radix select where the sample misjudges); rows (every other dimension) are one kernel call,
    and so is ``jax.vmap``.

    Dtypes: every key dtype of the sorts but complex (refused as ``lax.top_k`` refuses it).
    Where ``lax.top_k`` itself differs: int2 / int4 / uint2 / uint4 and float4_e2m1fn (which it
    fails on) are selected as their numbers; the float8 types keep their NaN payloads and order
    them by their bits (lax converts them to a wider float); float8_e5m2fnuz subnormals are
    ordered as numbers (README and docs/contract.md).

    Args:
        operand: keys of a key dtype (not complex), >= 1-d.
        k: how many (a static int, 0 <= k <= the axis's length).
        axis: the axis to select along (a static int).
        largest: largest first (True, ``lax.top_k``), or smallest first.
        axis_name: inside ``jax.shard_map``, the mesh axis (or tuple of axes) over which
            ``axis`` is split: ``operand`` is this device's shard and every device gets the
            global result, with global indices (each device's top k, then one all-gather of
            the k candidates of every device, never of the data). Not needed outside
            ``shard_map``: an array whose sharding splits ``axis`` over explicit mesh axes is
            selected across the devices by itself.

    Returns:
        ``[values, indices]`` (a list, as ``lax.top_k``'s), shaped like ``operand`` with ``k``
        along ``axis``: values of the operand's dtype and weak type, int32 indices (int64 for
        a sharded axis of more than 2**31 keys, with ``jax_enable_x64``).

    Raises:
        TypeError: a non-key dtype, a 0-d operand, ``k`` or ``axis`` not an int or traced,
            ``largest`` not a bool.
        ValueError: complex keys, ``k`` negative or larger than the axis, axis out of range
            (``lax.top_k``'s messages), an axis of more than 2**31 keys.

    Example:
        >>> import jax.numpy as jnp, jax_mergepath as jmp
        >>> values, indices = jmp.top_k(jnp.array([9.0, 3.0, 6.0, 4.0, 10.0]), 3)
        >>> values, indices
        (Array([10.,  9.,  6.], dtype=float32), Array([4, 0, 2], dtype=int32))
        >>> type(jmp.top_k(jnp.array([1.0, 2.0]), 1))  # as lax.top_k's
        <class 'list'>
        >>> jmp.top_k(jnp.array([[3, 1, 2], [5, 5, 4]]), 2, largest=False)[1]
        Array([[1, 2],
               [2, 0]], dtype=int32)
    """
    op = "top_k"
    x = _operand(operand, "operand", op)
    ax = normalize_axis(axis, x.ndim, "operand", op)
    values, idx, _ = _top_k(x, k, ax, _largest(largest, op), axis_name, op)
    return [values, idx]


def top_k_by_key(
    keys: ArrayLike,
    values: PyTree,
    k: int,
    *,
    axis: int = -1,
    largest: bool = True,
    axis_name: AxisName | None = None,
) -> tuple[jax.Array, PyTree]:
    """:func:`top_k` of ``keys``, with ``values`` (an array or a pytree of arrays) taken along:
    selecting particles by a key with their fields.

    Every leaf of ``values`` has the keys' shape, optionally followed by trailing dimensions
    (positions ``(n, 3)`` for keys ``(n,)``); it is gathered at the selected indices, bit for
    bit, in the result's order.

    Args:
        keys: as :func:`top_k`'s operand.
        values: the payload, any dtypes.
        k: how many (a static int).
        axis: the keys' axis to select along (the values' same axis).
        largest: largest keys first, or smallest first.
        axis_name: as :func:`top_k` (inside ``jax.shard_map``: the values are this device's
            shard, and every device gets the selected values).

    Returns:
        ``(selected keys, values in the same pytree structure, selected)``.

    Raises:
        TypeError, ValueError: as for :func:`top_k`; ValueError when a leaf's leading shape is
        not the keys' shape.

    Example:
        >>> import jax.numpy as jnp, jax_mergepath as jmp
        >>> energy = jnp.array([0.5, 2.0, 1.5, 0.1])
        >>> pos = jnp.arange(12.0).reshape(4, 3)
        >>> e, fields = jmp.top_k_by_key(energy, {"pos": pos, "id": jnp.arange(4)}, 2)
        >>> e, fields["id"]
        (Array([2. , 1.5], dtype=float32), Array([1, 2], dtype=int32))
        >>> fields["pos"][0]
        Array([3., 4., 5.], dtype=float32)
    """
    op = "top_k_by_key"
    x = _operand(keys, "keys", op)
    ax = normalize_axis(axis, x.ndim, "keys", op)
    leaves, tree = jax.tree.flatten(values)
    leaves = [as_array(v, "values", op) for v in leaves]
    check_values(leaves, x, "values", op)
    top, _, moved = _top_k(x, k, ax, _largest(largest, op), axis_name, op, leaves)
    return top, jax.tree.unflatten(tree, moved)


def _partition_args(a: ArrayLike, kth, axis, op: str):
    """jnp.partition's checks: complex raises NotImplementedError, kth and axis static ints in
    range (ValueError otherwise), as jnp."""
    x = as_array(a, "a", op)
    if jnp.issubdtype(x.dtype, jnp.complexfloating):
        raise NotImplementedError(f"jnp.{op} for complex dtype is not implemented.")
    check_key_dtype(x, "a", op)
    if x.ndim == 0:
        raise ValueError(f"jax_mergepath.{op}: axis -1 is out of bounds for array of dimension 0")
    ax = normalize_axis(axis, x.ndim, "a", op, traced_error=ValueError)
    n = x.shape[ax]
    kth = static_int(kth, "kth", op, traced_error=ValueError)
    if definitely(lambda: not -n <= kth < n):
        raise ValueError(
            f"jax_mergepath.{op}: kth {kth} is out of bounds for axis {ax} of length {n}"
        )
    if kth < 0:
        kth = kth + n
    _check_int32(x, n, op)
    return x, ax, n, kth


def _partition_keys(x: jax.Array, kth: int) -> tuple[jax.Array, bool]:
    """(the keys a partition selects on, whether values must be gathered from x). XLA's total
    order, which gives jnp's result (negative NaNs first, positive ones last, -0.0 before +0.0),
    in the rows where that is a valid partition: every entry from kth on a positive NaN, or
    every entry a NaN. In the other rows negative NaNs come last, after the positive ones
    (_select_dispatch.partition_keys: unsigned keys made from the bits alone)."""
    keys = partition_keys(x, kth)
    return (x, False) if keys is None else (keys, True)


def _partition_rows(a: ArrayLike, kth, axis, op: str):
    """(rows with the axis last, the axis, its length, kth normalized) of a partition's
    arguments, checked."""
    x, ax, n, kth = _partition_args(a, kth, axis, op)
    return moveaxis_bits(x, ax, -1), ax, n, kth


def _bottom(x: jax.Array, kth: int) -> tuple[jax.Array, bool, jax.Array, jax.Array]:
    """(the partition's keys, whether they differ from x, the kth + 1 smallest's values, their
    indices): the bottom of a partition, smallest first, ties by lower index."""
    keys, gather = _partition_keys(x, kth)
    values, idx = top_k_rows(keys, kth + 1, largest=False)
    if gather:
        values = take_along_bits(x, idx, -1)
    return keys, gather, values, idx


def partition(a: ArrayLike, kth: int, axis: int = -1) -> jax.Array:
    """A partially sorted copy of ``a``: a drop-in for ``jnp.partition``.

    Along ``axis``, the ``kth + 1`` smallest entries come first, in ascending order, then the
    others in descending order: ``jnp.partition``'s layout, and its values bit for bit wherever
    its result is a valid partition of ``a``. Where it is not, this one still is: ``jnp``
    negates the keys and calls ``lax.top_k``, which drops the smallest signed integer (its
    negation overflows) and puts negative NaNs first; here every integer is ordered as the
    number it is, and a row where negative NaNs first would not partition it (an entry from
    kth on that is not a positive NaN) orders them last, with the positive ones. Otherwise the
    order is ``jnp``'s (XLA's total order: ties lower index first, -0.0 before +0.0 in the
    bottom). Bool keys work (``jnp.partition`` refuses them).

    Args:
        a: keys of a key dtype (not complex), >= 1-d.
        kth: the position that gets the entry a full sort would put there (a static int;
            negative counts from the end).
        axis: the axis to partition along (a static int).

    Returns:
        ``a``'s values rearranged along ``axis``, of its dtype and weak type.

    Raises:
        NotImplementedError: complex ``a`` (as ``jnp.partition``).
        TypeError: a non-key dtype, ``kth`` or ``axis`` not an int.
        ValueError: a 0-d ``a``, ``kth`` or ``axis`` out of range or traced.

    Example:
        >>> import jax.numpy as jnp, jax_mergepath as jmp
        >>> jmp.partition(jnp.array([6, 8, 4, 3, 1, 9, 7, 5, 2, 3]), 4)
        Array([1, 2, 3, 3, 4, 9, 8, 7, 6, 5], dtype=int32)
    """
    rows, ax, n, kth = _partition_rows(a, kth, axis, "partition")
    keys, gather, bottom, _ = _bottom(rows, kth)
    top, idx = top_k_rows(keys, n - kth - 1, largest=True)
    if gather:
        top = take_along_bits(rows, idx, -1)
    return moveaxis_bits(concatenate_bits((bottom, top), -1), -1, ax)


def argpartition(a: ArrayLike, kth: int, axis: int = -1) -> jax.Array:
    """Indices that partially sort ``a``: a drop-in for ``jnp.argpartition``.

    Along ``axis``: the indices of the ``kth + 1`` smallest entries, in ascending order of
    their keys (ties by lower index), then the indices of the others in index order, as
    ``jnp.argpartition`` lays them out; its indices wherever its result is a valid partition
    (see :func:`partition` for where ``jnp``'s is not, and this one still is).

    Args:
        a, kth, axis: as for :func:`partition`.

    Returns:
        int32 indices of ``a``'s shape (as ``jnp.argpartition``).

    Raises:
        As :func:`partition`.

    Example:
        >>> import jax.numpy as jnp, jax_mergepath as jmp
        >>> jmp.argpartition(jnp.array([6, 8, 4, 3, 1, 9, 7, 5, 2, 3]), 4)
        Array([4, 8, 3, 9, 2, 0, 1, 5, 6, 7], dtype=int32)
    """
    op = "argpartition"
    rows, ax, n, kth = _partition_rows(a, kth, axis, op)
    _, _, _, bottom = _bottom(rows, kth)
    # The others in index order: a stable sort of "in the bottom" flags puts them first.
    batch = [lax.broadcasted_iota(np.int32, bottom.shape, d) for d in range(bottom.ndim - 1)]
    taken = jnp.zeros(rows.shape, np.uint8).at[(*batch, bottom)].set(np.uint8(1))
    _, order = sort_rows(taken, (), descending=False, payload=Payload.INDEX, op=op)
    rest = order[..., : n - kth - 1].astype(np.int32)
    return jnp.moveaxis(concatenate_bits((bottom, rest), -1), -1, ax)
