"""Each Op's per-device program over a split axis (ops.py), and its derivatives.

Contract: `run_local(op, axes, arrays, queries_split)` takes this device's shards (the split axis
LAST, as ops.layout lays them out: every array split along its element axis over axes.name) and
returns its shards of the op's outputs, the single-device results split the same way (queries:
see queries.py). `move_local` / `back_local` are a permutation's tangent and its transpose
(kinds "move" / "back"); `with_derivatives` is run_local with jax.jvp / jax.grad support
(derivatives.py), for code that JAX differentiates (a user's shard_map, the explicit-axis entry).
"""

from __future__ import annotations

import jax
from jax import lax

from jax_mergepath._dtypes import index_dtype
from jax_mergepath._sharded.derivatives import home, permutation
from jax_mergepath._sharded.layout import Axes
from jax_mergepath._sharded.merge import merge_local, merge_runs_local
from jax_mergepath._sharded.ops import MERGES, Op, feeds
from jax_mergepath._sharded.queries import co_rank_local, is_sorted_local, searchsorted_local
from jax_mergepath._sharded.select import select_local
from jax_mergepath._sharded.sort import sort_local


def run_local(op: Op, axes: Axes, arrays: list[jax.Array],
              queries_split: bool = False) -> list[jax.Array]:
    """op's outputs on this device (module docstring)."""
    kind, kw = op.kind, dict(descending=op.descending, op=op.name)
    if kind == "argsort":
        x = arrays[0]
        return sort_local([x], [], axes, reverse_ties=False, positions=True, **kw)[-1:]
    if kind in ("sort", "sort_by_key", "lax_sort"):
        return sort_local(arrays[: op.nk], arrays[op.nk:], axes, reverse_ties=op.reverse_ties,
                          positions=op.positions, **kw)
    if kind in ("merge", "merge_by_key"):
        a, b, *values = arrays
        nv = len(values) // 2
        return merge_local(a, b, values[:nv], values[nv:], axes, positions=op.positions, **kw)
    if kind == "merge_runs":
        x, split = arrays
        return merge_runs_local(x, split, [], axes, positions=op.positions, **kw)
    if kind == "co_rank":
        return [co_rank_local(*arrays, axes, queries_split=queries_split, **kw)]
    if kind == "is_sorted":
        return [is_sorted_local(arrays[0], axes, descending=op.descending)]
    if kind == "searchsorted":
        a, v = arrays
        return [searchsorted_local(a, v, axes, right=op.right, queries_split=queries_split,
                                   op=op.name)]
    if kind == "top_k":
        x, *leaves = arrays
        values, idx, moved = select_local(x, leaves, op.k, x.ndim - 1, axes.name, op.largest)
        return [values, idx, *moved]
    if kind == "move":
        n = op.arity
        return move_local(op.base, axes, arrays[:n], op.filled(arrays[:n], arrays[n + 1:]))
    if kind == "back":
        n = op.arity
        return op.kept(back_local(op.base, axes, arrays[:n], arrays[n], arrays[n + 1:]))
    raise ValueError(kind)


def move_local(base: Op, axes: Axes, arrays: list[jax.Array],
               tans: list[jax.Array]) -> list[jax.Array]:
    """The tangents of base's outputs that take tangents (tans: their inputs', in feeds order):
    the same sharded call moving the tangents as values."""
    kw = dict(descending=base.descending, positions=False, op=base.name)
    if base.kind in MERGES and base.kind != "merge_runs":
        a, b = arrays[:2]
        return merge_local(a, b, tans[0::2], tans[1::2], axes, **kw)[1:]
    if base.kind == "merge_runs":
        return merge_runs_local(arrays[0], arrays[1], tans, axes, **kw)[1:]
    nk = base.nk
    return sort_local(arrays[:nk], tans, axes, reverse_ties=base.reverse_ties, **kw)[nk:]


def back_local(base: Op, axes: Axes, arrays: list[jax.Array], source: jax.Array,
               cts: list[jax.Array]) -> list[jax.Array]:
    """The transpose of move_local: each cotangent sent home, a sort by its element's home
    position (for a merge, device d's home holds its a shard, then its b shard)."""
    if base.kind not in ("merge", "merge_by_key"):
        return home(source, cts, axes, base.name)
    a, b = arrays[:2]
    ma, nb = a.shape[-1], b.shape[-1]
    g = axes.size()
    dtype = index_dtype(g * (ma + nb))
    p = source.astype(dtype)
    in_b = p >= g * ma
    q = p - g * ma
    device = jax.numpy.where(in_b, q // nb, p // ma)
    slot = jax.numpy.where(in_b, ma + q % nb, p % ma)
    back = home(device * (ma + nb) + slot, cts, axes, base.name)
    ax = a.ndim - 1
    out = []
    for ct in back:
        out += [lax.slice_in_dim(ct, 0, ma, axis=ax), lax.slice_in_dim(ct, ma, ma + nb, axis=ax)]
    return out


def with_derivatives(op: Op, axes: Axes, arrays: list[jax.Array],
                     queries_split: bool = False) -> list[jax.Array]:
    """run_local with forward and reverse-mode derivatives for the permutations."""
    fed = feeds(op, len(arrays))
    if not fed:
        return run_local(op, axes, arrays, queries_split)
    n = len(arrays)

    def run(arrays, positions):
        return run_local(op.replace(positions=positions), axes, arrays)

    def move(arrays, source, ts, diff, present):
        return run_local(Op("move", op.name, base=op, arity=n, diff=diff, present=present), axes,
                         [*arrays, source, *ts])

    def back(arrays, source, cts, diff, present):
        return run_local(Op("back", op.name, base=op, arity=n, diff=diff, present=present), axes,
                         [*arrays, source, *cts])

    return permutation(run, move, back, arrays, fed, op.positions)
