"""The sharded merge, per device: co-ranks of the devices' output ranges, an exchange of only
the misplaced elements, one local merge.

Contract: `merge_local(a, b, ...)` takes this device's shards of the sorted a and b (split alike:
device i holds a[i ma:(i + 1) ma] and b[i nb:(i + 1) nb]; the merged axis LAST, leading
dimensions rows) and returns its share of the stable merge (ties: a first), the output ranks
[i no, (i + 1) no) with no = ma + nb, then, when `positions`, their global positions in
concatenate([a, b]). `merge_runs_local(x, split, ...)` does the same for the runs x[:split] and
x[split:] of the sharded x (split: a global position a row), its output split as x.

The algorithm: the co-rank c_k of each output boundary k no (how many elements of a precede it)
by a global search (co_rank_search: rounds of probes, each probe's a and b elements fetched by a
psum of the one device that holds them); device k's output is then the slice [c_k, c_{k+1}) of
a and [k no - c_k, (k + 1) no - c_{k+1}) of b, so every device knows which of its elements go
where. Only elements whose output device is not their input device move (exchange.ring_rounds:
one device shift at a time, no round at a shift with no piece); each device lays its a-part then
its b-part out in one buffer and merges the two runs (merge_runs_rows). Adversarial inputs (all
of a below all of b) take the same algorithm. Bit for bit the single-device merge; it calls the
row-level functions alone (no precondition check reaches it).
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jax_mergepath._bits import from_bits, to_bits
from jax_mergepath._dispatch import merge_runs_rows
from jax_mergepath._dtypes import index_dtype
from jax_mergepath._keys import order_keys
from jax_mergepath._sharded.exchange import Stream, buffer, padded, ring_rounds, shift_rounds
from jax_mergepath._sharded.layout import Axes, on_rows, varying
from jax_mergepath._sharded.sort import take
from jax_mergepath._sharded.splitters import lex_le, split_rounds

MERGE_PROBES = 64  # probes per output boundary and round of the co-rank search
# The merge exchange's chunk: no / MERGE_CHUNK elements (no: the outputs a device), at least
# MERGE_CHUNK_MIN (or no): a piece needs as many ppermute rounds as it has chunks.
MERGE_CHUNK, MERGE_CHUNK_MIN = 64, 256


def merge_chunk(no: int) -> int:
    """Elements a device pair's chunk of the merge exchange holds."""
    return max(1, min(no, max(math.ceil(no / MERGE_CHUNK), MERGE_CHUNK_MIN)))


@dataclasses.dataclass(frozen=True)
class Run:
    """A sorted run as its elements sit on the devices: coordinate c of the run (0 <= c <
    length) is element c + base of the array split in shards of `shard` elements."""

    okeys: list[jax.Array]  # this device's shard's order keys
    shard: int
    base: jax.Array | int
    length: jax.Array | int

    def covered(self, device) -> tuple[jax.Array, jax.Array]:
        """The run's coordinates [lo, hi) held by `device`."""
        lo = device * self.shard - self.base
        return jnp.clip(lo, 0, self.length), jnp.clip(lo + self.shard, 0, self.length)


def fetch(run: Run, coords: jax.Array, axes: Axes) -> list[jax.Array]:
    """The order keys of the run's elements at `coords` (any shape, clamped into the run),
    on every device: the holder's element, summed with everyone else's zeros."""
    pos = jnp.clip(coords, 0, jnp.maximum(run.length - 1, 0)) + run.base
    local = pos - axes.index().astype(pos.dtype) * run.shard
    mine = (local >= 0) & (local < run.shard)
    slot = jnp.clip(local, 0, run.shard - 1).astype(np.int32)
    vals = [jnp.where(mine, k[slot], jnp.zeros((), k.dtype)) for k in run.okeys]
    return list(lax.psum(vals, axes.name))


