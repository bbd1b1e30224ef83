"""top_k along an axis split over devices, per device: each device's top k of its shard, one
all-gather of the g x k candidates (values, global indices, the payload's leaves, as bits), then
the top k of the candidates. The data never moves; every device gets the global result.

Contract: `select_local` / `topk_shards` run where axis_name is bound (a shard_map, or a
custom_partitioning call's per-device program), on this device's shards x (the selected axis
`ax`) and leaves (x's shape, then trailing dimensions). The candidates of device d come after
those of device d - 1 and, within a device, in (key, index) order, so the candidates' order by
(key, position) is the global (key, global index) order: the top k of the candidates is the
global top k, bit for bit the single-device result, typed invariant over axis_name. Global
indices are int32, int64 for an axis of more than 2**31 keys (jax_enable_x64). topk_shards adds
reverse-mode derivatives (a custom_vjp).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jax_mergepath._bits import from_bits, gather_along, moveaxis_bits, to_bits
from jax_mergepath._dtypes import INT32_LIMIT
from jax_mergepath._select_dispatch import top_k_rows
from jax_mergepath._sharded.layout import (
    AxisName,
    float0_zeros,
    names_of,
    typed,
    varying,
    varying_as,
)


def global_index_dtype(length: int) -> np.dtype:
    """lax.top_k's int32, int64 where a global index can pass it (more than 2**31 keys)."""
    return np.dtype(np.int64 if length > INT32_LIMIT else np.int32)


def _gather_everywhere(x: jax.Array, axis_name: AxisName, ax: int) -> jax.Array:
    """The devices' x along ax, typed invariant over axis_name (every device holds the same,
    so the result may leave shard_map replicated)."""
    if typed(names_of(axis_name)):
        try:
            return lax.all_gather(x, axis_name, axis=ax, tiled=True, to="invarying")
        except TypeError:  # pragma: no cover - a jax without `to` (check_vma may object)
            pass
    return lax.all_gather(x, axis_name, axis=ax, tiled=True)


def _gather_bits(x: jax.Array, axis_name: AxisName, ax: int) -> jax.Array:
    """_gather_everywhere of x's bits (every NaN payload and -0.0 kept)."""
    bits = _gather_everywhere(varying(to_bits(x), names_of(axis_name)), axis_name, ax)
    return from_bits(bits, x.dtype, x.weak_type)


def select_local(x, leaves, k, ax, axis_name, largest):
    """(values, global indices, leaves gathered at them)."""
    n = x.shape[ax]
    g = lax.psum(1, axis_name)
    dtype = global_index_dtype(g * n)
    if k == 0:  # nothing selected, nothing gathered (XLA refuses an all-gather of no elements)
        def empty(a: jax.Array, dt=None) -> jax.Array:
            """a's no elements along ax, invariant: a psum of a's empty slice (not a constant,
            which would leave the shard_map's operands unused and its jit with no devices)."""
            bits = lax.slice_in_dim(to_bits(a), 0, 0, axis=ax)
            bits = lax.psum(varying(bits, names_of(axis_name)), axis_name)
            return bits.astype(dt) if dt is not None else from_bits(bits, a.dtype, a.weak_type)

        return empty(x), empty(x, dtype), [empty(leaf) for leaf in leaves]
    kl = min(k, n)
    values, idx = top_k_rows(moveaxis_bits(x, ax, -1), kl, largest=largest)
    local_idx = jnp.moveaxis(idx, -1, ax)
    first = lax.axis_index(axis_name).astype(dtype) * n
    # (the values keep the selected axis last, where the candidates' top k reads them)
    values = _gather_bits(values, axis_name, values.ndim - 1)
    others = [local_idx.astype(dtype) + first,
              *(gather_along(leaf, local_idx, ax) for leaf in leaves)]
    gathered = [_gather_bits(c, axis_name, ax) for c in others]
    top, pos = top_k_rows(values, k, largest=largest)
    pos = jnp.moveaxis(pos, -1, ax)
    picked = [jnp.take_along_axis(gathered[0], pos, axis=ax)]
    picked += [gather_along(c, pos, ax) for c in gathered[1:]]
    return moveaxis_bits(top, -1, ax), picked[0], picked[1:]


def _scatter_add_along(a: jax.Array, where: jax.Array, ct: jax.Array, ax: int) -> jax.Array:
    """Zeros like a with ct added at places `where` along ax (where: a's shape up to its
    trailing dimensions, k along ax; ct: where's shape then a's trailing dimensions): the
    transpose of gather_along. (Written out: the pullback of jax.vjp of the gather, inside the
    custom_vjp's backward pass in shard_map, gave every device device 0's result, jax 0.10.2.)"""
    extra = ct.ndim - where.ndim
    index = []
    for d in range(ct.ndim):
        if d == ax:
            index.append(where.reshape(where.shape + (1,) * extra))
        else:
            index.append(lax.broadcasted_iota(np.int32, ct.shape, d))
    index = [jnp.broadcast_to(i, ct.shape) for i in index]
    return jnp.zeros(a.shape, a.dtype).at[tuple(index)].add(ct)


def topk_shards(x, leaves, k, ax, axis_name, largest):
    """Inside shard_map: the global top k of the shards x (along ax) and the leaves gathered,
    with reverse-mode derivatives: a selected element's cotangent goes to the device that holds
    it, at its place (a scatter of the local ones, no collective)."""
    arrays = [x, *leaves]
    if not any(jnp.issubdtype(a.dtype, jnp.inexact) for a in arrays):
        return select_local(x, leaves, k, ax, axis_name, largest)
    n = x.shape[ax]

    def local_cotangent(a, where, ct):
        """ct (shaped like the selection) added at the selected places `where` of a zero a."""
        if not jnp.issubdtype(a.dtype, jnp.inexact):
            return float0_zeros(a)
        # (typed varying as a: over axis_name, and over the axes its rows are split on)
        return varying_as(_scatter_add_along(a, where, ct.astype(a.dtype), ax), a)

    @jax.custom_vjp
    def select(x, leaves):
        return select_local(x, leaves, k, ax, axis_name, largest)

    def fwd(x, leaves):
        values, idx, moved = select_local(x, leaves, k, ax, axis_name, largest)
        return (values, idx, moved), idx

    def bwd(idx, cts):
        ct_values, _, ct_moved = cts
        # (this device's first global index from axis_index here: a residual of it was not)
        local = idx - lax.axis_index(axis_name).astype(idx.dtype) * n
        mine = (local >= 0) & (local < n)
        where = jnp.where(mine, local, 0).astype(np.int32)

        def masked(ct):
            m = mine.reshape(mine.shape + (1,) * (ct.ndim - mine.ndim))
            return jnp.where(m, ct, jnp.zeros_like(ct))

        ct_x = local_cotangent(x, where, masked(ct_values))
        ct_leaves = [local_cotangent(a, where, masked(ct))
                     for a, ct in zip(leaves, ct_moved, strict=True)]
        return ct_x, ct_leaves

    select.defvjp(fwd, bwd)
    return select(x, list(leaves))
