"""top_k along an axis split over devices: each device's top k of its shard, one all-gather of
the g x k candidates (values, global indices, the payload's leaves), then the top k of the
candidates. The data never moves; every device gets the global result.

Contract: the candidates of device d come after those of device d - 1 and, within a device, in
(key, index) order, so the candidates' order by (key, position) is the global (key, global
index) order: the top k of the candidates is the global top k, bit for bit the single-device
result. Global indices are int32, int64 for an axis of more than 2**31 keys (jax_enable_x64).

Entered as the sorts are (_sharded/entry.py): `axis_name` inside a user's shard_map, or an
array whose sharding splits the axis over explicit mesh axes (read from its type or, concrete,
its NamedSharding: a cached jit of a shard_map); under jax.jit on auto mesh axes (its sharding
not in the type) a custom_partitioning call that XLA's partitioner runs per device where the
axis turns out split (_sharded/auto.py; outputs replicated along the axis).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp

from jax_mergepath._bits import moveaxis_bits
from jax_mergepath._dtypes import is_long
from jax_mergepath._sharded import auto
from jax_mergepath._sharded.layout import (
    AxisName,
    check_axis_name,
    check_divisible,
    full_spec,
    placed,
    split_sharding,
)
from jax_mergepath._sharded.ops import Op
from jax_mergepath._sharded.select import topk_shards


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
        return topk_shards(x, leaves, k, ax, axis_name, largest)
    found = split_sharding(x, ax)
    if found is None:
        if not auto.applies([x, *leaves]) or not all(
                isinstance(d, int) for d in x.shape) or is_long(x.shape[ax]):
            return None
        k = check_k(x.shape[ax])
        return _auto_topk(x, leaves, k, ax, largest, op) if k else None
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


def _auto_topk(x, leaves, k, ax, largest, op):
    """Under jax.jit on auto mesh axes (or none): a call that XLA's partitioner runs per device
    where the selected axis is split (candidates gathered, the result replicated along it), as
    the single-device program elsewhere (_sharded/auto.py)."""
    last = x.ndim - 1
    arrays = [moveaxis_bits(a, ax, last) for a in [x, *leaves]]
    values, idx, *moved = auto.call(Op("top_k", op, k=k, largest=largest), arrays)
    return (moveaxis_bits(values, last, ax), jnp.moveaxis(idx, last, ax),
            [moveaxis_bits(m, last, ax) for m in moved])


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
        values, idx, moved = topk_shards(x, list(leaves), k, ax, entry, largest)
        return (values, idx, *moved)

    return jax.jit(jax.shard_map(local, mesh=mesh, in_specs=specs, out_specs=tuple(out_specs)))
