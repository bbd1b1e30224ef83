"""Public merge-family functions: argument checking (at trace time), axis moves, pytrees and
dtype rules, on top of the primitives in `_primitives`.

Contract: see SPEC.md. Every check raises before anything is traced into a kernel; zero-size
merges never reach a kernel; the merged axis is moved last for the primitives and moved back.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jax_mergepath._primitives import Payload, co_rank_p, is_sorted_p, merge_p

ArrayLike = Any
PyTree = Any

_INDEX_LIMIT = 2**31  # returned indices are int32
_SUPPORTED_KINDS = "biuf"  # bool, signed, unsigned, floating (incl. bfloat16)


# ---------------------------------------------------------------- argument checking


def _as_key_array(x: ArrayLike, name: str, op: str) -> jax.Array:
    x = jnp.asarray(x)
    if jnp.issubdtype(x.dtype, jnp.complexfloating):
        raise TypeError(
            f"jax_mergepath.{op}: {name} has complex dtype {x.dtype}; complex keys have no order"
        )
    if np.dtype(x.dtype).kind not in _SUPPORTED_KINDS and x.dtype != jnp.bfloat16:
        raise TypeError(f"jax_mergepath.{op}: {name} has unsupported dtype {x.dtype}")
    if x.ndim == 0:
        raise ValueError(
            f"jax_mergepath.{op}: {name} must have at least one dimension, got a 0-d array"
        )
    return x


def _normalize_axis(axis: int, ndim: int, name: str, op: str) -> int:
    if not isinstance(axis, int | np.integer) or isinstance(axis, bool | np.bool_):
        raise TypeError(f"jax_mergepath.{op}: axis must be an int, got {axis!r}")
    if not -ndim <= axis < ndim:
        raise ValueError(
            f"jax_mergepath.{op}: axis {axis} is out of range for {name} with {ndim} dimension(s)"
        )
    return int(axis) % ndim


def _batch_shape(x: jax.Array, axis: int) -> tuple[int, ...]:
    return tuple(d for i, d in enumerate(x.shape) if i != axis)


def _check_same_dtype(a: jax.Array, b: jax.Array, names: str, op: str) -> None:
    if a.dtype != b.dtype:
        raise TypeError(
            f"jax_mergepath.{op}: {names} must have the same dtype, got {a.dtype} and {b.dtype}"
        )


def _check_batch(shapes: dict[str, tuple[int, ...]], op: str) -> tuple[int, ...]:
    items = list(shapes.items())
    first_name, first = items[0]
    for name, shape in items[1:]:
        if shape != first:
            raise ValueError(
                f"jax_mergepath.{op}: batch dimensions (all but the merged axis) "
                f"must be equal: {first_name} has {first}, {name} has {shape}"
            )
    return first


def _check_length(length: int, op: str) -> None:
    if length >= _INDEX_LIMIT:
        raise ValueError(
            f"jax_mergepath.{op}: the merged axis has {length} elements; at most "
            f"{_INDEX_LIMIT - 1} fit int32 indices"
        )


def _clamp_int32(v: ArrayLike, hi: int) -> jax.Array:
    """Integers clamped to [0, hi] (hi < 2**31), as int32, never wrapped: Python ints are clamped
    on the host (any size), int arrays in their own dtype with a bound it can hold."""
    if isinstance(v, int | np.integer) and not isinstance(v, bool | np.bool_):
        return jnp.asarray(min(max(int(v), 0), hi), np.int32)
    v = jnp.asarray(v)
    bound = min(hi, int(jnp.iinfo(v.dtype).max))
    return jnp.clip(v, 0, bound).astype(np.int32)


def _check_int_dtype(v: jax.Array, name: str, op: str) -> None:
    if not jnp.issubdtype(v.dtype, jnp.integer):
        raise TypeError(
            f"jax_mergepath.{op}: {name} must be an int or an int array, got dtype {v.dtype}"
        )


def _row_lengths(
    value: ArrayLike | None, default: int, batch: tuple[int, ...], name: str, op: str
) -> jax.Array:
    """Per-row int32 lengths of the batch shape, clamped to [0, default] (None: default)."""
    if value is None:
        return jnp.full(batch, default, np.int32)
    if isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_):
        return jnp.full(batch, _clamp_int32(value, default))
    v = jnp.asarray(value)
    _check_int_dtype(v, name, op)
    try:
        v = jnp.broadcast_to(v, batch)
    except ValueError:
        raise ValueError(
            f"jax_mergepath.{op}: {name} has shape {v.shape}; expected a scalar or "
            f"the batch shape {batch}"
        ) from None
    return _clamp_int32(v, default)


def _check_direction(descending: Any, op: str) -> bool:
    if not isinstance(descending, bool | np.bool_):
        raise TypeError(f"jax_mergepath.{op}: descending must be a Python bool")
    return bool(descending)


def _check_key_pair(
    a: ArrayLike, b: ArrayLike, names: tuple[str, str], axis: int, op: str
) -> tuple[jax.Array, jax.Array, int, tuple[int, ...]]:
    """The two sorted key arrays of a merge: arrays, supported equal dtypes, same rank, equal
    batch dimensions, a merged length that fits int32. Returns (a, b, axis, batch shape)."""
    a = _as_key_array(a, names[0], op)
    b = _as_key_array(b, names[1], op)
    _check_same_dtype(a, b, f"{names[0]} and {names[1]}", op)
    ax = _normalize_axis(axis, a.ndim, names[0], op)
    if b.ndim != a.ndim:
        raise ValueError(
            f"jax_mergepath.{op}: {names[0]} and {names[1]} must have the same number of "
            f"dimensions, got {a.ndim} and {b.ndim}"
        )
    batch = _check_batch({names[0]: _batch_shape(a, ax), names[1]: _batch_shape(b, ax)}, op)
    _check_length(a.shape[ax] + b.shape[ax], op)
    return a, b, ax, batch


# ---------------------------------------------------------------- merge family


def merge(
    a: ArrayLike,
    b: ArrayLike,
    *,
    axis: int = -1,
    descending: bool = False,
    return_indices: bool = False,
    a_length: ArrayLike | None = None,
    b_length: ArrayLike | None = None,
) -> jax.Array | tuple[jax.Array, jax.Array]:
    """Stable merge of two arrays sorted along ``axis``.

    Ties keep all of ``a`` before all of ``b``; the order is ``jnp.argsort(stable=True)``'s
    (NaN last ascending, first descending; -0.0 == +0.0). ``a_length`` / ``b_length`` (int or
    int array of the batch shape) limit each row to its leading valid elements: the row is the
    merge of the valid parts, then ``a``'s invalid tail, then ``b``'s.

    Returns the merged array (length ``m + n`` along ``axis``), and with
    ``return_indices=True`` also int32 positions into ``concatenate([a, b], axis)``.

    Example:
        >>> import jax.numpy as jnp, jax_mergepath as jmp
        >>> jmp.merge(jnp.array([1, 3, 5]), jnp.array([2, 3, 4]))
        Array([1, 2, 3, 3, 4, 5], dtype=int32)
        >>> jmp.merge(jnp.array([1, 3]), jnp.array([2]), return_indices=True)[1]
        Array([0, 2, 1], dtype=int32)
    """
    op = "merge"
    a, b, ax, batch = _check_key_pair(a, b, ("a", "b"), axis, op)
    descending = _check_direction(descending, op)
    m, n = a.shape[ax], b.shape[ax]
    a_valid = _row_lengths(a_length, m, batch, "a_length", op)
    b_valid = _row_lengths(b_length, n, batch, "b_length", op)
    payload = Payload.INDEX if return_indices else Payload.NONE
    keys, extra = _merge_last_axis(
        jnp.moveaxis(a, ax, -1), jnp.moveaxis(b, ax, -1), a_valid, b_valid, (), descending, payload
    )
    keys = jnp.moveaxis(keys, -1, ax)
    return (keys, jnp.moveaxis(extra, -1, ax)) if return_indices else keys


def _merge_last_axis(
    a: jax.Array,
    b: jax.Array,
    a_valid: jax.Array,
    b_valid: jax.Array,
    values: tuple[jax.Array, ...],
    descending: bool,
    payload: Payload,
) -> tuple[jax.Array, jax.Array | None]:
    """merge_p on arrays whose merged axis is last; trivial cases never reach a kernel."""
    m, n = a.shape[-1], b.shape[-1]
    if m == 0 or n == 0 or a.size + b.size == 0:
        keys = jnp.concatenate([a, b], axis=-1)
        if payload == Payload.INDEX:
            idx = jnp.broadcast_to(jnp.arange(m + n, dtype=np.int32), keys.shape)
            return keys, idx
        if payload == Payload.VALUE:
            return keys, jnp.concatenate(values, axis=-1)
        return keys, None
    outs = merge_p.bind(
        a, b, a_valid, b_valid, *values, descending=descending, payload=int(payload), runs=False
    )
    return outs[0], (outs[1] if len(outs) > 1 else None)


def _fusable_values(leaves: list[jax.Array], keys: jax.Array) -> bool:
    """One value array shaped like its keys moves inside the merge kernel itself."""
    return (
        len(leaves) == 1
        and leaves[0].shape == keys.shape
        and leaves[0].dtype.itemsize in (1, 2, 4, 8)
        # sub-byte dtypes (int4, float4...) are packed by XLA: not one element per byte
        and jax.dtypes.itemsize_bits(leaves[0].dtype) == 8 * leaves[0].dtype.itemsize
        and not jnp.issubdtype(leaves[0].dtype, jnp.complexfloating)
    )


def _check_values(leaves: list[jax.Array], keys: jax.Array, name: str, op: str) -> None:
    for leaf in leaves:
        if leaf.shape[: keys.ndim] != keys.shape:
            raise ValueError(
                f"jax_mergepath.{op}: every leaf of {name} must have the shape of "
                f"its keys {keys.shape} (trailing dimensions allowed), got "
                f"{leaf.shape}"
            )


def _gather_along(src: jax.Array, idx: jax.Array, ax: int) -> jax.Array:
    """src[..., idx, ...] along ax, idx shaped like the keys (src may have trailing dims)."""
    extra = src.ndim - idx.ndim
    full_idx = jnp.expand_dims(idx, tuple(range(idx.ndim, idx.ndim + extra)))
    full_idx = jnp.broadcast_to(full_idx, (*idx.shape, *src.shape[idx.ndim :]))
    return jnp.take_along_axis(src, full_idx, axis=ax)


def merge_by_key(
    a_keys: ArrayLike,
    b_keys: ArrayLike,
    a_values: PyTree,
    b_values: PyTree,
    *,
    axis: int = -1,
    descending: bool = False,
) -> tuple[jax.Array, PyTree]:
    """Stable merge of sorted keys, moving values (arrays or pytrees of arrays) with them.

    Value leaves have the shape of their keys, optionally with trailing dimensions after it
    (e.g. positions ``(n, 3)`` for keys ``(n,)``). One leaf shaped exactly like its keys moves
    inside the merge kernel; other layouts are gathered by the merge's indices.

    Example:
        >>> import jax.numpy as jnp, jax_mergepath as jmp
        >>> k, v = jmp.merge_by_key(jnp.array([1, 4]), jnp.array([2, 3]),
        ...                         jnp.array([10, 40]), jnp.array([20, 30]))
        >>> v
        Array([10, 20, 30, 40], dtype=int32)
    """
    op = "merge_by_key"
    a_keys, b_keys, ax, batch = _check_key_pair(a_keys, b_keys, ("a_keys", "b_keys"), axis, op)
    descending = _check_direction(descending, op)
    a_leaves, a_tree = jax.tree.flatten(a_values)
    b_leaves, b_tree = jax.tree.flatten(b_values)
    if a_tree != b_tree:
        raise ValueError(
            f"jax_mergepath.{op}: a_values and b_values must have the same pytree "
            f"structure, got {a_tree} and {b_tree}"
        )
    a_leaves = [jnp.asarray(x) for x in a_leaves]
    b_leaves = [jnp.asarray(x) for x in b_leaves]
    _check_values(a_leaves, a_keys, "a_values", op)
    _check_values(b_leaves, b_keys, "b_values", op)
    for va, vb in zip(a_leaves, b_leaves, strict=True):
        if va.dtype != vb.dtype:
            raise TypeError(
                f"jax_mergepath.{op}: matching leaves of a_values and b_values must have the "
                f"same dtype, got {va.dtype} and {vb.dtype}"
            )
        if va.shape[a_keys.ndim :] != vb.shape[b_keys.ndim :]:
            raise ValueError(
                f"jax_mergepath.{op}: matching leaves of a_values and b_values must have the "
                f"same trailing shape, got {va.shape} and {vb.shape}"
            )
    m, n = a_keys.shape[ax], b_keys.shape[ax]
    a_valid = jnp.full(batch, m, np.int32)
    b_valid = jnp.full(batch, n, np.int32)
    ak, bk = jnp.moveaxis(a_keys, ax, -1), jnp.moveaxis(b_keys, ax, -1)
    if _fusable_values(a_leaves, a_keys) and _fusable_values(b_leaves, b_keys):
        vals = (jnp.moveaxis(a_leaves[0], ax, -1), jnp.moveaxis(b_leaves[0], ax, -1))
        keys, moved = _merge_last_axis(ak, bk, a_valid, b_valid, vals, descending, Payload.VALUE)
        return jnp.moveaxis(keys, -1, ax), jax.tree.unflatten(a_tree, [jnp.moveaxis(moved, -1, ax)])
    keys, idx = _merge_last_axis(ak, bk, a_valid, b_valid, (), descending, Payload.INDEX)
    idx = jnp.moveaxis(idx, -1, ax)
    out_leaves = [
        _gather_along(jnp.concatenate([va, vb], axis=ax), idx, ax)
        for va, vb in zip(a_leaves, b_leaves, strict=True)
    ]
    return jnp.moveaxis(keys, -1, ax), jax.tree.unflatten(a_tree, out_leaves)


def merge_runs(
    x: ArrayLike,
    split: ArrayLike,
    *,
    axis: int = -1,
    descending: bool = False,
    return_indices: bool = False,
) -> jax.Array | tuple[jax.Array, jax.Array]:
    """Merge the sorted runs ``x[..., :split]`` and ``x[..., split:]`` of every row.

    ``split`` is an int or an int array of the batch shape, clamped to ``[0, d]``. This is the
    batch-merge layout ``[A_1|B_1|A_2|B_2|...]`` with per-row sizes. With
    ``return_indices=True`` also returns int32 positions into ``x`` along ``axis``.

    Example:
        >>> import jax.numpy as jnp, jax_mergepath as jmp
        >>> jmp.merge_runs(jnp.array([[1, 4, 2, 3], [5, 1, 2, 3]]), jnp.array([2, 1]))
        Array([[1, 2, 3, 4],
               [1, 2, 3, 5]], dtype=int32)
    """
    op = "merge_runs"
    x = _as_key_array(x, "x", op)
    descending = _check_direction(descending, op)
    ax = _normalize_axis(axis, x.ndim, "x", op)
    d = x.shape[ax]
    _check_length(d, op)
    batch = _batch_shape(x, ax)
    splits = _row_lengths(split, d, batch, "split", op)
    xl = jnp.moveaxis(x, ax, -1)
    if x.size == 0:
        keys, idx = xl, jnp.broadcast_to(jnp.arange(d, dtype=np.int32), xl.shape)
    else:
        payload = Payload.INDEX if return_indices else Payload.NONE
        outs = merge_p.bind(
            xl, xl, splits, splits, descending=descending, payload=int(payload), runs=True
        )
        keys, idx = outs[0], (outs[1] if return_indices else None)
    keys = jnp.moveaxis(keys, -1, ax)
    return (keys, jnp.moveaxis(idx, -1, ax)) if return_indices else keys


def co_rank(k: ArrayLike, a: ArrayLike, b: ArrayLike, *, descending: bool = False) -> jax.Array:
    """Merge-path partition: how many elements of ``a`` are among the first ``k`` of
    ``merge(a, b)``, so that ``merge(a, b)[:k] == merge(a[:i], b[:k - i])``.

    ``a`` and ``b`` are sorted along their last axis with equal leading (batch) dimensions; ``k``
    is an int array whose leading dimensions are that batch shape (any trailing shape of
    queries; any shape at all for 1-d ``a``). ``k`` is clamped to ``[0, m + n]``. Returns int32
    of ``k``'s shape.

    Example:
        >>> import jax.numpy as jnp, jax_mergepath as jmp
        >>> jmp.co_rank(jnp.array([0, 2, 4]), jnp.array([1, 3]), jnp.array([2, 4]))
        Array([0, 1, 2], dtype=int32)
    """
    op = "co_rank"
    a = _as_key_array(a, "a", op)
    b = _as_key_array(b, "b", op)
    _check_same_dtype(a, b, "a and b", op)
    descending = _check_direction(descending, op)
    batch = _check_batch({"a": a.shape[:-1], "b": b.shape[:-1]}, op)
    m, n = a.shape[-1], b.shape[-1]
    _check_length(m + n, op)
    k = _clamp_int32(k, m + n) if isinstance(k, int | np.integer) else jnp.asarray(k)
    _check_int_dtype(k, "k", op)
    if k.shape[: len(batch)] != batch:
        raise ValueError(
            f"jax_mergepath.{op}: k's leading dimensions must be the batch shape "
            f"{batch}, got k of shape {k.shape}"
        )
    query_shape = k.shape[len(batch) :]
    kk = _clamp_int32(k, m + n).reshape(*batch, -1)
    if kk.size == 0 or m == 0 or n == 0:
        out = kk if n == 0 else jnp.zeros_like(kk)  # one side empty: the split is trivial
    else:
        out = co_rank_p.bind(kk, a, b, descending=descending)
    return out.reshape(*batch, *query_shape)


def is_sorted(x: ArrayLike, *, axis: int = -1, descending: bool = False) -> jax.Array:
    """True for each row of ``x`` sorted along ``axis`` in SPEC.md's key order (NaN last when
    ascending, first when descending; -0.0 == +0.0). Returns bool of the batch shape.

    Example:
        >>> import jax.numpy as jnp, jax_mergepath as jmp
        >>> jmp.is_sorted(jnp.array([1.0, 2.0, jnp.nan]))
        Array(True, dtype=bool)
    """
    op = "is_sorted"
    x = _as_key_array(x, "x", op)
    descending = _check_direction(descending, op)
    ax = _normalize_axis(axis, x.ndim, "x", op)
    xl = jnp.moveaxis(x, ax, -1)
    if xl.size == 0 or xl.shape[-1] <= 1:
        return jnp.ones(xl.shape[:-1], jnp.bool_)
    return is_sorted_p.bind(xl, descending=descending)
