"""The sort family: sort, argsort, sort_by_key, lax_sort, searchsorted (README "API").

Contract: arguments are checked at trace time (_checks.py); the sorted axis is moved last for
the primitives (_primitives.py: sort_p, searchsorted_p) and moved back; rows of length 0 or 1
never reach a kernel. Several keys (lax_sort, num_keys > 1) are packed into one unsigned key
when their order keys fit 64 bits together (_order.py), and sorted least significant group
first otherwise (each sort is stable, so the groups' order is lexicographic). Integer and bool
keys packed into one key are unpacked from the sorted packed key (the keys are never gathered).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jax_mergepath._checks import (
    INDEX_LIMIT,
    ArrayLike,
    PyTree,
    as_array,
    as_key_array,
    check_direction,
    check_length,
    check_values,
    definitely,
    fusable_values,
    gather_along,
    normalize_axis,
)
from jax_mergepath._gather import take_along_bits
from jax_mergepath._order import is_invertible, pack_groups, pack_order_keys, unpack_order_keys
from jax_mergepath._primitives import Payload, searchsorted_p, sort_p


def _sort_last_axis(
    keys: jax.Array, values: tuple[jax.Array, ...], descending: bool, payload: Payload
) -> tuple[jax.Array, jax.Array | None]:
    """sort_p on keys whose sorted axis is last; rows of 0 or 1 elements never reach a kernel."""
    if keys.size == 0 or definitely(lambda: keys.shape[-1] <= 1):
        if payload == Payload.INDEX:
            return keys, jnp.zeros(keys.shape, np.int32)
        return keys, (values[0] if payload == Payload.VALUE else None)
    outs = sort_p.bind(keys, *values, descending=descending, payload=int(payload))
    return outs[0], (outs[1] if len(outs) > 1 else None)


def _prepare(x: ArrayLike, axis: int, descending: bool, op: str, name: str = "x"):
    x = as_key_array(x, name, op)
    descending = check_direction(descending, op)
    ax = normalize_axis(axis, x.ndim, name, op)
    check_length(x.shape[ax], op)
    return x, ax, descending


def sort(x: ArrayLike, *, axis: int = -1, descending: bool = False) -> jax.Array:
    """Stable sort along ``axis``: a drop-in for ``jnp.sort`` (every row of the other axes
    sorted independently, in one kernel call).

    The order is ``jnp.argsort(stable=True)``'s: NaN last (first when ``descending``),
    -0.0 == +0.0, ties in input order in both directions; sorted values are the input's bits
    (so -0.0 and NaN payloads survive). Subnormals are ordered as the numbers they are.

    Args:
        x: keys of a key dtype (bool, integers, float16/bfloat16/float32/float64), >= 1-d.
        axis: the axis to sort along.
        descending: sort largest first.

    Returns:
        x sorted along axis.

    Raises:
        TypeError: complex or non-key dtype, or descending not a bool.
        ValueError: x is 0-d, axis out of range, or the axis has 2**31 or more elements (a
            symbolic ``jax.export`` dimension that may be that long is checked at run time
            instead: JaxRuntimeError).

    Example:
        >>> import jax.numpy as jnp, jax_mergepath as jmp
        >>> jmp.sort(jnp.array([3.0, jnp.nan, -1.0, 2.0]))
        Array([-1.,  2.,  3., nan], dtype=float32)
        >>> jmp.sort(jnp.array([[3, 1, 2], [9, 8, 7]]), descending=True)
        Array([[3, 2, 1],
               [9, 8, 7]], dtype=int32)
    """
    x, ax, descending = _prepare(x, axis, descending, "sort")
    keys, _ = _sort_last_axis(jnp.moveaxis(x, ax, -1), (), descending, Payload.NONE)
    return jnp.moveaxis(keys, -1, ax)


def argsort(x: ArrayLike, *, axis: int = -1, descending: bool = False) -> jax.Array:
    """Stable argsort along ``axis``: a drop-in for ``jnp.argsort(x, stable=True)``.

    Args:
        x: keys of a key dtype, >= 1-d.
        axis: the axis to sort along.
        descending: largest first; ties still keep their input order.

    Returns:
        int32 positions along axis such that ``take_along_axis(x, idx, axis)`` is sorted.

    Raises:
        TypeError, ValueError: as for :func:`sort`.

    Example:
        >>> import jax.numpy as jnp, jax_mergepath as jmp
        >>> jmp.argsort(jnp.array([2, 1, 2, 0]))
        Array([3, 1, 0, 2], dtype=int32)
        >>> jmp.argsort(jnp.array([2, 1, 2, 0]), descending=True)
        Array([0, 2, 1, 3], dtype=int32)
    """
    x, ax, descending = _prepare(x, axis, descending, "argsort")
    _, idx = _sort_last_axis(jnp.moveaxis(x, ax, -1), (), descending, Payload.INDEX)
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
    shaped exactly like the keys, 1 to 8 bytes wide, travels inside the sort kernel; other
    layouts are gathered with the sort's permutation.

    Args:
        keys: keys of a key dtype, >= 1-d.
        values: the payload, any dtypes.
        axis: the keys' axis to sort along (the values' same axis moves with it).
        descending: largest key first; ties keep their input order.

    Returns:
        ``(sorted keys, values in the same pytree structure, permuted)``.

    Raises:
        TypeError, ValueError: as for :func:`sort`; ValueError when a leaf's leading shape is not
        the keys' shape.

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
        out, moved = _sort_last_axis(kl, (jnp.moveaxis(leaves[0], ax, -1),), descending,
                                     Payload.VALUE)
        return jnp.moveaxis(out, -1, ax), jax.tree.unflatten(tree, [jnp.moveaxis(moved, -1, ax)])
    out, idx = _sort_last_axis(kl, (), descending, Payload.INDEX)
    idx = jnp.moveaxis(idx, -1, ax)
    moved = [gather_along(leaf, idx, ax) for leaf in leaves]
    return jnp.moveaxis(out, -1, ax), jax.tree.unflatten(tree, moved)


def _max_key_bits() -> int:
    """The widest unsigned key a sort takes: 64 bits, 32 without jax_enable_x64."""
    return 64 if jax.config.jax_enable_x64 else 32


def _packed_invertible(keys: list[jax.Array]) -> jax.Array | None:
    """The keys' order keys packed into one unsigned sort key that gives them back (integer and
    bool keys whose widths fit _max_key_bits together), else None. Equal packed keys then have
    equal keys, so a stable sort of the packed key is the keys' stable lexicographic sort."""
    if not all(is_invertible(k.dtype) for k in keys):
        return None
    if sum(k.dtype.itemsize * 8 for k in keys) > _max_key_bits():
        return None
    return pack_order_keys(keys)


