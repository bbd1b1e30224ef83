"""top_k along an axis split over devices: each device's top k of its shard, one all-gather of
the g x k candidates (values, global indices, the payload's leaves), then the top k of the
candidates. The data never moves; every device gets the global result.

Contract: the candidates of device d come after those of device d - 1 and, within a device, in
(key, index) order, so the candidates' order by (key, position) is the global (key, global
index) order: the top k of the candidates is the global top k, bit for bit the single-device
result. Global indices are int32, int64 for an axis of more than 2**31 keys (jax_enable_x64).

Entered as the sorts are (_sharded.py): `axis_name` inside a user's shard_map, or an array whose
sharding splits the axis over explicit mesh axes (read from its type or, concrete, its
NamedSharding: a cached jit of a shard_map). An axis split over auto mesh axes under jax.jit is
not seen here (its sharding is not in the type): XLA gathers it first, correct but not
distributed. The hook for it is `topk_split_axis`, where the sorts' auto-axis entry (custom
partitioning) would go.
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
from jax_mergepath._sharded import (
    AxisName,
    _check_axis_name,
    _check_divisible,
    _pad_spec,
    _placed,
    _split_sharding,
    _varying,
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
        g = _check_axis_name(axis_name, op)
        k = check_k(g * x.shape[ax])
        return _topk_shards(x, leaves, k, ax, axis_name, largest)
    found = _split_sharding(x, ax)
    if found is None:
        return None
    mesh, spec = found
    entry = spec[ax]
    _check_divisible(x.shape[ax], mesh, entry, "the selected axis", op)
    k = check_k(x.shape[ax])
    key_spec = _pad_spec(spec, x.ndim)
    specs = [key_spec] + [_pad_spec(key_spec, leaf.ndim) for leaf in leaves]
    arrays = [_placed(a, mesh, s) for a, s in zip([x, *leaves], specs, strict=True)]
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

    return jax.jit(jax.shard_map(local, mesh=mesh, in_specs=specs, out_specs=list(out_specs)))


def global_index_dtype(length: int) -> np.dtype:
    """lax.top_k's int32, int64 where a global index can pass it (more than 2**31 keys)."""
    return np.dtype(np.int64 if length > INT32_LIMIT else np.int32)


def _topk_shards(x, leaves, k, ax, axis_name, largest):
    """Inside shard_map: the global top k of the shards x (along ax) and the leaves gathered."""
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
    gathered = [  # (as bits: every payload and -0.0 kept)
        from_bits(lax.all_gather(_varying(to_bits(c), axis_name), axis_name, axis=ax, tiled=True),
                  c.dtype, c.weak_type)
        for c in candidates
    ]
    top, pos = top_k_rows(jnp.moveaxis(gathered[0], ax, -1), k, largest=largest)
    pos = jnp.moveaxis(pos, -1, ax)
    picked = [jnp.take_along_axis(gathered[1], pos, axis=ax)]
    picked += [gather_along(c, pos, ax) for c in gathered[2:]]
    return jnp.moveaxis(top, -1, ax), picked[0], picked[1:]
