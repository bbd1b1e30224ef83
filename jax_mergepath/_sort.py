"""The sort family: sort, argsort, sort_by_key, lax_sort, sort_key_val, searchsorted (README
"API"), with jnp's and lax's signatures and, where they raise for an argument, their exception
types.

Contract: arguments are checked at trace time (_args.py); the sorted axis is moved last for
the row-level sorts and searches (_dispatch.py, which pick the kernels or the order-key way by key
dtype and axis length) and moved back.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import DTypeLike

from jax_mergepath._args import (
    ArrayLike,
    OperandShapeError,
    PyTree,
    as_array,
    as_key_array,
    check_direction,
    check_int_dtype,
    check_key_dtype,
    check_values,
    jnp_flag,
    normalize_axis,
    static_int,
)
from jax_mergepath._checked import require_sorted
from jax_mergepath._dtypes import promote, requested_dtype
from jax_mergepath._sharded import AxisName, Op, call


def _prepare(
    x: ArrayLike,
    axis: int | None,
    descending: bool,
    op: str,
    name: str = "x",
    traced_error: type[Exception] = TypeError,
):
    """The keys, their sorted axis and the direction, checked; axis=None flattens x (jnp)."""
    if axis is None:
        x = jnp.ravel(as_array(x, name, op))
        axis = 0
    x = as_key_array(x, name, op)
    descending = check_direction(descending, op)
    ax = normalize_axis(axis, x.ndim, name, op, traced_error=traced_error)
    return x, ax, descending


def _jnp_sort_args(a: ArrayLike, axis: int | None, kind: None, order: None, descending: bool,
                   axis_name: AxisName | None, op: str):
    """sort / argsort's arguments checked as jnp.sort / jnp.argsort check them: kind and order
    raise jnp's TypeError, a traced axis or descending jnp's ValueError (jnp's static
    arguments), descending counts by its truth. axis=None flattens; with axis_name only a 1-d
    shard flattens to the global order."""
    if axis is None and axis_name is not None and np.ndim(a) > 1:
        raise ValueError(
            f"jax_mergepath.{op}: axis=None with axis_name flattens only 1-d shards (the local "
            f"flattening of {np.ndim(a)}-d shards is not the global one): pass the sharded axis"
        )
    if kind is not None:
        raise TypeError(
            f"jax_mergepath.{op}: the 'kind' argument is not supported (as in jnp.{op}); use "
            f"stable=True or stable=False to specify sort stability"
        )
    if order is not None:
        raise TypeError(
            f"jax_mergepath.{op}: the 'order' argument is not supported (as in jnp.{op})"
        )
    descending = jnp_flag(descending, "descending", op)
    return _prepare(a, axis, descending, op, "a", traced_error=ValueError)


def sort(
    a: ArrayLike,
    axis: int | None = -1,
    *,
    kind: None = None,
    order: None = None,
    stable: bool = True,
    descending: bool = False,
    axis_name: AxisName | None = None,
) -> jax.Array:
    """Stable sort along ``axis``: a drop-in for ``jnp.sort``, with the same result bit for
    bit (every row of the other axes sorted independently, in one kernel call), but for one
    difference: subnormal floats are ordered as the numbers they are, as numpy and XLA:GPU order
    them, where XLA:CPU's own sort (so ``jnp.sort`` on the CPU) flushes them to zero.

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
        a: keys of a key dtype (bool, integers including int2 / int4, the float8 types,
            float4_e2m1fn, float16 / bfloat16 / float32 / float64, complex), >= 1-d (any shape
            with ``axis=None``).
        axis: the axis to sort along (a static int); None sorts the flattened array, as
            ``jnp.sort``.
        kind: not supported, as in ``jnp.sort``: anything but None raises.
        order: not supported, as in ``jnp.sort``: anything but None raises.
        stable: accepted as in ``jnp.sort``; the sort is always stable, which is a valid
            answer for ``stable=False`` too.
        descending: sort largest first: any value, by its truth, as in ``jnp.sort`` (a
            static argument: known when the function is traced).
        axis_name: inside ``jax.shard_map``, the mesh axis (or tuple of axes) over which
            ``axis`` is split: the arguments are this device's shards and the result is its
            even share of the global sort (README "Sharded arrays"). Not needed outside
            ``shard_map``: an array whose sharding splits ``axis`` (explicit or auto mesh
            axes, under ``jax.jit`` or not) is sorted across the devices by itself.

    Returns:
        a sorted along axis (of shape ``(a.size,)`` for ``axis=None``), of a's dtype and weak
        type.

    Raises:
        TypeError: a non-key dtype, ``a`` not an array or a scalar (a list: as ``jnp.sort``),
            ``kind`` or ``order`` given (as ``jnp.sort``).
        ValueError: a is 0-d (and axis is not None), axis out of range, or axis or descending
            traced (a ``jax.jit`` argument: make it static, as ``jnp.sort`` requires) or
            unhashable.

    Example:
        >>> import jax.numpy as jnp, jax_mergepath as jmp
        >>> jmp.sort(jnp.array([3.0, jnp.nan, -1.0, 2.0]))
        Array([-1.,  2.,  3., nan], dtype=float32)
        >>> jmp.sort(jnp.array([[3, 1, 2], [9, 8, 7]]), descending=True)
        Array([[3, 2, 1],
               [9, 8, 7]], dtype=int32)
        >>> jmp.sort(jnp.array([[3, 1], [0, 2]]), None)
        Array([0, 1, 2, 3], dtype=int32)
    """
    del stable  # always stable
    op = "sort"
    x, ax, descending = _jnp_sort_args(a, axis, kind, order, descending, axis_name, op)
    (keys,) = call(Op("sort", op, descending=descending, reverse_ties=descending),
                   [jnp.moveaxis(x, ax, -1)], axis_name)
    return jnp.moveaxis(keys, -1, ax)


def argsort(
    a: ArrayLike,
    axis: int | None = -1,
    *,
    kind: None = None,
    order: None = None,
    stable: bool = True,
    descending: bool = False,
    dtype: DTypeLike | None = None,
    axis_name: AxisName | None = None,
) -> jax.Array:
    """Stable argsort along ``axis``: a drop-in for ``jnp.argsort(x, stable=True)``, with the
    same result bit for bit, but for :func:`sort`'s one difference: subnormal floats ordered as
    numbers (XLA:CPU's own sort flushes them to zero).

    Args:
        a: keys of a key dtype, >= 1-d (any shape with ``axis=None``).
        axis: the axis to sort along (a static int); None: positions in the flattened array,
            as ``jnp.argsort``.
        kind: not supported, as in ``jnp.argsort``: anything but None raises.
        order: not supported, as in ``jnp.argsort``: anything but None raises.
        stable: accepted as in ``jnp.argsort``; the sort is always stable, which is a valid
            answer for ``stable=False`` too.
        descending: largest first; ties still keep their input order. Any value, by its
            truth, as in ``jnp.argsort`` (a static argument).
        axis_name: inside ``jax.shard_map``, the mesh axis (or tuple of axes) over which
            ``axis`` is split: the arguments are this device's shards and the result is its
            even share of the global argsort, in global positions (README "Sharded arrays").
            Not needed outside ``shard_map``: an array whose sharding splits ``axis``
            (explicit or auto mesh axes, under ``jax.jit`` or not) is sorted across the devices
            by itself.
        dtype: the positions' dtype, as ``jnp.argsort``'s ``dtype`` (canonicalized as jnp
            does: int64 is int32 with x64 off, with jnp's warning; positions that do not fit
            wrap, as jnp's iota of that dtype).

    Returns:
        positions along axis such that ``take_along_axis(a, idx, axis)`` is sorted, in
        ``dtype``, else ``jnp.argsort``'s: int32, or int64 when ``jax_enable_x64`` is on. An axis of
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
        >>> jmp.argsort(jnp.array([[2, 1], [0, 3]]), axis=None)
        Array([2, 1, 0, 3], dtype=int32)
    """
    del stable  # always stable
    op = "argsort"
    x, ax, descending = _jnp_sort_args(a, axis, kind, order, descending, axis_name, op)
    positions = None if dtype is None else requested_dtype(dtype, op)
    (idx,) = call(Op("argsort", op, descending=descending), [jnp.moveaxis(x, ax, -1)],
                  axis_name)
    idx = jnp.moveaxis(idx, -1, ax)
    return idx if positions is None else idx.astype(positions)


def _check_leaves(values: PyTree, keys: jax.Array, name: str, op: str):
    leaves, tree = jax.tree.flatten(values)
    leaves = [as_array(v, name, op) for v in leaves]
    check_values(leaves, keys, name, op)
    return leaves, tree


def sort_by_key(
    keys: ArrayLike,
    values: PyTree,
    *,
    axis: int = -1,
    descending: bool = False,
    axis_name: AxisName | None = None,
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
        axis_name: inside ``jax.shard_map``, the mesh axis (or tuple of axes) over which
            ``axis`` is split: the arguments are this device's shards and the result is its
            even share of the global sort (README "Sharded arrays"). Not needed outside
            ``shard_map``: an array whose sharding splits ``axis`` (explicit or auto mesh
            axes, under ``jax.jit`` or not) is sorted across the devices by itself.

    Returns:
        ``(sorted keys, values in the same pytree structure, permuted)``.

    Raises:
        TypeError: as for :func:`sort`, or ``descending`` not a bool.
        ValueError: as for :func:`sort` (but ``descending``), when a leaf's leading shape is not
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
    last = keys.ndim - 1
    out = call(Op("sort_by_key", op, descending=descending),
               [jnp.moveaxis(x, ax, last) for x in [keys, *leaves]], axis_name)
    out = [jnp.moveaxis(x, last, ax) for x in out]
    return out[0], jax.tree.unflatten(tree, out[1:])


def _lax_sort(
    ops_in: list[ArrayLike], names: list[str], dimension: int, num_keys: int, op: str,
    axis_name: AxisName | None,
) -> list[jax.Array]:
    """lax.sort of the operands `ops_in` (named `names` in messages) by the first num_keys."""
    keys = [as_key_array(x, name, op) for x, name in
            zip(ops_in[:num_keys], names[:num_keys], strict=True)]
    others = [as_array(x, name, op) for x, name in
              zip(ops_in[num_keys:], names[num_keys:], strict=True)]
    ops = keys + others
    for name, x in zip(names, ops, strict=True):
        if x.shape != ops[0].shape:
            raise OperandShapeError(
                f"jax_mergepath.{op}: every operand must have the shape of {names[0]} "
                f"{ops[0].shape}, {name} has {x.shape}"
            )
    if ops[0].ndim == 0:
        raise ValueError(f"jax_mergepath.{op}: operands must have at least one dimension")
    ax = normalize_axis(dimension, ops[0].ndim, names[0], op, arg="dimension")
    out = call(Op("lax_sort", op, nk=num_keys), [jnp.moveaxis(x, ax, -1) for x in ops],
               axis_name)
    return [jnp.moveaxis(x, -1, ax) for x in out]


def lax_sort(
    operand: ArrayLike | Sequence[ArrayLike],
    dimension: int = -1,
    is_stable: bool = True,
    num_keys: int = 1,
    *,
    axis_name: AxisName | None = None,
) -> jax.Array | tuple[jax.Array, ...]:
    """Drop-in for ``jax.lax.sort``: sorts ``operand`` along ``dimension`` by the first
    ``num_keys`` of its arrays, lexicographically, moving the others along.

    Always stable, which is a valid answer for ``is_stable=False`` too. The order of each key
    is ``jnp.argsort(stable=True)``'s (NaN last, -0.0 == +0.0; complex keys by real, then
    imaginary part); it differs from ``jax.lax.sort`` on the CPU only in ordering subnormal
    floats as numbers (XLA:CPU flushes them to zero). Several keys are packed into one unsigned
    key when their widths sum to at most 64 bits; integer and bool keys packed so are unpacked
    from the sorted key (never gathered). Arrays keep their dtypes and weak types, bit for bit
    (values narrower than a byte move as uint8). Axes of 2**31 elements or more run as
    ``lax.sort`` of the order keys, with the same result.

    Args:
        operand: one array, or a sequence (list, tuple) of arrays of one shape, keys first.
        dimension: the axis to sort along (a static int).
        is_stable: accepted as in ``jax.lax.sort``; the sort is always stable.
        num_keys: how many leading arrays are keys (a static int, 1 <= num_keys <=
            len(operand); 1 for a single array).
        axis_name: inside ``jax.shard_map``, the mesh axis (or tuple of axes) over which
            ``dimension`` is split: the arguments are this device's shards and the result is its
            even share of the global sort (README "Sharded arrays"). Not needed outside
            ``shard_map``: an array whose sharding splits ``dimension`` (explicit or auto mesh
            axes, under ``jax.jit`` or not) is sorted across the devices by itself.

    Returns:
        As ``jax.lax.sort``: the sorted array for a single array; a tuple of the sorted arrays
        for a sequence (a one-element sequence too).

    Raises:
        TypeError: an empty sequence (as ``jax.lax.sort``), an operand that is not an array
            or a scalar (a nested list), a key of a non-key dtype, ``dimension`` or ``num_keys``
            not an int, or traced (a ``jax.jit`` argument: make it static).
        ValueError: arrays of different shapes, 0-d arrays, num_keys out of range (or not 1
            for a single array), dimension out of range.

    Example:
        >>> import jax.numpy as jnp, jax_mergepath as jmp
        >>> jmp.lax_sort((jnp.array([1, 0, 1]), jnp.array([5.0, 7.0, 2.0])), num_keys=2)
        (Array([0, 1, 1], dtype=int32), Array([7., 2., 5.], dtype=float32))
        >>> jmp.lax_sort(jnp.array([[3, 1, 2]]), 1)
        Array([[1, 2, 3]], dtype=int32)
    """
    del is_stable  # always stable
    op = "lax_sort"
    single = not isinstance(operand, Sequence)
    ops_in = [operand] if single else list(operand)
    if not ops_in:
        raise TypeError(f"jax_mergepath.{op}: operand is an empty sequence; sort needs at "
                        f"least one array")
    num_keys = static_int(num_keys, "num_keys", op)
    if single and num_keys != 1:
        raise ValueError(
            f"jax_mergepath.{op}: num_keys must be 1 for a single array, got {num_keys}"
        )
    if not 1 <= num_keys <= len(ops_in):
        raise ValueError(
            f"jax_mergepath.{op}: num_keys must be an int in [1, {len(ops_in)}], got {num_keys!r}"
        )
    names = ["operand"] if single else [f"operand[{i}]" for i in range(len(ops_in))]
    out = _lax_sort(ops_in, names, dimension, num_keys, op, axis_name)
    return out[0] if single else tuple(out)


def sort_key_val(
    keys: ArrayLike,
    values: ArrayLike,
    dimension: int = -1,
    is_stable: bool = True,
    *,
    axis_name: AxisName | None = None,
) -> tuple[jax.Array, jax.Array]:
    """Drop-in for ``jax.lax.sort_key_val``: sorts ``keys`` along ``dimension`` and moves
    ``values`` (an array of the keys' shape) with them.

    Always stable (ties keep their input order), which is a valid answer for
    ``is_stable=False`` too. The key order is :func:`lax_sort`'s. For values of another shape
    (trailing dimensions) or a pytree of values, see :func:`sort_by_key`.

    Args:
        keys: keys of a key dtype, >= 1-d.
        values: an array of the keys' shape, any dtype.
        dimension: the axis to sort along (a static int).
        is_stable: accepted as in ``jax.lax.sort_key_val``; the sort is always stable.
        axis_name: inside ``jax.shard_map``, the mesh axis (or tuple of axes) over which
            ``dimension`` is split: the arguments are this device's shards and the result is its
            even share of the global sort (README "Sharded arrays"). Not needed outside
            ``shard_map``: an array whose sharding splits ``dimension`` (explicit or auto mesh
            axes, under ``jax.jit`` or not) is sorted across the devices by itself.

    Returns:
        ``(sorted keys, values permuted with them)``.

    Raises:
        TypeError: keys of a non-key dtype, keys or values not an array or a scalar (a
            list), ``dimension`` not an int or traced (a ``jax.jit`` argument: make it static).
        ValueError: values not of the keys' shape, 0-d keys, dimension out of range.

    Example:
        >>> import jax.numpy as jnp, jax_mergepath as jmp
        >>> jmp.sort_key_val(jnp.array([2, 0, 1, 0]), jnp.array([10, 11, 12, 13]))
        (Array([0, 0, 1, 2], dtype=int32), Array([11, 13, 12, 10], dtype=int32))
    """
    del is_stable  # always stable
    k, v = _lax_sort([keys, values], ["keys", "values"], dimension, 1, "sort_key_val",
                     axis_name)
    return k, v


SEARCH_METHODS = ("compare_all", "scan", "scan_unrolled", "sort")  # jnp.searchsorted's


def searchsorted(
    a: ArrayLike,
    v: ArrayLike,
    side: str = "left",
    sorter: ArrayLike | None = None,
    *,
    method: str = "scan",
    sorted_v: bool = False,
    axis_name: AxisName | None = None,
) -> jax.Array:
    """Drop-in for ``jnp.searchsorted(a, v, side, sorter, method=...)``: where the queries
    ``v`` go in the sorted ``a`` (the key order: NaN last, -0.0 == +0.0).

    ``side="left"`` counts the elements of ``a`` that precede a query, ``"right"`` those that
    do not follow it. ``sorter`` (as in ``jnp.searchsorted``) gives the order of an unsorted
    ``a``: the search runs in ``a[sorter]``.

    ``method`` takes ``jnp.searchsorted``'s values, with identical results: jnp picks between a
    binary search in a ``lax.scan`` ('scan'), the same unrolled ('scan_unrolled'), a sort of
    ``a`` and ``v`` together ('sort') and comparing every pair ('compare_all'); here every
    method runs the same kernel, a binary search per query. The fast path for sorted queries
    is ``sorted_v=True`` instead: the queries are promised sorted along their last axis, and
    when that axis holds all of a row's queries (1-d ``v`` for 1-d ``a``, or ``(*batch, q)``),
    the search is one merge-path pass over ``a`` and ``v`` (other query shapes are searched
    query by query, with the same result). The pass reads all of ``a``: it pays when the
    queries are many. With a few queries a row (64 in rows of 1024 keys, say) the binary
    search reads less and runs faster. Complex keys (by real, then imaginary part) are
    searched by a binary search in jnp over their order keys, with the kernels' results.

    Args:
        a: the sorted array: 1-d, or (*batch, n) with one sorted row per batch entry.
        v: the queries: any shape for 1-d ``a``; else leading dimensions equal to the batch.
            ``a`` and ``v`` are promoted to a common dtype first, as ``jnp.searchsorted`` does
            (a Python scalar takes ``a``'s dtype).
        side: "left" or "right".
        sorter: None, or int positions of ``a``'s shape (a's batch shape and any row length)
            that sort each row: the search runs in ``take_along_axis(a, sorter, -1)``
            (``a[sorter]`` for 1-d ``a``; negative positions count from the end, positions
            out of range are clamped, as jnp's indexing does).
        method: 'scan' (default), 'scan_unrolled', 'sort' or 'compare_all', as in
            ``jnp.searchsorted``; the same search for each (for sorted queries, use
            ``sorted_v``).
        sorted_v: the queries are sorted ascending along their last axis (the result is
            unspecified, never out of bounds, when they are not).
        axis_name: inside ``jax.shard_map``, the mesh axis (or axes) over which ``a``'s
            sorted axis is split: ``a`` and ``v`` are this device's shards (its part of the
            sorted ``a``, its own queries) and the result is its queries' global positions
            (README "Sharded arrays"). Outside ``shard_map``, an ``a`` whose sharding splits
            its sorted axis (explicit or auto mesh axes) is searched shard by shard by itself
            (the counts summed; never a gather of ``a``).

    Returns:
        positions of v's shape, in ``jnp.searchsorted``'s dtype: int32, int64 when ``a``'s
        sorted axis has 2**31 elements or more (which needs ``jax_enable_x64``; such an axis
        is searched in jnp over the order keys, with the same result).

    Raises:
        TypeError: non-key dtypes, ``a``, ``v`` or ``sorter`` not an array or a scalar (a list,
            as ``jnp.searchsorted``), a ``sorter`` that is not of an integer dtype.
        ValueError: side not "left" / "right" or an unknown method (as
            ``jnp.searchsorted``), 0-d a, mismatched batch dimensions, a ``sorter`` whose
            leading dimensions are not a's, or dtypes without a common dtype (jnp's
            ``TypePromotionError``).
        OverflowError: with ``jax_enable_x64`` off, ``a``'s sorted axis has 2**31 elements or
            more (as ``jnp.searchsorted``).

    Example:
        >>> import jax.numpy as jnp, jax_mergepath as jmp
        >>> a = jnp.array([1, 2, 2, 3])
        >>> jmp.searchsorted(a, jnp.array([2, 0, 5])), jmp.searchsorted(a, 2, side="right")
        (Array([1, 0, 4], dtype=int32), Array(3, dtype=int32))
        >>> jmp.searchsorted(jnp.array([3, 1, 2]), 2, sorter=jnp.array([1, 2, 0]))
        Array(1, dtype=int32)
    """
    op = "searchsorted"
    if side not in ("left", "right"):
        raise ValueError(
            f"jax_mergepath.{op}: invalid argument side={side!r}, expected 'left' or 'right'"
        )
    if method not in SEARCH_METHODS:
        raise ValueError(
            f"jax_mergepath.{op}: invalid argument method={method!r}, expected one of "
            f"{list(SEARCH_METHODS)} (as jnp.searchsorted; every method runs the same search "
            f"here: for sorted queries pass sorted_v=True)"
        )
    if not isinstance(sorted_v, bool | np.bool_):
        raise TypeError(f"jax_mergepath.{op}: sorted_v must be a Python bool")
    a_arr = as_key_array(a, "a", op)
    v_arr = as_array(v, "v", op)
    check_key_dtype(v_arr, "v", op)
    # jnp.searchsorted's promotion: a Python scalar (weakly typed) takes a's dtype.
    a_arr, v_arr = promote(a_arr, v_arr)
    check_key_dtype(a_arr, "a and v (promoted)", op)
    batch = a_arr.shape[:-1]
    if sorter is not None:
        a_arr = _apply_sorter(a_arr, sorter, op)
    require_sorted(a_arr, "a" if sorter is None else "a[sorter]", op, False, axis_name=axis_name)
    if sorted_v and v_arr.ndim > 0:
        require_sorted(v_arr, "v (sorted_v=True)", op, False, axis_name=axis_name)
    if v_arr.shape[: len(batch)] != batch:
        raise ValueError(
            f"jax_mergepath.{op}: v's leading dimensions must be a's batch shape {batch}, "
            f"got v of shape {v_arr.shape}"
        )
    query_shape = v_arr.shape[len(batch) :]
    flat = v_arr.reshape(*batch, math.prod(query_shape))
    # One merge path per row of a needs that row's queries sorted as one sequence (with several
    # query axes, each sorted along the last, every query is searched on its own instead).
    search = Op("searchsorted", op, right=side == "right",
                sorted_v=bool(sorted_v) and len(query_shape) <= 1)
    (out,) = call(search, [a_arr, flat], axis_name)
    return out.reshape(v_arr.shape)


def _apply_sorter(a: jax.Array, sorter: ArrayLike, op: str) -> jax.Array:
    """a's rows in the order `sorter` gives (jnp.searchsorted's a[sorter], row by row)."""
    idx = as_array(sorter, "sorter", op)
    check_int_dtype(idx, "sorter", op)
    if idx.ndim != a.ndim or idx.shape[:-1] != a.shape[:-1]:
        raise ValueError(
            f"jax_mergepath.{op}: sorter must have a's batch shape {a.shape[:-1]} followed by "
            f"one row axis, got sorter of shape {idx.shape} for a of shape {a.shape}"
        )
    return jnp.take_along_axis(a, idx, axis=-1, mode="clip")  # (negative ones count from the end)