def _sort_with_others(key: jax.Array, others: list[jax.Array]) -> tuple[jax.Array, list]:
    """One stable sort by `key` (sorted axis last) moving `others`: none, one that rides in the
    kernel (fusable_values), or several gathered with the permutation."""
    if not others:
        return _sort_last_axis(key, (), False, Payload.NONE)[0], []
    if len(others) == 1 and fusable_values(others, key):
        sorted_key, value = _sort_last_axis(key, (others[0],), False, Payload.VALUE)
        return sorted_key, [value]
    sorted_key, perm = _sort_last_axis(key, (), False, Payload.INDEX)
    return sorted_key, [take_along_bits(x, perm, -1) for x in others]


def _lexsort_indices(keys: list[jax.Array], op: str) -> jax.Array:
    """Stable argsort (last axis) by several keys, most significant first: their order keys
    packed into unsigned keys of at most 64 bits (32 without jax_enable_x64), groups sorted
    least significant first, each sort stable."""
    max_bits = _max_key_bits()
    for k in keys:
        if k.dtype.itemsize * 8 > max_bits:
            raise TypeError(
                f"jax_mergepath.{op}: {k.dtype} keys need jax_enable_x64 for several keys"
            )
    perm = None
    for group in reversed(pack_groups(keys, max_bits)):
        packed = pack_order_keys([keys[i] for i in group])
        if perm is not None:
            packed = jnp.take_along_axis(packed, perm, axis=-1)
        _, idx = _sort_last_axis(packed, (), False, Payload.INDEX)
        perm = idx if perm is None else jnp.take_along_axis(perm, idx, axis=-1)
    assert perm is not None
    return perm


