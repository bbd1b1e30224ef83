"""Queries along a sharded axis, per device: searchsorted, co_rank, is_sorted.

Contract: the searched or checked array's shards have the split axis LAST (leading dimensions
rows); queries (searchsorted's v, co_rank's k) have the rows' leading shape and are either the
same on every device of the split axis (replicated) or split along it (`queries_split`: each
device its own queries). Results: searchsorted, a query's position in the whole sorted a (the sum
of its counts in the shards; never a move of a); co_rank, the merge-path partition of the whole
a and b (merge.co_rank_search: probes fetched by a psum, never a move of a or b); is_sorted,
every shard sorted and each shard's last element in order with the next shard's first (a
ppermute of one element a row), the same answer on every device of the axis.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jax_mergepath._dispatch import is_sorted_rows, searchsorted_rows
from jax_mergepath._dtypes import index_dtype, search_index_dtype
from jax_mergepath._keys import order_keys
from jax_mergepath._sharded.layout import Axes, invariant, on_rows
from jax_mergepath._sharded.merge import MERGE_PROBES, Run, co_rank_search
from jax_mergepath._sharded.splitters import lex_le

QUERY_PROBES_BUDGET = 4096  # co_rank: probes a row and round, over all its queries


def _gathered(v: jax.Array, axes: Axes) -> jax.Array:
    """Every device's queries along the split axis, in device order (*rows, g q)."""
    every = lax.all_gather(v, axes.name)  # (g, *rows, q)
    return jnp.moveaxis(every, 0, -2).reshape(*v.shape[:-1], -1)


def _mine(x: jax.Array, q: int, axes: Axes) -> jax.Array:
    """This device's q results of the gathered queries' (*rows, g q)."""
    return lax.dynamic_slice_in_dim(x, axes.index() * q, q, axis=x.ndim - 1)


def _own_queries(queries: jax.Array, axes: Axes, queries_split: bool) -> bool:
    """Whether the queries are each device's own (split along the axis): as the call says,
    unless typed the same on every device along it (then one answer, typed invariant)."""
    return queries_split and not invariant(queries, axes.names)


def searchsorted_local(a: jax.Array, v: jax.Array, axes: Axes, *, right: bool,
                       queries_split: bool, op: str) -> jax.Array:
    """For each query of v, how many elements of its row of the whole a precede it (right: do
    not follow it), in search_index_dtype of the whole row: the sum over the shards."""
    g = axes.size()
    dtype = search_index_dtype(g * a.shape[-1])
    if not _own_queries(v, axes, queries_split):
        counts = searchsorted_rows(a, v, right=right, sorted_v=False, op=op)
        return lax.psum(counts.astype(dtype), axes.name)
    q = v.shape[-1]
    counts = searchsorted_rows(a, _gathered(v, axes), right=right, sorted_v=False, op=op)
    counts = counts.astype(dtype).reshape(*v.shape[:-1], g, q)
    return lax.psum_scatter(jnp.moveaxis(counts, -2, 0), axes.name, scatter_dimension=0)


def co_rank_local(k: jax.Array, a: jax.Array, b: jax.Array, axes: Axes, *, descending: bool,
                  queries_split: bool, op: str) -> jax.Array:
    """For each output position k of the merge of the whole a and b (clamped to [0, m + n]),
    how many elements of a are among the first k, in index_dtype(m + n)."""
    del op
    queries_split = _own_queries(k, axes, queries_split)
    g = axes.size()
    m, n = a.shape[-1], b.shape[-1]
    dtype = index_dtype(g * (m + n))
    q = k.shape[-1]
    queries = _gathered(k, axes) if queries_split else k
    probes = max(2, min(MERGE_PROBES, QUERY_PROBES_BUDGET // max(queries.shape[-1], 1)))

    def rows(shards):
        kr, ar, br = shards
        run_a = Run(order_keys(ar, descending), m, 0, g * m)
        run_b = Run(order_keys(br, descending), n, 0, g * n)
        out = co_rank_search(kr.astype(dtype), run_a, run_b, axes, bound=g * (m + n),
                             probes=probes)
        return [out]

    (out,) = on_rows(rows, [queries, a, b], a.ndim - 1)
    return _mine(out, q, axes) if queries_split else out


def is_sorted_local(x: jax.Array, axes: Axes, *, descending: bool) -> jax.Array:
    """Whether each row of the whole x is sorted (bool of the rows' shape, on every device)."""
    g = axes.size()
    d = x.shape[-1]
    ok = is_sorted_rows(x, descending=descending) if d > 1 else jnp.ones(x.shape[:-1], bool)
    if g > 1:
        keys = order_keys(x, descending)
        nxt = axes.permute([k[..., 0] for k in keys],
                           [(i, i - 1) for i in range(1, g)])  # the next shard's first
        last = axes.index() == g - 1
        ok = ok & (last | lex_le([k[..., -1] for k in keys], nxt))
    return lax.pmin(ok.astype(np.int32), axes.name).astype(bool)
