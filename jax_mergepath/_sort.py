"""The sort family: sort, argsort, sort_by_key, lax_sort, searchsorted (README "API").

Contract: arguments are checked at trace time (_checks.py); the sorted axis is moved last for
the row-level sorts and searches (_rows.py, which pick the kernels or the order-key way by key
dtype and axis length) and moved back.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jax_mergepath._checks import (
    ArrayLike,
    PyTree,
    as_array,
    as_key_array,
    check_direction,
    check_key_dtype,
    check_values,
    fusable_values,
    gather_along,
    normalize_axis,
)
from jax_mergepath._dtypes import promote
from jax_mergepath._primitives import Payload
from jax_mergepath._rows import lexsort_rows, searchsorted_rows, sort_rows


def _prepare(x: ArrayLike, axis: int, descending: bool, op: str, name: str = "x"):
    x = as_key_array(x, name, op)
    descending = check_direction(descending, op)
    ax = normalize_axis(axis, x.ndim, name, op)
    return x, ax, descending


def sort(x: ArrayLike, *, axis: int = -1, descending: bool = False) -> jax.Array:
    """Stable sort along ``axis``: a drop-in for ``jnp.sort``, with the same result bit for
    bit (every row of the other axes sorted independently, in one kernel call).

    The order is ``jnp.argsort(stable=True)``'s: NaN last (first when ``descending``),
    -0.0 == +0.0, equal keys in input order; sorted values are the input's bits (so -0.0 and
    NaN payloads survive). ``descending=True`` returns the ascending sort reversed, as
    ``jnp.sort``: equal keys then come out in reverse input order (visible only in the bits of
    floats: -0.0 / +0.0, NaN payloads). Subnormals are ordered as the numbers they are. The
    float8 types whose only NaN is the negative-zero pattern (the ``fnuz`` ones) order it
    first, as jnp does. Complex keys order by real part, then imaginary part.

    Axes of 2**31 elements or more run as ``lax.sort`` of the order keys (the kernels' int32
    positions cannot hold them), with the same result.

    Args:
        x: keys of a key dtype (bool, integers including int2 / int4, the float8 types,
            float4_e2m1fn, float16 / bfloat16 / float32 / float64, complex), >= 1-d.
        axis: the axis to sort along.
        descending: sort largest first.

    Returns:
        x sorted along axis, of x's dtype and weak type.

    Raises:
        TypeError: a non-key dtype, or descending not a bool.
        ValueError: x is 0-d or axis out of range.

    Example:
        >>> import jax.numpy as jnp, jax_mergepath as jmp
        >>> jmp.sort(jnp.array([3.0, jnp.nan, -1.0, 2.0]))
        Array([-1.,  2.,  3., nan], dtype=float32)
        >>> jmp.sort(jnp.array([[3, 1, 2], [9, 8, 7]]), descending=True)
        Array([[3, 2, 1],
               [9, 8, 7]], dtype=int32)
    """
    op = "sort"
    x, ax, descending = _prepare(x, axis, descending, op)
    keys, _ = sort_rows(jnp.moveaxis(x, ax, -1), (), descending=descending,
                        payload=Payload.NONE, op=op, reverse_ties=True)
    return jnp.moveaxis(keys, -1, ax)


def argsort(x: ArrayLike, *, axis: int = -1, descending: bool = False) -> jax.Array:
    """Stable argsort along ``axis``: a drop-in for ``jnp.argsort(x, stable=True)``, with the
    same result bit for bit.

    Args:
        x: keys of a key dtype, >= 1-d.
        axis: the axis to sort along.
        descending: largest first; ties still keep their input order.

    Returns:
        positions along axis such that ``take_along_axis(x, idx, axis)`` is sorted, in
        ``jnp.argsort``'s dtype: int32, or int64 when ``jax_enable_x64`` is on. An axis of
        2**31 elements or more runs as ``lax.sort`` with int64 positions; with x64 off jax
        makes them int32 (with a warning), as it does for ``jnp.argsort``.

    Raises:
        TypeError, ValueError: as for :func:`sort`.

    Example:
        >>> import jax.numpy as jnp, jax_mergepath as jmp
        >>> jmp.argsort(jnp.array([2, 1, 2, 0]))
        Array([3, 1, 0, 2], dtype=int32)
        >>> jmp.argsort(jnp.array([2, 1, 2, 0]), descending=True)
        Array([0, 2, 1, 3], dtype=int32)
    """
    op = "argsort"
    x, ax, descending = _prepare(x, axis, descending, op)
    _, idx = sort_rows(jnp.moveaxis(x, ax, -1), (), descending=descending,
                       payload=Payload.INDEX, op=op, wrap_positions=True)
    return jnp.moveaxis(idx, -1, ax)


def _check_leaves(values: PyTree, keys: jax.Array, name: str, op: str):
    leaves, tree = jax.tree.flatten(values)
    leaves = [as_array(v, name, op) for v in leaves]
    check_values(leaves, keys, name, op)
    return leaves, tree


def sort_by_key(
    keys: ArrayLike, values: PyTree, *, axis: int = -1, descending: bool = False
) -> tuple[jax.Array, PyTree]:
    """Stable sort of ``keys`` along ``axis``, moving ``values`` with them.

    ``values`` is an array or a pytree of arrays whose leaves have the keys' shape, optionally
    followed by trailing dimensions (positions of shape ``(n, 3)`` for keys ``(n,)``). One leaf
    shaped exactly like the keys, 1 to 8 bytes wide (or narrower than a byte: it moves as
    uint8), travels inside the sort kernel; other layouts are gathered with the sort's
    permutation. Keys and values keep their dtypes and weak types, bit for bit.

    Args:
        keys: keys of a key dtype (as for :func:`sort`), >= 1-d.
        values: the payload, any dtypes.
        axis: the keys' axis to sort along (the values' same axis moves with it).
        descending: largest key first; ties keep their input order.

    Returns:
        ``(sorted keys, values in the same pytree structure, permuted)``.

    Raises:
        TypeError, ValueError: as for :func:`sort`; ValueError when a leaf's leading shape is not
        the keys' shape, or, with ``jax_enable_x64`` off, when leaves that must be gathered
        (not one leaf shaped like the keys) go with an axis of 2**31 elements or more.

    Example:
        >>> import jax.numpy as jnp, jax_mergepath as jmp
        >>> cell = jnp.array([2, 0, 1, 0])
        >>> pos = jnp.arange(12.0).reshape(4, 3)
        >>> k, v = jmp.sort_by_key(cell, {"pos": pos, "id": jnp.arange(4)})
        >>> k, v["id"]
        (Array([0, 0, 1, 2], dtype=int32), Array([1, 3, 2, 0], dtype=int32))
    """
    op = "sort_by_key"
    keys, ax, descending = _prepare(keys, axis, descending, op, "keys")
    leaves, tree = _check_leaves(values, keys, "values", op)
    kl = jnp.moveaxis(keys, ax, -1)
    if fusable_values(leaves, keys):
        out, moved = sort_rows(kl, (jnp.moveaxis(leaves[0], ax, -1),), descending=descending,
                               payload=Payload.VALUE, op=op)
        return jnp.moveaxis(out, -1, ax), jax.tree.unflatten(tree, [jnp.moveaxis(moved, -1, ax)])
    out, idx = sort_rows(kl, (), descending=descending, payload=Payload.INDEX, op=op)
    idx = jnp.moveaxis(idx, -1, ax)
    moved = [gather_along(leaf, idx, ax) for leaf in leaves]
    return jnp.moveaxis(out, -1, ax), jax.tree.unflatten(tree, moved)


def lax_sort(
    operands: ArrayLike | Sequence[ArrayLike],
    dimension: int = -1,
    is_stable: bool = True,
    num_keys: int = 1,
) -> jax.Array | tuple[jax.Array, ...]:
    """Drop-in for ``jax.lax.sort``: sorts ``operands`` along ``dimension`` by the first
    ``num_keys`` of them, lexicographically, moving the others along.

    Always stable (``is_stable`` is accepted for compatibility). The order of each key is
    ``jnp.argsort(stable=True)``'s (NaN last, -0.0 == +0.0; complex keys by real, then
    imaginary part); it differs from ``jax.lax.sort`` on the CPU only in ordering subnormal
    floats as numbers (XLA:CPU flushes them to zero). Several keys are packed into one unsigned
    key when their widths sum to at most 64 bits; integer and bool keys packed so are unpacked
    from the sorted key (never gathered). Operands keep their dtypes and weak types, bit for
    bit (values narrower than a byte move as uint8). Axes of 2**31 elements or more run as
    ``lax.sort`` of the order keys, with the same result.

    Args:
        operands: one array, or a sequence of arrays of one shape (keys first).
        dimension: the axis to sort along.
        is_stable: ignored: the sort is always stable.
        num_keys: how many leading operands are keys (1 <= num_keys <= len(operands)).

    Returns:
        The sorted array for a single array; otherwise a tuple of the sorted operands.

    Raises:
        TypeError: a key of a non-key dtype.
        ValueError: operands of different shapes, 0-d operands, num_keys out of range,
            dimension out of range.

    Example:
        >>> import jax.numpy as jnp, jax_mergepath as jmp
        >>> jmp.lax_sort((jnp.array([1, 0, 1]), jnp.array([5.0, 7.0, 2.0])), num_keys=2)
        (Array([0, 1, 1], dtype=int32), Array([7., 2., 5.], dtype=float32))
    """
    op = "lax_sort"
    single = not isinstance(operands, list | tuple)
    ops_in = [operands] if single else list(operands)
    if not ops_in:
        raise ValueError(f"jax_mergepath.{op}: operands is empty")
    if (
        not isinstance(num_keys, int | np.integer)
        or isinstance(num_keys, bool)
        or not 1 <= num_keys <= len(ops_in)
    ):
        raise ValueError(
            f"jax_mergepath.{op}: num_keys must be an int in [1, {len(ops_in)}], got {num_keys!r}"
        )
    keys = [as_key_array(x, f"operands[{i}]", op) for i, x in enumerate(ops_in[:num_keys])]
    others = [as_array(x, f"operands[{i + num_keys}]", op) for i, x in
              enumerate(ops_in[num_keys:])]
    ops = keys + others
    for i, x in enumerate(ops):
        if x.shape != ops[0].shape:
            raise ValueError(
                f"jax_mergepath.{op}: every operand must have the shape of operands[0] "
                f"{ops[0].shape}, operands[{i}] has {x.shape}"
            )
    if ops[0].ndim == 0:
        raise ValueError(f"jax_mergepath.{op}: operands must have at least one dimension")
    ax = normalize_axis(dimension, ops[0].ndim, "operands[0]", op)
    last = [jnp.moveaxis(x, ax, -1) for x in ops]
    out = lexsort_rows(last[:num_keys], last[num_keys:], op)
    out = [jnp.moveaxis(x, -1, ax) for x in out]
    return out[0] if single else tuple(out)


def searchsorted(
    a: ArrayLike, v: ArrayLike, side: str = "left", *, sorted_v: bool = False
) -> jax.Array:
    """Drop-in for ``jnp.searchsorted(a, v, side)``: where the queries ``v`` go in the sorted
    ``a`` (the key order: NaN last, -0.0 == +0.0).

    ``side="left"`` counts the elements of ``a`` that precede a query, ``"right"`` those that
    do not follow it. With ``sorted_v=True`` the queries are promised sorted along their last
    axis; when that axis holds all of a row's queries (1-d ``v`` for 1-d ``a``, or
    ``(*batch, q)``), the search is one merge-path pass over ``a`` and ``v`` instead of a binary
    search per query (other query shapes are searched query by query, with the same result).
    The pass reads all of ``a``: it pays when the queries are many. With a few queries a row
    (64 in rows of 1024 keys, say) the default binary search reads less and runs faster.
    Complex keys (by real, then imaginary part) are searched by a binary search in jnp over
    their order keys, with the kernels' results.

    Args:
        a: the sorted array: 1-d, or (*batch, n) with one sorted row per batch entry.
        v: the queries: any shape for 1-d ``a``; else leading dimensions equal to the batch.
            ``a`` and ``v`` are promoted to a common dtype first, as ``jnp.searchsorted`` does
            (a Python scalar takes ``a``'s dtype).
        side: "left" or "right".
        sorted_v: the queries are sorted ascending along their last axis (the result is
            unspecified, never out of bounds, when they are not).

    Returns:
        positions of v's shape, in ``jnp.searchsorted``'s dtype: int32, int64 when ``a``'s
        sorted axis has 2**31 elements or more (which needs ``jax_enable_x64``; such an axis
        is searched in jnp over the order keys, with the same result).

    Raises:
        TypeError: non-key dtypes.
        ValueError: side not "left" / "right", 0-d a, mismatched batch dimensions, or dtypes
            without a common dtype (jnp's ``TypePromotionError``).
        OverflowError: with ``jax_enable_x64`` off, ``a``'s sorted axis has 2**31 elements or
            more (as ``jnp.searchsorted``).

    Example:
        >>> import jax.numpy as jnp, jax_mergepath as jmp
        >>> a = jnp.array([1, 2, 2, 3])
        >>> jmp.searchsorted(a, jnp.array([2, 0, 5])), jmp.searchsorted(a, 2, side="right")
        (Array([1, 0, 4], dtype=int32), Array(3, dtype=int32))
    """
    op = "searchsorted"
    if side not in ("left", "right"):
        raise ValueError(f"jax_mergepath.{op}: side must be 'left' or 'right', got {side!r}")
    if not isinstance(sorted_v, bool | np.bool_):
        raise TypeError(f"jax_mergepath.{op}: sorted_v must be a Python bool")
    a_arr = as_key_array(a, "a", op)
    v_arr = as_array(v, "v", op)
    check_key_dtype(v_arr, "v", op)
    # jnp.searchsorted's promotion: a Python scalar (weakly typed) takes a's dtype.
    a_arr, v_arr = promote(a_arr, v_arr)
    check_key_dtype(a_arr, "a and v (promoted)", op)
    batch = a_arr.shape[:-1]
    if v_arr.shape[: len(batch)] != batch:
        raise ValueError(
            f"jax_mergepath.{op}: v's leading dimensions must be a's batch shape {batch}, "
            f"got v of shape {v_arr.shape}"
        )
    query_shape = v_arr.shape[len(batch) :]
    flat = v_arr.reshape(*batch, math.prod(query_shape))
    # One merge path per row of a needs that row's queries sorted as one sequence (with several
    # query axes, each sorted along the last, every query is searched on its own instead).
    out = searchsorted_rows(
        a_arr, flat, right=side == "right", sorted_v=bool(sorted_v) and len(query_shape) <= 1,
        op=op,
    )
    return out.reshape(v_arr.shape)
