"""The sharded sort, per device: each device sorts its shard, exact splitters (splitters.py), one
exchange (exchange.py), then the received runs merged: one key of a real dtype on up to
RAGGED_RUNS devices by one merge of the g runs (two: merge_runs; more: the ragged merge, on the
chunks where they landed when every piece fits one); several keys, complex keys and more devices
by a stable sort of the runs.

Contract: `sort_local(keys, others, axes, ...)` takes this device's shards with the sorted axis
LAST (keys: one shape (*rows, n), lexicographic; others: (*rows, n, ...), moved with their
elements) and returns [*keys, *others] (then the global positions when `positions`) of its share
of the global stable sort: the global ranks [i n, (i + 1) n) of every row on device i. The order
is the single-device sort's, stable: equal keys keep their global input order, or the reverse
with reverse_ties (jnp.sort's descending). Data moves as bits, so every bit of keys and values
survives. It calls the row-level functions (_rows.py) alone: no precondition check reaches it.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jax_mergepath._bits import from_bits, reverse_bits, to_bits
from jax_mergepath._dispatch import (
    RAGGED_RUNS,
    fusable_values,
    lexsort_rows,
    merge_ragged_rows,
    merge_runs_rows,
    sort_rows,
)
from jax_mergepath._dtypes import is_long
from jax_mergepath._keys import is_complex, order_keys
from jax_mergepath._primitives import Payload
from jax_mergepath._sharded.exchange import (
    exchange,
    exchange_chunk,
    exchange_kind,
    in_layout,
    padded,
    pieces,
    received_sizes,
)
from jax_mergepath._sharded.layout import Axes, on_rows, positions_like, varying
from jax_mergepath._sharded.splitters import splitters

# Shards of at least this many keys finish a one-key sort by merging the received chunks where
# they landed when they fit (_redistribute_merged); smaller ones always place and merge them:
# the choice is a lax.cond whose two branches both compile (+19 s of the CPU tests' quick run),
# for a gain measured on 2^28-key shards (4 x H100: 21.7 -> 17.8 ms, docs/performance.md).
MERGED_ROWS_MIN_SHARD = 1 << 14


def take(x: jax.Array, perm: jax.Array) -> jax.Array:
    """x[perm] along the first axis, bit for bit."""
    return from_bits(jnp.take(to_bits(x), perm, axis=0), x.dtype, x.weak_type)


def local_sort(
    keys: list[jax.Array], others: list[jax.Array], *, descending: bool, reverse_ties: bool,
    op: str,
) -> tuple[list[jax.Array], list[jax.Array]]:
    """A stable sort of 1-d keys (lexicographic), moving others (leading axis the keys')."""
    if len(keys) == 1:
        key = keys[0]
        if not others:
            k, _ = sort_rows(key, (), descending=descending, payload=Payload.NONE, op=op,
                             reverse_ties=reverse_ties)
            return [k], []
        if reverse_ties:  # ties in reverse input order: a stable sort of the reversed input
            key = reverse_bits(key, 0)
            others = [reverse_bits(x, 0) for x in others]
        if len(others) == 1 and fusable_values(others, key.shape):
            k, v = sort_rows(key, (others[0],), descending=descending, payload=Payload.VALUE,
                             op=op)
            return [k], [v]
        k, perm = sort_rows(key, (), descending=descending, payload=Payload.INDEX, op=op)
        return [k], [take(x, perm) for x in others]
    assert not descending and not reverse_ties
    n = keys[0].shape[0]
    if all(fusable_values([x], keys[0].shape) for x in others):
        out = lexsort_rows(keys, others, op)
        return out[: len(keys)], out[len(keys):]
    out = lexsort_rows(keys, [lax.iota(np.int32, n)], op)
    perm = out[-1]
    return out[:-1], [take(x, perm) for x in others]


def _merge_received(keys, others, sizes, *, descending: bool, op: str):
    """The stable sort of the g sorted runs laid out one after another (sizes: (g,) in layout
    order; ties: the earlier run first). One key of a real dtype: one merge of the runs (two:
    merge_runs; up to RAGGED_RUNS: the ragged merge), others moved with it. Else (several keys,
    complex keys, more runs, shards past int32 positions) a stable sort."""
    g = sizes.shape[0]
    if len(keys) == 1 and g <= RAGGED_RUNS and not is_complex(keys[0].dtype) \
            and not is_long(keys[0].shape[0]):
        if g == 2:
            k, perm = merge_runs_rows(keys[0], sizes[0], descending=descending,
                                      return_indices=bool(others), op=op)
            return [k], [take(x, perm) for x in others]
        lengths = sizes.astype(np.int32)
        starts = jnp.cumsum(lengths) - lengths
        k, moved = merge_ragged_rows(keys[0], starts, lengths, others,
                                     out_length=keys[0].shape[0], descending=descending)
        return [k], moved
    return local_sort(keys, others, descending=descending, reverse_ties=False, op=op)


def sort_shards(keys: list[jax.Array], others: list[jax.Array], axes: Axes, *, descending: bool,
                reverse_ties: bool, op: str) -> tuple[list[jax.Array], list[jax.Array]]:
    """This device's share of the global stable sort of `keys` (1-d local shards of n keys,
    lexicographic), moving `others` (leading axis n): module docstring."""
    g = axes.size()
    first = dict(descending=descending, reverse_ties=reverse_ties, op=op)
    if g == 1:
        return local_sort(keys, others, **first)
    ks, os_ = local_sort(keys, others, **first)
    okeys = [o for k in ks for o in order_keys(k, descending)]
    moved = [*ks, *os_]
    if len(ks) == 1 and 2 < g <= RAGGED_RUNS and exchange_kind() == "chunks" \
            and not is_complex(ks[0].dtype) and ks[0].shape[0] >= MERGED_ROWS_MIN_SHARD \
            and not is_long(g * exchange_chunk(ks[0].shape[0], g)):
        return _redistribute_merged(okeys, moved, axes, g, reverse_ties, descending, op)
    got, layout = exchange(moved, splitters(okeys, axes, g, reverse_ties), axes, g, reverse_ties)
    rk, ro = got[: len(ks)], got[len(ks):]
    return _merge_received(rk, ro, layout, descending=descending, op=op)


def _redistribute_merged(okeys, moved, axes: Axes, g, reverse_ties, descending, op):
    """The exchange then the merge of the received runs for one key and 2 < g <= RAGGED_RUNS:
    where every piece fits one chunk (one round: random keys), the chunks received from one
    all_to_all are merged where they landed (one ragged merge of g runs, each at the start of
    its chunk) instead of placed one after another first; else (skewed keys) the general
    exchange, then the merge of the placed runs (_merge_received)."""
    cuts = splitters(okeys, axes, g, reverse_ties)
    sent = cuts[1:] - cuts[:-1]
    n = moved[0].shape[0]
    chunk = exchange_chunk(n, g)
    fits = lax.pmax(jnp.max(sent), axes.name) <= chunk

    def by_chunks(moved):
        # run i: the chunk from the i-th device in layout order, where it landed (no reversal)
        lengths = in_layout(received_sizes(sent, axes), reverse_ties).astype(np.int32)
        starts = in_layout(jnp.arange(g, dtype=np.int32) * chunk, reverse_ties)
        rows = []
        for x in moved:  # chunk i: what device i sent here
            got = lax.all_to_all(pieces(padded(to_bits(x), chunk), cuts[:-1], chunk, g),
                                 axes.name, 0, 0)
            rows.append(from_bits(got.reshape(g * chunk, *got.shape[2:]), x.dtype, x.weak_type))
        key, vals = merge_ragged_rows(rows[0], starts, lengths, rows[1:], out_length=n,
                                      descending=descending)
        return [varying(x, axes.names) for x in (key, *vals)]

    def placed_and_merged(moved):
        got, layout = exchange(moved, cuts, axes, g, reverse_ties)
        ks, os_ = _merge_received(got[:1], got[1:], layout, descending=descending, op=op)
        return [varying(x, axes.names) for x in (*ks, *os_)]

    out = lax.cond(fits, by_chunks, placed_and_merged, moved)
    return out[:1], out[1:]


def sort_local(keys: list[jax.Array], others: list[jax.Array], axes: Axes, *, descending: bool,
               reverse_ties: bool, positions: bool, op: str) -> list[jax.Array]:
    """sort_shards on every row of local shards (sorted axis last): module docstring."""
    nk = len(keys)
    arrays = [*keys, *others]
    if positions:
        arrays.append(positions_like(keys[0], axes))

    def rows(shards):
        k, o = sort_shards(shards[:nk], shards[nk:], axes, descending=descending,
                           reverse_ties=reverse_ties, op=op)
        return [*k, *o]

    return on_rows(rows, arrays, keys[0].ndim - 1)
