"""top_k along an axis split over devices: each device's top k of its shard, one all-gather of
the g x k candidates (values, global indices, the payload's leaves), then the top k of the
candidates. The data never moves; every device gets the global result.

Contract: the candidates of device d come after those of device d - 1 and, within a device, in
(key, index) order, so the candidates' order by (key, position) is the global (key, global
index) order: the top k of the candidates is the global top k, bit for bit the single-device
result. Global indices are int32, int64 for an axis of more than 2**31 keys (jax_enable_x64).

Entered as the sorts are (_sharded/entry.py): `axis_name` inside a user's shard_map, or an
array whose sharding splits the axis over explicit mesh axes (read from its type or, concrete,
its NamedSharding: a cached jit of a shard_map). An axis split over auto mesh axes under jax.jit
is not seen here (its sharding is not in the type): XLA gathers it first, correct but not
distributed (the sorts' auto-axis entry, _sharded/auto.py, keeps outputs split like the inputs;
top_k's are replicated).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jax_mergepath._bits import from_bits, gather_along, to_bits
from jax_mergepath._dtypes import INT32_LIMIT
from jax_mergepath._select_dispatch import top_k_rows
from jax_mergepath._sharded.layout import (
    AxisName,
    check_axis_name,
    check_divisible,
    full_spec,
    names_of,
    placed,
    split_sharding,
    varying,
)


def topk_split_axis(
    x: jax.Array,
    leaves: list[jax.Array],
    k,
    ax: int,
    axis_name: AxisName | None,
    *,
    largest: bool,
    op: str,
    check_k: Callable[[int], int],
) -> tuple[jax.Array, jax.Array, list[jax.Array]] | None:
    """(values, global indices, leaves gathered) of x's top k along `ax` when that axis is
    split over devices (named by axis_name inside shard_map, or read from x's sharding); None
    otherwise. check_k(global length) checks k and returns it."""
    if axis_name is not None:
        g = check_axis_name(axis_name, op)
        k = check_k(g * x.shape[ax])
        return _topk_shards(x, leaves, k, ax, axis_name, largest)
    found = split_sharding(x, ax)
    if found is None:
        return None
    mesh, spec = found
    entry = spec[ax]
    check_divisible(x.shape[ax], mesh, entry, "the selected axis", op)
    k = check_k(x.shape[ax])
    key_spec = full_spec(spec, x.ndim)
    specs = [key_spec] + [full_spec(key_spec, leaf.ndim) for leaf in leaves]
    arrays = [placed(a, mesh, s) for a, s in zip([x, *leaves], specs, strict=True)]
    out_specs = [_unsplit(s, ax) for s in specs]
    out_specs.insert(1, out_specs[0])  # (the indices)
    mapped = _mapped_topk(mesh, tuple(specs), tuple(out_specs), len(leaves), k, ax, entry,
                          largest)
    out = mapped(*arrays)
    return out[0], out[1], list(out[2:])


def _unsplit(spec, ax: int):
    """spec with axis ax replicated (every device holds the whole selection)."""
    entries = list(spec)
    entries[ax] = None
    return jax.sharding.PartitionSpec(*entries)


@functools.lru_cache(maxsize=256)
def _mapped_topk(mesh, specs, out_specs, n_leaves, k, ax, entry, largest):
    """The jitted shard_map of a sharded top_k: one compile per layout and call."""
    del n_leaves  # (part of the cache key with the specs)

    def local(x, *leaves):
        values, idx, moved = _topk_shards(x, list(leaves), k, ax, entry, largest)
        return (values, idx, *moved)

    return jax.jit(jax.shard_map(local, mesh=mesh, in_specs=specs, out_specs=tuple(out_specs)))


def global_index_dtype(length: int) -> np.dtype:
    """lax.top_k's int32, int64 where a global index can pass it (more than 2**31 keys)."""
    return np.dtype(np.int64 if length > INT32_LIMIT else np.int32)


def _gather_everywhere(x: jax.Array, axis_name: AxisName, ax: int) -> jax.Array:
    """The devices' x along ax, typed invariant over axis_name (every device holds the same,
    so the result may leave shard_map replicated)."""
    try:
        return lax.all_gather(x, axis_name, axis=ax, tiled=True, to="invarying")
    except TypeError:  # pragma: no cover - a jax without `to`: varying (check_vma may object)
        return lax.all_gather(x, axis_name, axis=ax, tiled=True)


def _gather_bits(x: jax.Array, axis_name: AxisName, ax: int) -> jax.Array:
    """_gather_everywhere of x's bits (every NaN payload and -0.0 kept)."""
    bits = _gather_everywhere(varying(to_bits(x), names_of(axis_name)), axis_name, ax)
    return from_bits(bits, x.dtype, x.weak_type)


def _select(x, leaves, k, ax, axis_name, largest):
    """(values, global indices, leaves gathered at them, this device's first global index)."""
    n = x.shape[ax]
    g = lax.psum(1, axis_name)
    dtype = global_index_dtype(g * n)
    kl = min(k, n)
    values, idx = top_k_rows(jnp.moveaxis(x, ax, -1), kl, largest=largest)
    local_idx = jnp.moveaxis(idx, -1, ax)
    first = lax.axis_index(axis_name).astype(dtype) * n
    candidates = [
        jnp.moveaxis(values, -1, ax),
        local_idx.astype(dtype) + first,
        *(gather_along(leaf, local_idx, ax) for leaf in leaves),
    ]
    gathered = [_gather_bits(c, axis_name, ax) for c in candidates]
    top, pos = top_k_rows(jnp.moveaxis(gathered[0], ax, -1), k, largest=largest)
    pos = jnp.moveaxis(pos, -1, ax)
    picked = [jnp.take_along_axis(gathered[1], pos, axis=ax)]
    picked += [gather_along(c, pos, ax) for c in gathered[2:]]
    return jnp.moveaxis(top, -1, ax), picked[0], picked[1:], first


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


def _topk_shards(x, leaves, k, ax, axis_name, largest):
    """Inside shard_map: the global top k of the shards x (along ax) and the leaves gathered,
    with reverse-mode derivatives: a selected element's cotangent goes to the device that holds
    it, at its place (a scatter of the local ones, no collective)."""
    arrays = [x, *leaves]
    if not any(jnp.issubdtype(a.dtype, jnp.inexact) for a in arrays):
        return _select(x, leaves, k, ax, axis_name, largest)[:3]
    n = x.shape[ax]

    def local_cotangent(a, where, ct):
        """ct (shaped like the selection) added at the selected places `where` of a zero a."""
        if not jnp.issubdtype(a.dtype, jnp.inexact):
            return np.zeros(a.shape, jax.dtypes.float0)
        return varying(_scatter_add_along(a, where, ct.astype(a.dtype), ax), names_of(axis_name))

    @jax.custom_vjp
    def select(x, leaves):
        return _select(x, leaves, k, ax, axis_name, largest)[:3]

    def fwd(x, leaves):
        values, idx, moved, _ = _select(x, leaves, k, ax, axis_name, largest)
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