def co_rank_search(targets: jax.Array, a: Run, b: Run, axes: Axes, *, bound: int,
                   probes: int) -> jax.Array:
    """For each target t (output rank, clamped to [0, len a + len b]), how many elements of a
    are among the first t of the stable merge of the runs a and b (ties: a first): the first i
    in [max(0, t - len b), min(t, len a)) whose a[i] follows b[t - i - 1], searched with
    `probes` probes a round; bound: a static bound of len a + len b."""
    t = jnp.clip(targets, 0, a.length + b.length)
    lo = jnp.maximum(t - b.length, 0)
    hi = jnp.minimum(t, a.length)
    j = jnp.arange(probes, dtype=lo.dtype)
    for _ in range(split_rounds(bound + 1, probes)):
        width = (hi - lo)[..., None]
        p = lo[..., None] + (width // probes) * j + ((width % probes) * j) // probes
        a_first = lex_le(fetch(a, p, axes), fetch(b, t[..., None] - p - 1, axes))
        valid = width > 0
        lo = jnp.maximum(lo, jnp.max(jnp.where(valid & a_first, p + 1, 0), axis=-1))
        hi = jnp.minimum(hi, jnp.min(jnp.where(valid & ~a_first, p, hi[..., None]), axis=-1))
    return lo


def _stream(run: Run, bits: list[jax.Array], ranges: tuple, out_at, axes: Axes, g: int,
            chunk: int) -> Stream:
    """The pieces of `run` (bits: this device's shard of its arrays) for every device's range
    [ranges[0][k], ranges[1][k]) of the run, landing at out_at (this device's range start in
    its buffer)."""
    me = axes.index()
    starts, ends = ranges
    lo, hi = run.covered(me)
    first = jnp.clip(starts, lo, hi)
    sent = (jnp.clip(ends, lo, hi) - first).astype(np.int32)
    send_at = (first + run.base - me.astype(first.dtype) * run.shard).astype(np.int32)
    devices = jnp.arange(g, dtype=starts.dtype)
    src_lo, src_hi = run.covered(devices)
    mine_lo, mine_hi = starts[me], ends[me]
    got_lo = jnp.clip(src_lo, mine_lo, mine_hi)
    received = (jnp.clip(src_hi, mine_lo, mine_hi) - got_lo).astype(np.int32)
    recv_at = (out_at + got_lo - mine_lo).astype(np.int32)
    return Stream([padded(b, chunk) for b in bits], send_at, sent, recv_at, received)


def _copy_own(stream: Stream, outs: list[jax.Array], me) -> list[jax.Array]:
    """This device's own piece copied into its buffers (no collective)."""
    length = outs[0].shape[0]
    i = jnp.arange(length, dtype=np.int32)
    at, n = stream.recv_at[me], stream.received[me]
    keep = (i >= at) & (i < at + n)
    src = jnp.clip(i - at + stream.send_at[me], 0, stream.arrays[0].shape[0] - 1)
    out = []
    for x, o in zip(stream.arrays, outs, strict=True):
        k = keep.reshape((length,) + (1,) * (o.ndim - 1))
        out.append(jnp.where(k, jnp.take(x, src, axis=0), o))
    return out


def _exchange_plan(a: Run, b: Run, arrays: tuple[list, list], no: int, axes: Axes):
    """The co-ranks c of the output boundaries, b's range starts, this device's a-part length
    and the two streams (a's pieces, b's) of the merge exchange, with its chunk."""
    g = axes.size()
    me = axes.index()
    dtype = index_dtype(g * no + 1)
    k = jnp.arange(g + 1, dtype=dtype)
    cuts = co_rank_search(k[1:-1] * no, a, b, axes, bound=g * (a.shard + b.shard),
                          probes=MERGE_PROBES)
    c = jnp.concatenate([jnp.zeros((1,), dtype), cuts.astype(dtype),
                         jnp.full((1,), a.length, dtype)])
    b_starts = k * no - c
    alpha = (c[me + 1] - c[me]).astype(np.int32)  # my a-part's length
    chunk = merge_chunk(no)
    a_bits, b_bits = ([to_bits(x) for x in xs] for xs in arrays)
    streams = [_stream(a, a_bits, (c[:-1], c[1:]), 0, axes, g, chunk),
               _stream(b, b_bits, (b_starts[:-1], b_starts[1:]), alpha, axes, g, chunk)]
    return c, b_starts, alpha, streams, chunk


def merge_shards(a: Run, b: Run, arrays: tuple[list, list], no: int, axes: Axes, *,
                 descending: bool, b_index_base, positions: bool, op: str) -> list[jax.Array]:
    """This device's `no` outputs of the merge of the runs a and b (arrays: this device's
    shards of a's and b's arrays, keys first), then their positions (a's coordinate, or b's
    plus b_index_base) when `positions`: module docstring."""
    g = axes.size()
    me = axes.index()
    c, b_starts, alpha, streams, chunk = _exchange_plan(a, b, arrays, no, axes)
    outs = [buffer(x, no, chunk, axes) for x in streams[0].arrays]
    for s in streams:
        outs = _copy_own(s, outs, me)
    outs = ring_rounds(streams, outs, axes, g, chunk, first=0, skip_own=True)
    keys, *others = [from_bits(o[:no], x.dtype, x.weak_type)
                     for o, x in zip(outs, arrays[0], strict=True)]
    need = positions or bool(others)
    merged, perm = merge_runs_rows(keys, alpha, descending=descending, return_indices=need,
                                   op=op)
    out = [merged, *(take(x, perm) for x in others)]
    if positions:
        pos_dtype = index_dtype(g * no)
        perm = perm.astype(pos_dtype)
        in_a = perm < alpha
        a_pos = c[me].astype(pos_dtype) + perm
        b_pos = (b_starts[me] + b_index_base).astype(pos_dtype) + perm - alpha
        out.append(jnp.where(in_a, a_pos, b_pos))
    return [varying(x, axes.names) for x in out]


def merge_traffic(a: jax.Array, b: jax.Array, axes: Axes, *, descending: bool) -> jax.Array:
    """The elements the merge exchange of the 1-d shards a and b ships between devices, all
    devices together: every round at a device shift ships a chunk from each device (for the
    tests, which compare it with the elements whose device changes)."""
    g = axes.size()
    na, nb = a.shape[0], b.shape[0]
    run_a = Run(order_keys(a, descending), na, 0, g * na)
    run_b = Run(order_keys(b, descending), nb, 0, g * nb)
    *_, streams, chunk = _exchange_plan(run_a, run_b, ([a], [b]), na + nb, axes)
    rounds = sum(shift_rounds(s, shift, axes, g, chunk) for shift in range(1, g) for s in streams)
    return rounds * chunk * g


def merge_local(a: jax.Array, b: jax.Array, a_others: list[jax.Array],
                b_others: list[jax.Array], axes: Axes, *, descending: bool, positions: bool,
                op: str) -> list[jax.Array]:
    """merge_shards of a and b (moving the others) on every row: module docstring."""
    na, nb = a.shape[-1], b.shape[-1]
    nk = len(a_others)

    def rows(shards):
        ra, rb, *rest = shards
        g = axes.size()
        run_a = Run(order_keys(ra, descending), na, 0, g * na)
        run_b = Run(order_keys(rb, descending), nb, 0, g * nb)
        return merge_shards(run_a, run_b, ([ra, *rest[:nk]], [rb, *rest[nk:]]), na + nb, axes,
                            descending=descending, b_index_base=g * na, positions=positions,
                            op=op)

    return on_rows(rows, [a, b, *a_others, *b_others], a.ndim - 1)


def merge_runs_local(x: jax.Array, split: jax.Array, others: list[jax.Array], axes: Axes, *,
                     descending: bool, positions: bool, op: str) -> list[jax.Array]:
    """merge_shards of the runs x[:split] and x[split:] (split: a global position a row, of
    x's leading shape), moving others, on every row: module docstring."""
    n = x.shape[-1]

    def rows(shards):
        rx, s, *rest = shards
        g = axes.size()
        s = jnp.clip(s, 0, g * n).astype(index_dtype(g * n + 1))
        okeys = order_keys(rx, descending)
        run_a = Run(okeys, n, 0, s)
        run_b = Run(okeys, n, s, g * n - s)
        return merge_shards(run_a, run_b, ([rx, *rest], [rx, *rest]), n, axes,
                            descending=descending, b_index_base=s, positions=positions, op=op)

    return on_rows(rows, [x, split, *others], x.ndim - 1)
