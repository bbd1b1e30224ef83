"""Rows along the last axis, for every key dtype and axis length: the one place that picks how a
sort, merge, search or sortedness check runs.

Contract: arguments are checked (_args.py) and have the merged / sorted / searched axis last;
every leading dimension is a batch row. The way is picked at trace time from the key dtype and
the static length of the axis:
- kernels: keys with a kernel key (_keys.to_kernel) on an axis shorter than 2**31 elements
  (_dtypes.is_long) run the primitives (_primitives.py) on their kernel keys, mapped back bit
  for bit;
- order keys: complex keys (two keys each), and every key on a long axis (whose positions the
  int32 kernels cannot hold), order by their unsigned order keys
  (_keys.order_keys): a stable sort of them (packed into kernel sorts on a short axis;
  `lax.sort` moving the operands' bits, with int64 positions, on a long one) or a binary search
  over them in jnp. The ordering is the same, so the results are the same bit for bit.
Positions come out in jnp's dtypes (_dtypes.index_dtype / search_index_dtype); outputs keep
their operands' weak types. Values ride in a kernel when fusable_values says so, else they are
gathered with the permutation (the callers pick the payload by it).
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jax_mergepath._bits import (
    concatenate_bits,
    from_bits,
    gather_along,
    reverse_bits,
    take_along_bits,
    to_bits,
)
from jax_mergepath._dtypes import (
    as_index,
    check_x64_length,
    definitely,
    index_dtype,
    is_long,
    position_dtype,
    search_index_dtype,
    with_weak_type,
)
from jax_mergepath._keys import (
    from_kernel,
    is_complex,
    is_invertible,
    order_keys,
    pack_groups,
    pack_order_keys,
    ties_hold_other_bits,
    to_kernel,
    unpack_order_keys,
)
from jax_mergepath._primitives import (
    Payload,
    co_rank_p,
    is_sorted_p,
    merge_p,
    merge_ragged_p,
    searchsorted_p,
    sort_p,
)


def _fits(length) -> bool:
    """The kernels' int32 positions hold an axis of `length` (not _dtypes.is_long: a symbolic
    length is assumed to, and the kernels check it at run time). Read at trace time."""
    return not is_long(length)


def _kernel_way(length, dtype) -> bool:
    return _fits(length) and not is_complex(dtype)


def fusable_values(leaves: list[jax.Array], keys_shape: tuple[int, ...]) -> bool:
    """Whether the values `leaves` ride inside the sort or merge kernel with keys of shape
    `keys_shape` (in the leaves' layout): one array of that shape, of raw bits of 1, 2, 4 or 8
    bytes (dtypes narrower than a byte move as uint8, _value_in); other layouts are gathered
    with the permutation."""
    return (
        len(leaves) == 1
        and leaves[0].shape == tuple(keys_shape)
        and leaves[0].dtype.itemsize in (1, 2, 4, 8)
        and not jnp.issubdtype(leaves[0].dtype, jnp.complexfloating)
    )


def _last(x: jax.Array) -> int:
    return x.ndim - 1


def _value_in(v: jax.Array) -> jax.Array:
    """A value as the kernels move it: raw bytes, dtypes narrower than a byte as uint8."""
    return to_bits(v) if jax.dtypes.itemsize_bits(v.dtype) < 8 else v


def _value_out(moved: jax.Array, dtype, weak: bool) -> jax.Array:
    """The inverse of _value_in, weakly typed when `weak`."""
    if jax.dtypes.itemsize_bits(dtype) < 8:
        return from_bits(moved, dtype, weak)
    return with_weak_type(moved, weak)


def _keys_out(k: jax.Array, like: jax.Array) -> jax.Array:
    return with_weak_type(from_kernel(k, like.dtype), like.weak_type)


# ---------------------------------------------------------------- stable sorts of order keys


def _max_key_bits() -> int:
    """The widest unsigned key a sort takes: 64 bits, 32 without jax_enable_x64."""
    return 64 if jax.config.jax_enable_x64 else 32


def _kernel_perm(okeys: list[jax.Array]) -> jax.Array:
    """Stable lexicographic argsort (int32) of unsigned order keys (first most significant) by
    the sort kernel: the keys packed into unsigned keys of at most 64 bits (32 without x64),
    groups sorted least significant first, each sort stable."""
    perm = None
    for group in reversed(pack_groups(okeys, _max_key_bits())):
        packed = pack_order_keys([okeys[i] for i in group])
        if perm is not None:
            packed = jnp.take_along_axis(packed, perm, axis=-1)
        (_, idx) = sort_p.bind(packed, descending=False, payload=int(Payload.INDEX),
                               keys_needed=False)
        perm = idx if perm is None else jnp.take_along_axis(perm, idx, axis=-1)
    assert perm is not None
    return perm


def _sort_by_order_keys(
    okeys: list[jax.Array], moved: Sequence[jax.Array], positions, length
) -> tuple[list[jax.Array], jax.Array | None]:
    """The arrays `moved` (shaped like the keys) permuted by the stable lexicographic sort of
    okeys, and the sort's positions in dtype `positions` (None: not wanted)."""
    if _fits(length):
        shape = okeys[0].shape
        trivial = okeys[0].size == 0 or definitely(lambda: shape[-1] <= 1)  # (no kernel call)
        perm = lax.broadcasted_iota(np.int32, shape, len(shape) - 1) if trivial else (
            _kernel_perm(okeys))
        out = [take_along_bits(x, perm, -1) for x in moved]
        return out, (None if positions is None else as_index(perm, positions))
    ops = [*okeys, *(to_bits(x) for x in moved)]
    if positions is not None:  # (x64 off: jax makes int64 int32 here, as in jnp.argsort)
        ops.append(lax.broadcasted_iota(positions, okeys[0].shape, _last(okeys[0])))
    out = lax.sort(tuple(ops), dimension=_last(okeys[0]), is_stable=True, num_keys=len(okeys))
    rest = out[len(okeys) : len(okeys) + len(moved)]
    sorted_moved = [from_bits(o, x.dtype, x.weak_type) for o, x in zip(rest, moved, strict=True)]
    return sorted_moved, (None if positions is None else out[-1])


# ---------------------------------------------------------------- sorts


def sort_rows(
    keys: jax.Array,
    values: tuple[jax.Array, ...],
    *,
    descending: bool,
    payload: Payload,
    op: str,
    reverse_ties: bool = False,
    wrap_positions: bool = False,
    keys_needed: bool = True,
) -> tuple[jax.Array, jax.Array | None]:
    """A stable sort of rows: (sorted keys, None | positions | the one value moved).

    descending keeps ties in input order, or with reverse_ties (payload NONE: sort) returns the
    reverse of the ascending sort, as jnp.sort (for keys whose ties may differ in bits; ties of
    other keys are identical). Positions are index_dtype's; on an axis of 2**31 or more with x64
    off they raise a ValueError, unless wrap_positions (argsort: they wrap in int32 as
    jnp.argsort's do, with jax's warning). keys_needed=False: the caller drops the sorted keys
    (argsort), so the kernel may leave them unwritten (the first result is then unspecified)."""
    d = keys.shape[-1]
    positions = index_dtype(d) if payload == Payload.INDEX else None
    if positions is not None and not wrap_positions:
        check_x64_length(d, op)
    if keys.size == 0 or definitely(lambda: d <= 1):
        if payload == Payload.INDEX:
            return keys, jnp.zeros(keys.shape, positions)
        return keys, (values[0] if payload == Payload.VALUE else None)
    flip = reverse_ties and descending and ties_hold_other_bits(keys.dtype)
    assert not flip or payload == Payload.NONE
    direction = descending and not flip
    if _kernel_way(d, keys.dtype):
        vals = tuple(_value_in(v) for v in values) if payload == Payload.VALUE else ()
        outs = sort_p.bind(to_kernel(keys), *vals, descending=direction, payload=int(payload),
                           keys_needed=keys_needed)
        out_keys = _keys_out(outs[0], keys)
        extra = None
        if payload == Payload.INDEX:
            extra = as_index(outs[1], positions)
        elif payload == Payload.VALUE:
            extra = _value_out(outs[1], values[0].dtype, values[0].weak_type)
    else:
        moved = [keys, *(values[:1] if payload == Payload.VALUE else ())]
        out, extra = _sort_by_order_keys(order_keys(keys, direction), moved, positions, d)
        out_keys = out[0]
        if payload == Payload.VALUE:
            extra = out[1]
    if flip:
        out_keys = reverse_bits(out_keys, _last(out_keys))
    return out_keys, extra


def _sort_with_others(key: jax.Array, others: list[jax.Array], op: str) -> tuple[jax.Array, list]:
    """One stable ascending sort by `key` moving `others`: none, one that rides in the kernel
    (fusable_values), or several gathered with the permutation."""
    if not others:
        return sort_rows(key, (), descending=False, payload=Payload.NONE, op=op)[0], []
    if len(others) == 1 and fusable_values(others, key.shape):
        k, v = sort_rows(key, (others[0],), descending=False, payload=Payload.VALUE, op=op)
        return k, [v]
    k, perm = sort_rows(key, (), descending=False, payload=Payload.INDEX, op=op)
    return k, [take_along_bits(x, perm, -1) for x in others]


def lexsort_rows(keys: list[jax.Array], others: list[jax.Array], op: str) -> list[jax.Array]:
    """lax.sort's result: every operand sorted stably by `keys` lexicographically (first most
    significant), ascending. One key of a kernel dtype sorts by itself; integer and bool keys
    whose widths fit one unsigned key of 64 bits (32 without x64) sort packed and come back
    unpacked from it (never gathered); other keys sort by their order keys."""
    d = keys[0].shape[-1]
    if keys[0].size == 0 or definitely(lambda: d <= 1):
        return [*keys, *others]
    if _fits(d) and not any(is_complex(k.dtype) for k in keys):
        if len(keys) == 1:
            key, moved = _sort_with_others(keys[0], others, op)
            return [key, *moved]
        kernel_keys = [to_kernel(k) for k in keys]
        widths = sum(jax.dtypes.itemsize_bits(k.dtype) for k in kernel_keys)
        if all(is_invertible(k.dtype) for k in kernel_keys) and (
            widths <= _max_key_bits()
        ):
            key, moved = _sort_with_others(pack_order_keys(kernel_keys), others, op)
            unpacked = unpack_order_keys(key, [k.dtype for k in kernel_keys])
            return [*(_keys_out(u, k) for u, k in zip(unpacked, keys, strict=True)), *moved]
    okeys = [ok for k in keys for ok in order_keys(k)]
    out, _ = _sort_by_order_keys(okeys, [*keys, *others], None, d)
    return out


# ---------------------------------------------------------------- merges


def merge_rows(
    a: jax.Array,
    b: jax.Array,
    a_valid: jax.Array | None,
    b_valid: jax.Array | None,
    values: tuple[jax.Array, ...],
    *,
    descending: bool,
    payload: Payload,
    full_rows: bool,
    op: str,
) -> tuple[jax.Array, jax.Array | None]:
    """The stable merge of rows (ties: a first): (keys, None | positions in concatenate([a, b])
    | the values (va, vb) moved). a_valid / b_valid: each row's valid lengths (full_rows: every
    row whole, and they are not read: None will do); invalid tails follow the merged valid parts,
    a's then b's."""
    m, n = a.shape[-1], b.shape[-1]
    positions = index_dtype(m + n) if payload == Payload.INDEX else None
    if positions is not None:
        check_x64_length(m + n, op)
    if m == 0 or n == 0 or a.size + b.size == 0:
        keys = concatenate_bits((a, b), -1)
        if payload == Payload.INDEX:
            return keys, jnp.broadcast_to(jnp.arange(m + n, dtype=positions), keys.shape)
        if payload == Payload.VALUE:
            return keys, concatenate_bits(tuple(values), -1)
        return keys, None
    if _kernel_way(m + n, a.dtype):
        vals = tuple(_value_in(v) for v in values) if payload == Payload.VALUE else ()
        if full_rows:  # (the kernel reads no lengths then: empty ones cost no broadcast)
            a_valid = b_valid = jnp.zeros((*a.shape[:-1], 0), np.int32)
        outs = merge_p.bind(
            to_kernel(a), to_kernel(b), a_valid, b_valid, *vals, descending=descending,
            payload=int(payload), runs=False, full_rows=full_rows,
        )
        keys = with_weak_type(from_kernel(outs[0], a.dtype), a.weak_type and b.weak_type)
        if payload == Payload.INDEX:
            return keys, as_index(outs[1], positions)
        if payload == Payload.VALUE:
            weak = all(v.weak_type for v in values)
            return keys, _value_out(outs[1], values[0].dtype, weak)
        return keys, None
    c = concatenate_bits((a, b), -1)
    okeys = order_keys(c, descending)
    if not full_rows:  # first the valid elements (group 0), then a's tail (1), then b's (2)
        pdt = position_dtype(m + n)
        pos = lax.broadcasted_iota(pdt, c.shape, _last(c))
        in_a = pos < m
        valid = jnp.where(
            in_a, pos < a_valid.astype(pdt)[..., None], pos - m < b_valid.astype(pdt)[..., None]
        )
        group = jnp.where(valid, 0, jnp.where(in_a, 1, 2)).astype(np.uint8)
        okeys = [group, *(jnp.where(valid, k, jnp.zeros_like(k)) for k in okeys)]
    moved = [c, *([concatenate_bits(tuple(values), -1)] if payload == Payload.VALUE else [])]
    out, extra = _sort_by_order_keys(okeys, moved, positions, m + n)
    return out[0], (out[1] if payload == Payload.VALUE else extra)


def merge_by_key_rows(
    a: jax.Array,
    b: jax.Array,
    a_valid: jax.Array | None,
    b_valid: jax.Array | None,
    a_leaves: list[jax.Array],
    b_leaves: list[jax.Array],
    *,
    descending: bool,
    full_rows: bool,
    op: str,
    leaf_axis: int = -1,
) -> tuple[jax.Array, list[jax.Array]]:
    """merge_rows of the keys a and b (axis last) moving values: (keys, the merged leaves).
    Leaves have their keys' shape with the merged axis at leaf_axis (the caller's axis before it
    moved the keys' last; -1: the keys' own layout), then optional trailing dimensions; matching
    leaves of a and b share a dtype. One leaf shaped like its keys rides in the kernel
    (fusable_values); other leaves are gathered by the merge's positions, bit for bit."""
    if not a_leaves:
        keys, _ = merge_rows(a, b, a_valid, b_valid, (), descending=descending,
                             payload=Payload.NONE, full_rows=full_rows, op=op)
        return keys, []
    ax = leaf_axis % a.ndim
    if fusable_values(a_leaves, _axis_at(a.shape, ax)) and fusable_values(
        b_leaves, _axis_at(b.shape, ax)
    ):
        vals = (jnp.moveaxis(a_leaves[0], ax, -1), jnp.moveaxis(b_leaves[0], ax, -1))
        keys, moved = merge_rows(a, b, a_valid, b_valid, vals, descending=descending,
                                 payload=Payload.VALUE, full_rows=full_rows, op=op)
        return keys, [jnp.moveaxis(moved, -1, ax)]
    keys, idx = merge_rows(a, b, a_valid, b_valid, (), descending=descending,
                           payload=Payload.INDEX, full_rows=full_rows, op=op)
    idx = jnp.moveaxis(idx, -1, ax)
    return keys, [gather_along(concatenate_bits((va, vb), ax), idx, ax)
                  for va, vb in zip(a_leaves, b_leaves, strict=True)]


def _axis_at(shape: tuple[int, ...], ax: int) -> tuple[int, ...]:
    """The shape of an array of `shape` (axis last) with its last axis moved to ax."""
    return (*shape[:ax], shape[-1], *shape[ax:-1])


def merge_runs_rows(
    x: jax.Array, splits: jax.Array, *, descending: bool, return_indices: bool, op: str
) -> tuple[jax.Array, jax.Array | None]:
    """Each row's sorted runs x[:split] and x[split:] merged (ties: the first run first), and
    the positions in the row when return_indices."""
    d = x.shape[-1]
    positions = index_dtype(d) if return_indices else None
    if positions is not None:
        check_x64_length(d, op)
    if x.size == 0:
        return x, (jnp.broadcast_to(jnp.arange(d, dtype=positions), x.shape)
                   if return_indices else None)
    if _kernel_way(d, x.dtype):
        payload = Payload.INDEX if return_indices else Payload.NONE
        kx = to_kernel(x)
        outs = merge_p.bind(
            kx, kx, splits, splits, descending=descending, payload=int(payload), runs=True,
            full_rows=False,
        )
        keys = _keys_out(outs[0], x)
        return keys, (as_index(outs[1], positions) if return_indices else None)
    # The stable sort of a row whose two runs are sorted is their merge (run 1 comes first).
    out, idx = _sort_by_order_keys(order_keys(x, descending), [x], positions, d)
    return out[0], idx


RAGGED_RUNS = 8  # call_args.h kRaggedRuns: the runs one ragged merge kernel takes a row


def merge_ragged_rows(
    x: jax.Array,
    starts: jax.Array,
    lengths: jax.Array,
    leaves: list[jax.Array],
    *,
    out_length: int,
    descending: bool,
) -> tuple[jax.Array, list[jax.Array]]:
    """The stable merge of each row's G sorted runs x[..., starts[r]:][:lengths[r]] (starts,
    lengths: int32 (*B, G), clamped into the row as call_args.h's ragged_run; the runs
    disjoint; ties: the earlier run first, wherever it lies) into out_length outputs (a row's
    lengths sum to it), moving `leaves` (x's shape, then optional trailing dimensions): (keys,
    the leaves moved). One kernel (merge_ragged_p) for up to RAGGED_RUNS runs of a kernel key on
    a row of int32 positions, one leaf of 4 or 8 bytes riding in it (others gathered by its
    positions); else a stable sort by (outside every run, key, run)."""
    x, leaves = jnp.asarray(x), [jnp.asarray(leaf) for leaf in leaves]
    span, g = x.shape[-1], starts.shape[-1]
    if g <= RAGGED_RUNS and _kernel_way(span, x.dtype) and x.size > 0 and out_length > 0:
        kx, kw = to_kernel(x), dict(descending=descending, out_length=out_length)
        if not leaves:
            (k,) = merge_ragged_p.bind(kx, starts, lengths, **kw)
            return _keys_out(k, x), []
        if fusable_values(leaves, x.shape) and leaves[0].dtype.itemsize in (4, 8):
            k, v = merge_ragged_p.bind(kx, starts, lengths, leaves[0], **kw)
            return _keys_out(k, x), [with_weak_type(v, leaves[0].weak_type)]
        pos = lax.broadcasted_iota(np.int32, x.shape, _last(x))
        k, idx = merge_ragged_p.bind(kx, starts, lengths, pos, **kw)
        return _keys_out(k, x), [gather_along(leaf, idx, _last(x)) for leaf in leaves]
    pdt = position_dtype(span)
    pos = lax.broadcasted_iota(pdt, x.shape, _last(x))[..., None]
    first = jnp.clip(starts.astype(pdt), 0, span)  # (clamped as the kernel clamps them)
    end = first + jnp.clip(lengths.astype(pdt), 0, span - first)
    inside = (pos >= first[..., None, :]) & (pos < end[..., None, :])  # (*B, span, G)
    run = jnp.argmax(inside, axis=-1).astype(np.uint8 if g < 256 else np.uint32)
    valid = jnp.any(inside, axis=-1)
    okeys = [jnp.where(valid, 0, 1).astype(np.uint8),
             *(jnp.where(valid, k, jnp.zeros_like(k)) for k in order_keys(x, descending)),
             jnp.where(valid, run, jnp.zeros_like(run))]
    (keys,), perm = _sort_by_order_keys(okeys, [x], pdt, span)
    perm = perm[..., :out_length]
    moved = [keys[..., :out_length], *(gather_along(leaf, perm, _last(x)) for leaf in leaves)]
    short = max(0, out_length - span)  # (outputs past the runs' sum are unspecified: zeros)
    moved = [_pad_axis(m, _last(x), short) if short else m for m in moved]
    return moved[0], moved[1:]


def _pad_axis(a: jax.Array, ax: int, more: int) -> jax.Array:
    """a with `more` zeros after its axis ax."""
    return jnp.pad(a, [(0, more if i == ax else 0) for i in range(a.ndim)])


# ---------------------------------------------------------------- searches


def _lex_less(xs: list[jax.Array], ys: list[jax.Array], or_equal: bool) -> jax.Array:
    """xs < ys (xs <= ys when or_equal) lexicographically, element by element."""
    result = None
    for x, y in reversed(list(zip(xs, ys, strict=True))):
        if result is None:
            result = (x <= y) if or_equal else (x < y)
        else:
            result = (x < y) | ((x == y) & result)
    assert result is not None
    return result


def _take(keys: list[jax.Array], idx: jax.Array) -> list[jax.Array]:
    return [jnp.take_along_axis(k, idx, axis=-1) for k in keys]


def _binary_search(lo: jax.Array, hi: jax.Array, goes_right) -> jax.Array:
    """The first i in [lo, hi) with goes_right(i) false (hi if none), goes_right monotone."""

    def body(state):
        lo, hi = state
        active = lo < hi
        mid = lo + (hi - lo) // 2
        right = goes_right(mid)
        return jnp.where(active & right, mid + 1, lo), jnp.where(active & ~right, mid, hi)

    lo, _ = lax.while_loop(lambda s: jnp.any(s[0] < s[1]), body, (lo, hi))
    return lo


def searchsorted_rows(
    a: jax.Array, v: jax.Array, *, right: bool, sorted_v: bool, op: str
) -> jax.Array:
    """For each query of v (*B, q), how many elements of its row of a (*B, n) precede it
    (right: do not follow it), in search_index_dtype(n). sorted_v: the queries of each row are
    sorted; the search may then be one merge-path pass. An axis of 2**31 or more with x64 off
    raises the OverflowError jnp.searchsorted raises."""
    n, q = a.shape[-1], v.shape[-1]
    dtype = search_index_dtype(n)
    check_x64_length(n, op, "a's sorted axis", overflow=True)  # (as jnp.searchsorted)
    if v.size == 0 or n == 0:
        return jnp.zeros(v.shape, dtype)
    if _kernel_way(n, a.dtype):
        merge_path = sorted_v and _fits(n + q)
        out = searchsorted_p.bind(to_kernel(a), to_kernel(v), right=right, sorted_v=merge_path)
        return as_index(out, dtype)
    a_keys, v_keys = order_keys(a), order_keys(v)
    lo = jnp.zeros(v.shape, dtype)
    hi = jnp.full(v.shape, n, dtype)
    # a[i] precedes the query (left) / does not follow it (right): the answer is past i
    return _binary_search(
        lo, hi, lambda i: _lex_less(_take(a_keys, jnp.minimum(i, n - 1)), v_keys, right)
    )


def co_rank_rows(
    k: jax.Array, a: jax.Array, b: jax.Array, *, descending: bool, op: str
) -> jax.Array:
    """For each output position k (*B, q), clamped to [0, m + n], how many elements of a are
    among the first k of the stable merge of its rows of a (*B, m) and b (*B, n), in
    index_dtype(m + n)."""
    m, n = a.shape[-1], b.shape[-1]
    dtype = index_dtype(m + n)
    check_x64_length(m + n, op)
    if k.size == 0 or m == 0 or n == 0:
        return as_index(k if n == 0 else jnp.zeros_like(k), dtype)  # one side empty: trivial
    if _kernel_way(m + n, a.dtype):
        out = co_rank_p.bind(k.astype(np.int32), to_kernel(a), to_kernel(b),
                             descending=descending)
        return as_index(out, dtype)
    a_keys, b_keys = order_keys(a, descending), order_keys(b, descending)
    k = k.astype(dtype)

    def a_goes_first(i):  # a[i] precedes b[k - i - 1] (ties: a first): a[i] is among the first k
        ai = _take(a_keys, jnp.clip(i, 0, m - 1))
        bj = _take(b_keys, jnp.clip(k - i - 1, 0, n - 1))
        return _lex_less(ai, bj, or_equal=True)

    return _binary_search(jnp.maximum(k - n, 0), jnp.minimum(k, m), a_goes_first)


def is_sorted_rows(x: jax.Array, *, descending: bool) -> jax.Array:
    """Whether each row is in order: bool of the batch shape (rows of 0 or 1 elements are)."""
    d = x.shape[-1]
    if x.size == 0 or definitely(lambda: d <= 1):
        return jnp.ones(x.shape[:-1], jnp.bool_)
    if _kernel_way(d, x.dtype):
        return is_sorted_p.bind(to_kernel(x), descending=descending)
    keys = order_keys(x, descending)
    ordered = _lex_less([k[..., :-1] for k in keys], [k[..., 1:] for k in keys], or_equal=True)
    return jnp.all(ordered, axis=-1)
