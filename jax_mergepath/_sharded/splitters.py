"""Exact splitters of a sort over g devices: where each device's sorted shard is cut so that
device k receives the global ranks [k n, (k + 1) n).

Contract: `splitters(okeys, axes, g, reverse_ties)` runs per device on its sorted shard's order
keys (1-d, n keys, sorted by the keys, then position) and returns (g + 1,) int32 cuts. The
elements are ordered by (order keys, tie rank of the device, position in its sorted shard), a
total order that is the stable single-device order (the tie rank is the device index, reversed
for jnp.sort's descending ties). Each cut is found by multi-sequence selection: every round each
device samples `samples_per_cut(n, g)` keys of its still-open range per cut, all-gathers them
(the keys alone: the samples' devices and positions follow from the gathered ranges), counts its
elements below each (a binary search) and psums the counts; each device narrows its range to the
gap between the two samples that bracket the cut's rank. A range of w keys shrinks to at most
ceil(w / s) a round; the last round samples every key left, so the cut is exact. The samples are
bounded by the shard: a round gathers at most n / SAMPLE_SHARE keys a device (beside ranges of
2 (g - 1) ints), or SPLIT_SAMPLES_MIN a cut on small shards.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jax_mergepath._dtypes import index_dtype
from jax_mergepath._sharded.layout import Axes, varying_as

SPLIT_SAMPLES = 1024  # at most this many keys a device samples per cut and round
SPLIT_SAMPLES_MIN = 16  # at least this many (or the shard): rounds on small shards
SAMPLE_SHARE = 32  # a round gathers at most n / SAMPLE_SHARE keys a device (3% of the shard)


def samples_per_cut(n: int, g: int) -> int:
    """Keys a device samples per cut and round for shards of n keys over g devices: the g - 1
    cuts' samples of all g devices, (g - 1) g s keys, stay within n / SAMPLE_SHARE, between
    SPLIT_SAMPLES_MIN (or n) and SPLIT_SAMPLES."""
    budget = n // (SAMPLE_SHARE * g * max(g - 1, 1))
    return max(1, min(n, max(SPLIT_SAMPLES_MIN, min(SPLIT_SAMPLES, budget))))


def split_rounds(n: int, samples: int) -> int:
    """Rounds of the splitter search for shards of n keys: until every open range is sampled
    whole (a range of w keys shrinks to ceil(w / samples) a round)."""
    rounds, w = 1, n
    while w > samples:
        w = -(-w // samples)
        rounds += 1
    return rounds


def lex_less(a: Sequence[jax.Array], b: Sequence[jax.Array]) -> jax.Array:
    """a < b lexicographically (first most significant), elementwise."""
    less = jnp.zeros(jnp.broadcast_shapes(a[0].shape, b[0].shape), bool)
    equal = jnp.ones_like(less)
    for x, y in zip(a, b, strict=True):
        less = less | (equal & (x < y))
        equal = equal & (x == y)
    return less


def lex_le(a: Sequence[jax.Array], b: Sequence[jax.Array]) -> jax.Array:
    """a <= b lexicographically (first most significant), elementwise."""
    return ~lex_less(b, a)


def count_below(okeys: list[jax.Array], tie: jax.Array, query: list[jax.Array],
                axes: Axes) -> jax.Array:
    """For each query (order keys..., tie rank, position), how many of this device's elements
    (okeys[:, q], tie, q), sorted, precede it: a binary search (int32)."""
    n = okeys[0].shape[0]
    steps = n.bit_length()

    def step(i, pos):
        cand = pos + jnp.left_shift(np.int32(1), (steps - 1 - i).astype(np.int32))
        e = jnp.minimum(cand - 1, n - 1)
        mine = [k[e] for k in okeys] + [jnp.broadcast_to(tie, e.shape), e]
        return jnp.where((cand <= n) & lex_less(mine, query), cand, pos)

    start = varying_as(jnp.zeros(query[0].shape, np.int32), *okeys, *query)
    return lax.fori_loop(0, steps, step, start)


def _sample_positions(lo: jax.Array, hi: jax.Array, s: int, n: int) -> tuple[jax.Array, ...]:
    """s positions spread over each range [lo, hi) (every position of a range of at most s),
    clamped into the shard, and whether the range is open: lo + floor((hi - lo) j / s) without
    overflow (hi - lo < 2**31, j < s)."""
    width = (hi - lo)[..., None]
    j = jnp.arange(s, dtype=np.int32)
    pos = lo[..., None] + (width // s) * j + ((width % s) * j) // s
    return jnp.minimum(pos, n - 1), jnp.broadcast_to(width > 0, pos.shape)


def splitters(okeys: list[jax.Array], axes: Axes, g: int, reverse_ties: bool) -> jax.Array:
    """(g + 1,) int32: this device's sorted shard cut at the global ranks 0, n, ..., g n
    (module docstring)."""
    n = okeys[0].shape[0]
    me = axes.index()
    ties = jnp.arange(g, dtype=np.int32)
    ties = (g - 1 - ties) if reverse_ties else ties  # the tie rank of each device
    tie = ties[me]
    rank_dtype = index_dtype(g * n)
    targets = jnp.arange(1, g, dtype=rank_dtype)[:, None] * n  # (g - 1, 1)
    lo = jnp.zeros((g - 1,), np.int32)
    hi = jnp.full((g - 1,), n, np.int32)
    s = samples_per_cut(n, g)
    for _ in range(split_rounds(n, s)):
        pos, _ = _sample_positions(lo, hi, s, n)
        sample = [k[pos] for k in okeys]  # (g - 1, s)
        query = [lax.all_gather(x, axes.name, axis=1, tiled=True) for x in sample]  # (g-1, g s)
        if s == n:  # one round of every key: the samples' positions are known
            qpos = jnp.broadcast_to(jnp.arange(n, dtype=np.int32), (g - 1, g, n))
            qvalid = jnp.ones(qpos.shape, bool)
        else:  # every device's open ranges, (g, 2, g - 1), give its samples' positions
            ranges = lax.all_gather(jnp.stack([lo, hi]), axes.name)
            qpos, qvalid = _sample_positions(ranges[:, 0].T, ranges[:, 1].T, s, n)
        qtie = jnp.broadcast_to(ties[:, None], qpos.shape[1:])
        shape = query[0].shape
        query += [jnp.broadcast_to(qtie.reshape(-1), shape), qpos.reshape(shape)]
        qvalid = qvalid.reshape(shape)
        below = count_below(okeys, tie, query, axes)
        rank = lax.psum(below.astype(rank_dtype), axes.name)
        le = qvalid & (rank <= targets)
        gt = qvalid & (rank > targets)
        lo = jnp.maximum(lo, jnp.max(jnp.where(le, below, 0), axis=1))
        hi = jnp.minimum(hi, jnp.min(jnp.where(gt, below, n), axis=1))
    return jnp.concatenate([jnp.zeros((1,), np.int32), lo, jnp.full((1,), n, np.int32)])