def lax_sort(
    operands: ArrayLike | Sequence[ArrayLike],
    dimension: int = -1,
    is_stable: bool = True,
    num_keys: int = 1,
) -> jax.Array | tuple[jax.Array, ...]:
    """Drop-in for ``jax.lax.sort``: sorts ``operands`` along ``dimension`` by the first
    ``num_keys`` of them, lexicographically, moving the others along.

    Always stable (``is_stable`` is accepted for compatibility). The order of each key is
    ``jnp.argsort(stable=True)``'s (NaN last, -0.0 == +0.0); it differs from ``jax.lax.sort``
    on the CPU only in ordering subnormal floats as numbers (XLA:CPU flushes them to zero).
    Several keys are packed into one unsigned key when their widths sum to at most 64 bits;
    integer and bool keys packed so are unpacked from the sorted key (never gathered).

    Args:
        operands: one array, or a sequence of arrays of one shape (keys first).
        dimension: the axis to sort along.
        is_stable: ignored: the sort is always stable.
        num_keys: how many leading operands are keys (1 <= num_keys <= len(operands)).

    Returns:
        The sorted array for a single array; otherwise a tuple of the sorted operands.

    Raises:
        TypeError: a key of complex or non-key dtype.
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
    check_length(ops[0].shape[ax], op)
    last = [jnp.moveaxis(x, ax, -1) for x in ops]
    keys_in, others_in = last[:num_keys], last[num_keys:]
    if num_keys == 1:
        key, moved = _sort_with_others(keys_in[0], others_in)
        out = [key, *moved]
    elif (packed := _packed_invertible(keys_in)) is not None:
        key, moved = _sort_with_others(packed, others_in)
        out = [*unpack_order_keys(key, [k.dtype for k in keys_in]), *moved]
    else:
        perm = _lexsort_indices(keys_in, op)
        out = [take_along_bits(x, perm, -1) for x in last]
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

    Args:
        a: the sorted array: 1-d, or (*batch, n) with one sorted row per batch entry.
        v: the queries: any shape for 1-d ``a``; else leading dimensions equal to the batch.
        side: "left" or "right".
        sorted_v: the queries are sorted ascending along their last axis (the result is
            unspecified, never out of bounds, when they are not).

    Returns:
        int32 positions of v's shape.

    Raises:
        TypeError: complex or non-key dtypes (a and v are promoted to a common dtype first, as
            ``jnp.searchsorted`` does).
        ValueError: side not "left" / "right", 0-d a, mismatched batch dimensions.

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
    a_arr = as_array(a, "a", op)
    v_arr = as_array(v, "v", op)
    for arr, name in ((a_arr, "a"), (v_arr, "v")):
        if jnp.issubdtype(arr.dtype, jnp.complexfloating):
            as_key_array(arr, name, op)  # raises the complex-key TypeError naming the argument
    # jnp.searchsorted's promotion: a Python scalar (weakly typed) takes a's dtype.
    dtype = jnp.result_type(a_arr, v_arr)
    a_arr = as_key_array(a_arr.astype(dtype), "a", op)
    v_arr = v_arr.astype(dtype)
    batch = a_arr.shape[:-1]
    if v_arr.shape[: len(batch)] != batch:
        raise ValueError(
            f"jax_mergepath.{op}: v's leading dimensions must be a's batch shape {batch}, "
            f"got v of shape {v_arr.shape}"
        )
    n = a_arr.shape[-1]
    query_shape = v_arr.shape[len(batch) :]
    queries = math.prod(query_shape)
    check_length(n, op)
    if v_arr.size == 0 or n == 0:
        return jnp.zeros(v_arr.shape, np.int32)
    flat = v_arr.reshape(*batch, queries)
    # One merge path per row of a needs that row's queries sorted as one sequence (with several
    # query axes, each sorted along the last, every query is searched on its own instead) and a
    # merged length that fits int32 positions.
    # (A symbolic merged length is assumed to fit; the kernel checks it at run time.)
    merge_path = (
        bool(sorted_v)
        and len(query_shape) <= 1
        and not definitely(lambda: n + queries >= INDEX_LIMIT)
    )
    out = searchsorted_p.bind(a_arr, flat, right=side == "right", sorted_v=merge_path)
    return out.reshape(v_arr.shape)
