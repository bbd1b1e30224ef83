"""The merge family: merge, merge_by_key, merge_runs, co_rank, is_sorted (README "API").

Contract: arguments are checked at trace time (_args.py); the merged axis is moved last for
the row-level merges (_dispatch.py, which pick the kernels or the order-key way by key dtype and
axis length) and moved back. Inputs that must be sorted go through require_sorted
(_checked.py), which emits nothing unless check_sorted_inputs is on.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from jax_mergepath._args import (
    ArrayLike,
    PyTree,
    as_array,
    as_index_array,
    as_key_array,
    batch_shape,
    check_batch,
    check_direction,
    check_key_pair,
    check_values,
    clamp_index,
    normalize_axis,
    promote_keys,
    row_lengths,
)
from jax_mergepath._checked import require_sorted
from jax_mergepath._dispatch import (
    merge_by_key_rows,
    merge_rows,
)
from jax_mergepath._dtypes import check_x64_length, position_dtype, promote
from jax_mergepath._primitives import Payload
from jax_mergepath._sharded import AxisName, Op, call, check_axis_name


def merge(
    a: ArrayLike,
    b: ArrayLike,
    *,
    axis: int = -1,
    descending: bool = False,
    return_indices: bool = False,
    a_length: ArrayLike | None = None,
    b_length: ArrayLike | None = None,
    axis_name: str | tuple[str, ...] | None = None,
) -> jax.Array | tuple[jax.Array, jax.Array]:
    """Stable merge of two arrays sorted along ``axis``.

    Ties keep all of ``a`` before all of ``b``; the order is ``jnp.argsort(stable=True)``'s
    (NaN last ascending, first descending; -0.0 == +0.0; complex keys by real, then imaginary
    part). Every other dimension is a batch of rows merged independently, in one kernel call
    (``jax.vmap`` of ``merge`` is the same call). ``a`` and ``b`` of different dtypes are
    promoted as ``jnp.concatenate`` promotes them (weak types included); the result keeps the
    promoted dtype and weak type, bit for bit. Complex keys, and merged axes of 2**31 elements
    or more (with ``jax_enable_x64`` on), merge as a stable sort of their order keys, with the
    same result.

    Inputs not sorted along ``axis`` break the precondition: the order of the result is then
    unspecified, but every output row is still a permutation of its inputs and nothing is read
    or written out of bounds. ``is_sorted`` checks the precondition, and inside
    ``check_sorted_inputs()`` an unsorted input raises (under ``jax.jit``: through
    ``checkify.checkify``), naming it and its first unsorted row.

    Args:
        a: keys sorted along ``axis`` (in the direction asked), of a key dtype (bool, integers
            including int2 / int4, the float8 types, float4_e2m1fn, float16 / bfloat16 /
            float32 / float64, complex).
        b: keys of ``a``'s rank, sorted likewise; the dimensions other than ``axis`` must
            equal ``a``'s.
        axis: the axis to merge along.
        descending: ``a`` and ``b`` are sorted largest first; so is the result.
        return_indices: also return, for each output, its position in
            ``concatenate([a, b], axis)``: int32, or int64 when ``jax_enable_x64`` is on (as
            ``jnp.argsort``).
        a_length: how many leading elements of each row of ``a`` are valid: an int or an int
            array of the batch shape, clamped to ``[0, m]`` (a negative length is 0, one past
            the row is ``m``). None: all ``m``.
        b_length: the same for ``b``, clamped to ``[0, n]``. With either length given, each
            output row is the merge of the valid parts, then ``a``'s invalid tail, then
            ``b``'s, in their input order.
        axis_name: inside ``jax.shard_map``, the mesh axis (or axes) over which ``axis`` is
            split: ``a`` and ``b`` are this device's shards of the globally sorted arrays and
            the result is its even share of the global merge (README "Sharded arrays"; not
            with lengths). Outside ``shard_map``, arrays whose sharding splits ``axis``
            (explicit or auto mesh axes, under ``jax.jit`` or not) merge across the devices by
            themselves, moving only the elements whose device changes.

    Returns:
        The merged array, of length ``m + n`` along ``axis``; with ``return_indices=True``,
        ``(merged, indices)``.

    Raises:
        TypeError: a non-key dtype, an argument that is not an array or a scalar (a list, as
            jnp's functions refuse them), lengths that are not integers, or ``descending`` not
            a bool.
        ValueError: 0-d inputs, different ranks, ``axis`` out of range, batch dimensions that
            differ, lengths not of the batch shape, ``m + n`` of 2**31 or more with
            ``jax_enable_x64`` off, or dtypes without a common dtype (jnp's
            ``TypePromotionError``, as ``jnp.concatenate`` raises it).

    Example:
        >>> import jax.numpy as jnp, jax_mergepath as jmp
        >>> jmp.merge(jnp.array([1, 3, 5]), jnp.array([2, 3, 4]))
        Array([1, 2, 3, 3, 4, 5], dtype=int32)
        >>> jmp.merge(jnp.array([1, 3]), jnp.array([2]), return_indices=True)[1]
        Array([0, 2, 1], dtype=int32)
    """
    op = "merge"
    a, b, ax, batch = check_key_pair(a, b, ("a", "b"), axis, op)
    descending = check_direction(descending, op)
    m, n = a.shape[ax], b.shape[ax]
    a_valid = row_lengths(a_length, m, batch, "a_length", op)
    b_valid = row_lengths(b_length, n, batch, "b_length", op)
    full_rows = a_length is None and b_length is None
    if axis_name is not None and not full_rows:
        raise ValueError(f"jax_mergepath.{op}: a_length / b_length do not go with axis_name")
    al, bl = jnp.moveaxis(a, ax, -1), jnp.moveaxis(b, ax, -1)
    _require_pair_sorted(al, bl, a_valid, b_valid, a_length, b_length, ("a", "b"), descending, op,
                         axis_name)
    if full_rows:
        out = call(Op("merge", op, descending=descending, positions=bool(return_indices)),
                   [al, bl], axis_name)
        out = [jnp.moveaxis(x, -1, ax) for x in out]
        return tuple(out) if return_indices else out[0]
    payload = Payload.INDEX if return_indices else Payload.NONE
    keys, extra = merge_rows(al, bl, a_valid, b_valid, (), descending=descending, payload=payload,
                             full_rows=False, op=op)
    keys = jnp.moveaxis(keys, -1, ax)
    return (keys, jnp.moveaxis(extra, -1, ax)) if return_indices else keys


def _require_pair_sorted(
    a: jax.Array,
    b: jax.Array,
    a_valid: jax.Array,
    b_valid: jax.Array,
    a_length: ArrayLike | None,
    b_length: ArrayLike | None,
    names: tuple[str, str],
    descending: bool,
    op: str,
    axis_name: AxisName | None = None,
) -> None:
    """The checked mode's check of a merge's inputs (merged axis last): the valid prefix of
    each row when a length was given, else the whole row (along the split axis with
    axis_name)."""
    for x, valid, length, name, length_name in (
        (a, a_valid, a_length, names[0], "a_length"),
        (b, b_valid, b_length, names[1], "b_length"),
    ):
        if length is None:
            require_sorted(x, name, op, descending, axis_name=axis_name)
        else:
            require_sorted(x, f"{name} (its valid prefix, {length_name})", op, descending,
                           end=valid)


def merge_by_key(
    a_keys: ArrayLike,
    b_keys: ArrayLike,
    a_values: PyTree,
    b_values: PyTree,
    *,
    axis: int = -1,
    descending: bool = False,
    a_length: ArrayLike | None = None,
    b_length: ArrayLike | None = None,
    axis_name: AxisName | None = None,
) -> tuple[jax.Array, PyTree]:
    """Stable merge of sorted keys, moving values (arrays or pytrees of arrays) with them.

    Value leaves have the shape of their keys, optionally with trailing dimensions after it
    (e.g. positions ``(n, 3)`` for keys ``(n,)``). One leaf shaped exactly like its keys moves
    inside the merge kernel (a dtype narrower than a byte as uint8); other layouts are gathered
    by the merge's indices. Values move bit for bit (NaN payloads, -0.0). The key order, the
    promotion of mixed key dtypes, the precondition and the ragged rows (``a_length`` /
    ``b_length``) are :func:`merge`'s: with lengths, each output row is the merge of the valid
    parts, then ``a``'s invalid tail, then ``b``'s, and the values follow their keys there too.
    Matching value leaves of different dtypes are promoted as ``jnp.concatenate`` promotes
    them.

    Args:
        a_keys: keys sorted along ``axis``, of a key dtype.
        b_keys: keys of ``a_keys``' rank, sorted likewise; other dimensions equal.
        a_values: an array or a pytree of arrays moved with ``a_keys``.
        b_values: the same pytree structure, leaves of the same trailing shapes.
        axis: the keys' axis to merge along (the values' same axis moves with it).
        descending: the keys are sorted largest first; so is the result.
        a_length: how many leading elements of each row of ``a_keys`` are valid: an int or an
            int array of the batch shape, clamped to ``[0, m]``. None: all ``m``.
        b_length: the same for ``b_keys``, clamped to ``[0, n]``.
        axis_name: inside ``jax.shard_map``, the mesh axis (or axes) over which ``axis`` is
            split: the arguments are this device's shards and the result is its even share of
            the global merge (README "Sharded arrays"; not with lengths). Outside
            ``shard_map``, arrays whose sharding splits ``axis`` merge across the devices by
            themselves.

    Returns:
        ``(merged keys, merged values)``, the values in ``a_values``' pytree structure.

    Raises:
        TypeError: as for :func:`merge`.
        ValueError: as for :func:`merge`, pytrees of different structures, a leaf whose
            leading shape is not its keys' shape, or matching leaves without a common dtype.

    Example:
        >>> import jax.numpy as jnp, jax_mergepath as jmp
        >>> k, v = jmp.merge_by_key(jnp.array([1, 4]), jnp.array([2, 3]),
        ...                         jnp.array([10, 40]), jnp.array([20, 30]))
        >>> v
        Array([10, 20, 30, 40], dtype=int32)
        >>> k, v = jmp.merge_by_key(jnp.array([1, 4, 0]), jnp.array([2, 3]),
        ...                         jnp.array([10, 40, 0]), jnp.array([20, 30]), a_length=2)
        >>> k, v
        (Array([1, 2, 3, 4, 0], dtype=int32), Array([10, 20, 30, 40,  0], dtype=int32))
    """
    op = "merge_by_key"
    a_keys, b_keys, ax, batch = check_key_pair(a_keys, b_keys, ("a_keys", "b_keys"), axis, op)
    descending = check_direction(descending, op)
    a_leaves, a_tree = jax.tree.flatten(a_values)
    b_leaves, b_tree = jax.tree.flatten(b_values)
    if a_tree != b_tree:
        raise ValueError(
            f"jax_mergepath.{op}: a_values and b_values must have the same pytree "
            f"structure, got {a_tree} and {b_tree}"
        )
    a_leaves = [as_array(x, "a_values", op) for x in a_leaves]
    b_leaves = [as_array(x, "b_values", op) for x in b_leaves]
    check_values(a_leaves, a_keys, "a_values", op)
    check_values(b_leaves, b_keys, "b_values", op)
    pairs = [promote(va, vb) for va, vb in zip(a_leaves, b_leaves, strict=True)]
    a_leaves, b_leaves = [va for va, _ in pairs], [vb for _, vb in pairs]
    for va, vb in zip(a_leaves, b_leaves, strict=True):
        if va.shape[a_keys.ndim :] != vb.shape[b_keys.ndim :]:
            raise ValueError(
                f"jax_mergepath.{op}: matching leaves of a_values and b_values must have the "
                f"same trailing shape, got {va.shape} and {vb.shape}"
            )
    m, n = a_keys.shape[ax], b_keys.shape[ax]
    a_valid = row_lengths(a_length, m, batch, "a_length", op)
    b_valid = row_lengths(b_length, n, batch, "b_length", op)
    full_rows = a_length is None and b_length is None
    if axis_name is not None and not full_rows:
        raise ValueError(f"jax_mergepath.{op}: a_length / b_length do not go with axis_name")
    ak, bk = jnp.moveaxis(a_keys, ax, -1), jnp.moveaxis(b_keys, ax, -1)
    _require_pair_sorted(ak, bk, a_valid, b_valid, a_length, b_length, ("a_keys", "b_keys"),
                         descending, op, axis_name)
    if full_rows:
        last = a_keys.ndim - 1
        values = [jnp.moveaxis(x, ax, last) for x in [*a_leaves, *b_leaves]]
        out = call(Op("merge_by_key", op, descending=descending), [ak, bk, *values], axis_name)
        out = [jnp.moveaxis(x, last, ax) for x in out]
        return out[0], jax.tree.unflatten(a_tree, out[1:])
    keys, out_leaves = merge_by_key_rows(ak, bk, a_valid, b_valid, a_leaves, b_leaves,
                                         descending=descending, full_rows=full_rows, op=op,
                                         leaf_axis=ax)
    return jnp.moveaxis(keys, -1, ax), jax.tree.unflatten(a_tree, out_leaves)


def merge_runs(
    x: ArrayLike,
    split: ArrayLike,
    *,
    axis: int = -1,
    descending: bool = False,
    return_indices: bool = False,
    axis_name: AxisName | None = None,
) -> jax.Array | tuple[jax.Array, jax.Array]:
    """Merge the sorted runs ``x[..., :split]`` and ``x[..., split:]`` of every row.

    This is the batch-merge layout ``[A_1|B_1|A_2|B_2|...]`` with per-row sizes; ties keep the
    first run's elements first. The key order and the precondition (each run sorted) are
    :func:`merge`'s.

    Args:
        x: keys of a key dtype, >= 1-d; each row along ``axis`` holds two sorted runs.
        split: where each row's second run starts: an int or an int array of the batch shape,
            clamped to ``[0, d]`` (``d`` the row length).
        axis: the axis of the rows.
        descending: the runs are sorted largest first; so is the result.
        return_indices: also return, for each output, its position in the row of ``x``
            (int32, or int64 when ``jax_enable_x64`` is on).
        axis_name: inside ``jax.shard_map``, the mesh axis (or axes) over which ``axis`` is
            split: ``x`` is this device's shard, ``split`` a position in the whole row, and the
            result its even share of the merged rows (README "Sharded arrays"). Outside
            ``shard_map``, an array whose sharding splits ``axis`` merges across the devices
            by itself.

    Returns:
        ``x`` with every row merged; with ``return_indices=True``, ``(merged, indices)``.

    Raises:
        TypeError: a non-key dtype, ``x`` or ``split`` not an array or a scalar (a list), a
            split that is not an integer, or ``descending`` not a bool.
        ValueError: 0-d ``x``, ``axis`` out of range, ``split`` not of the batch shape, or
            rows of 2**31 or more elements with ``jax_enable_x64`` off.

    Example:
        >>> import jax.numpy as jnp, jax_mergepath as jmp
        >>> jmp.merge_runs(jnp.array([[1, 4, 2, 3], [5, 1, 2, 3]]), jnp.array([2, 1]))
        Array([[1, 2, 3, 4],
               [1, 2, 3, 5]], dtype=int32)
    """
    op = "merge_runs"
    x = as_key_array(x, "x", op)
    descending = check_direction(descending, op)
    ax = normalize_axis(axis, x.ndim, "x", op)
    d = x.shape[ax]
    whole = d if axis_name is None else d * check_axis_name(axis_name, op)  # the global row
    check_x64_length(whole, op, "the merged axis")
    batch = batch_shape(x, ax)
    splits = row_lengths(split, whole, batch, "split", op)
    xl = jnp.moveaxis(x, ax, -1)
    require_sorted(xl, "x's first run (before split)", op, descending, end=splits,
                   axis_name=axis_name)
    require_sorted(xl, "x's second run (from split on)", op, descending, begin=splits,
                   axis_name=axis_name)
    out = call(Op("merge_runs", op, descending=descending, positions=bool(return_indices)),
               [xl, splits], axis_name)
    out = [jnp.moveaxis(o, -1, ax) for o in out]
    return tuple(out) if return_indices else out[0]


def co_rank(k: ArrayLike, a: ArrayLike, b: ArrayLike, *, descending: bool = False,
            axis_name: AxisName | None = None) -> jax.Array:
    """Merge-path partition: how many elements of ``a`` are among the first ``k`` of
    ``merge(a, b)``, so that ``merge(a, b)[:k] == merge(a[:i], b[:k - i])``.

    This is the split that cuts a merge into independent pieces (the merge path): the first
    ``k`` outputs take ``i`` elements of ``a`` and ``k - i`` of ``b``. The key order and the
    precondition are :func:`merge`'s (unsorted inputs give some split in range). Complex keys
    and merged axes of 2**31 elements or more (with ``jax_enable_x64`` on) are split by a
    binary search in jnp over their order keys, with the same result.

    Args:
        k: output positions: an int or 0-d int array (for batched ``a`` and ``b``, one
            position for every row), or an int array whose leading dimensions are the batch
            shape of ``a`` and ``b`` (any trailing shape of queries; any shape at all for 1-d
            ``a``), clamped to ``[0, m + n]``.
        a: keys sorted along their last axis, of a key dtype.
        b: keys sorted likewise, with ``a``'s leading (batch) dimensions; ``a`` and ``b`` of
            different dtypes are promoted as for :func:`merge`.
        descending: ``a`` and ``b`` are sorted largest first.
        axis_name: inside ``jax.shard_map``, the mesh axis (or axes) over which the last axis of
            ``a`` and ``b`` is split: they are this device's shards of the whole sorted arrays,
            ``k`` its own queries, positions in the whole merge (README "Sharded arrays").
            Outside ``shard_map``, arrays whose sharding splits that axis are searched across
            the devices by themselves (never gathered).

    Returns:
        ``i`` of ``k``'s shape (a 0-d ``k`` with batched ``a`` and ``b``: the batch shape),
        ``max(0, k - n) <= i <= min(k, m)``: int32, or int64 when ``jax_enable_x64`` is on (as
        ``jnp.argsort``).

    Raises:
        TypeError: a non-key dtype, an argument that is not an array or a scalar (a list),
            ``k`` not of an integer dtype, or ``descending`` not a bool.
        ValueError: batch dimensions that differ, ``k``'s leading dimensions not the batch
            shape, ``m + n`` of 2**31 or more with ``jax_enable_x64`` off, or dtypes without a
            common dtype (as for :func:`merge`).

    Example:
        >>> import jax.numpy as jnp, jax_mergepath as jmp
        >>> jmp.co_rank(jnp.array([0, 2, 4]), jnp.array([1, 3]), jnp.array([2, 4]))
        Array([0, 1, 2], dtype=int32)
    """
    op = "co_rank"
    a, b = promote_keys(a, b, ("a", "b"), op)
    descending = check_direction(descending, op)
    batch = check_batch({"a": a.shape[:-1], "b": b.shape[:-1]}, op)
    g = 1 if axis_name is None else check_axis_name(axis_name, op)
    m, n = a.shape[-1] * g, b.shape[-1] * g  # (the whole arrays)
    check_x64_length(m + n, op, "the merged axis")
    kdt = position_dtype(m + n)
    k = (
        clamp_index(k, m + n, kdt)
        if isinstance(k, int | np.integer) and not isinstance(k, bool | np.bool_)
        else as_index_array(k, "k", op, kdt)
    )
    if k.ndim == 0:  # an int: one position a row
        k = jnp.broadcast_to(k, batch)
    if k.shape[: len(batch)] != batch:
        raise ValueError(
            f"jax_mergepath.{op}: k's leading dimensions must be the batch shape "
            f"{batch}, got k of shape {k.shape}"
        )
    query_shape = k.shape[len(batch) :]
    kk = clamp_index(k, m + n, kdt).reshape(*batch, math.prod(query_shape))  # (batch may hold 0)
    require_sorted(a, "a", op, descending, axis_name=axis_name)
    require_sorted(b, "b", op, descending, axis_name=axis_name)
    (out,) = call(Op("co_rank", op, descending=descending), [kk, a, b], axis_name)
    return out.reshape(*batch, *query_shape)


def is_sorted(x: ArrayLike, *, axis: int = -1, descending: bool = False,
              axis_name: AxisName | None = None) -> jax.Array:
    """Whether each row of ``x`` is sorted along ``axis``: the precondition of the merges.

    The order is the package's key order, ``jnp.argsort(stable=True)``'s: NaN last when
    ascending (first when descending), -0.0 == +0.0, equal neighbours allowed. Use it to check
    inputs before :func:`merge`, :func:`merge_by_key`, :func:`merge_runs` (each run) or
    ``searchsorted(..., sorted_v=True)``, whose results are unspecified on unsorted input;
    ``check_sorted_inputs()`` makes those functions run it on their inputs and raise.

    Args:
        x: keys of a key dtype, >= 1-d.
        axis: the axis along which rows must be sorted.
        descending: check for largest first instead.
        axis_name: inside ``jax.shard_map``, the mesh axis (or axes) over which ``axis`` is
            split: ``x`` is this device's shard and the answer is the whole row's, on every
            device (README "Sharded arrays"). Outside ``shard_map``, an array whose sharding
            splits ``axis`` is checked shard by shard by itself (one element crosses each
            shard boundary).

    Returns:
        bool of ``x``'s shape without ``axis`` (a scalar for 1-d ``x``); rows of 0 or 1 elements
        are sorted.

    Raises:
        TypeError: a non-key dtype, ``x`` not an array or a scalar (a list), or ``descending``
            not a bool.
        ValueError: 0-d ``x`` or ``axis`` out of range.

    Example:
        >>> import jax.numpy as jnp, jax_mergepath as jmp
        >>> jmp.is_sorted(jnp.array([1.0, 2.0, jnp.nan]))
        Array(True, dtype=bool)
    """
    op = "is_sorted"
    x = as_key_array(x, "x", op)
    descending = check_direction(descending, op)
    ax = normalize_axis(axis, x.ndim, "x", op)
    (ok,) = call(Op("is_sorted", op, descending=descending), [jnp.moveaxis(x, ax, -1)],
                 axis_name)
    return ok
