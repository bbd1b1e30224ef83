"""Sorts along an axis split over mesh axes: each device sorts its shard, exact splitters from a
co-rank over the sorted shards, one exchange, a local merge or sort of the received runs
(docs/contract.md "Sharded axis", docs/architecture.md "Sharded axis").

Contract: `sort_shards` runs inside a `shard_map` (or any context where `axis_name` is bound) on
local shards with the sorted axis first: every device holds n keys, the global array is the
devices' shards in axis_index order. It returns this device's share of the globally sorted
array: the global ranks [i n, (i + 1) n) on device i. The order is the single-device sort's,
stable: equal keys keep their global input order, or the reverse with reverse_ties (jnp.sort's
descending). Data moves as bits (_bits.to_bits), so every bit of keys and values survives.

Splitters: the elements are ordered by (order keys, tie rank of the device, position in its sorted
shard), a total order; device k's share starts at the element of global rank k n. That element is
found by multi-sequence selection: each round, every device gathers SPLIT_SAMPLES keys of its
still-open range per splitter from every device, ranks them globally (a binary search a device,
then a psum) and narrows its range to the gap between the two samples that bracket the target.
A range of w keys shrinks to at most ceil(w / SPLIT_SAMPLES) a round; a last round with every
remaining key sampled finds the element exactly. So every device receives exactly n keys,
however skewed the keys.

Exchange: the pieces' sizes depend on the data; XLA:CPU has no ragged all-to-all, so the pieces'
first chunks of EXCHANGE_CHUNK x n / g elements travel in one all_to_all (all of every piece on
random keys), the rest of longer pieces (skewed keys) one device shift at a time, in rounds of a
ppermute of a chunk (_exchange_chunks); EXCHANGE = "ragged" uses `lax.ragged_all_to_all`
instead.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jax_mergepath._bits import from_bits, reverse_bits, to_bits
from jax_mergepath._dispatch import (
    fusable_values,
    lexsort_rows,
    merge_by_key_rows,
    merge_rows,
    merge_runs_rows,
    searchsorted_rows,
    sort_rows,
)
from jax_mergepath._dtypes import index_dtype, position_dtype, search_index_dtype
from jax_mergepath._keys import is_complex, order_keys
from jax_mergepath._primitives import Payload

AxisName = str | tuple[str, ...]

SPLIT_SAMPLES = 64  # keys a device samples per splitter and round (docs/performance.md)
EXCHANGE_CHUNK = 1.04  # the exchange's chunk, in units of n / g elements (n keys a device)
EXCHANGE = "chunks"  # "chunks": an all_to_all of chunks, then ppermute rounds; "ragged":
#                     lax.ragged_all_to_all
# Shards of at least this many keys finish a one-key sort by merging the received chunks as rows
# where they fit (_redistribute_merged); smaller ones always place and sort them: the choice is a
# lax.cond whose two branches both compile (+19 s of the CPU tests' quick run), for a gain
# measured on 2^28-key shards (4 x H100: 21.7 -> 17.8 ms, docs/performance.md).
MERGED_ROWS_MIN_SHARD = 1 << 14
# Shards of at least this many keys move the rest of long pieces (skewed keys) by ppermute rounds
# of one chunk a device shift; smaller ones by more rounds of the all_to_all (_exchange_chunks).
RING_MIN_SHARD = 1 << 14


def split_rounds(n: int, samples: int = SPLIT_SAMPLES) -> int:
    """Rounds of the splitter search for shards of n keys: until every open range is sampled
    whole (a range of w keys shrinks to ceil(w / samples) a round)."""
    rounds, w = 1, n
    while w > samples:
        w = -(-w // samples)
        rounds += 1
    return rounds


def _varying(x: jax.Array, axis_name: AxisName) -> jax.Array:
    """x typed as varying over axis_name (shard_map's type check of loop carries and custom
    derivatives)."""
    names = (axis_name,) if isinstance(axis_name, str) else tuple(axis_name)
    aval = jax.typeof(x)
    mat = getattr(aval, "mat", None)  # (jax 0.10: aval.mat.varying; others: aval.vma)
    vma = mat.varying if mat is not None else getattr(aval, "vma", frozenset())
    missing = tuple(name for name in names if name not in vma)
    return lax.pcast(x, missing, to="varying") if missing else x


# ---------------------------------------------------------------- local sorts


def _take(x: jax.Array, perm: jax.Array) -> jax.Array:
    """x[perm] along the first axis, bit for bit."""
    return from_bits(jnp.take(to_bits(x), perm, axis=0), x.dtype, x.weak_type)


def _local_sort(
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
        return [k], [_take(x, perm) for x in others]
    assert not descending and not reverse_ties
    n = keys[0].shape[0]
    if all(fusable_values([x], keys[0].shape) for x in others):
        out = lexsort_rows(keys, others, op)
        return out[: len(keys)], out[len(keys):]
    out = lexsort_rows(keys, [lax.iota(np.int32, n)], op)
    perm = out[-1]
    return out[:-1], [_take(x, perm) for x in others]


# ---------------------------------------------------------------- splitters


def _lex_less(a: Sequence[jax.Array], b: Sequence[jax.Array]) -> jax.Array:
    """a < b lexicographically (first most significant), elementwise."""
    less = jnp.zeros(jnp.broadcast_shapes(a[0].shape, b[0].shape), bool)
    equal = jnp.ones_like(less)
    for x, y in zip(a, b, strict=True):
        less = less | (equal & (x < y))
        equal = equal & (x == y)
    return less


def _count_below(okeys: list[jax.Array], tie: jax.Array, query: list[jax.Array],
                 axis_name: AxisName) -> jax.Array:
    """For each query (order keys..., tie rank, position), how many of this device's elements
    (okeys[:, q], tie, q), sorted, precede it: a binary search (int32)."""
    n = okeys[0].shape[0]
    steps = n.bit_length()

    def step(i, pos):
        cand = pos + jnp.left_shift(np.int32(1), (steps - 1 - i).astype(np.int32))
        e = jnp.minimum(cand - 1, n - 1)
        mine = [k[e] for k in okeys] + [jnp.broadcast_to(tie, e.shape), e]
        return jnp.where((cand <= n) & _lex_less(mine, query), cand, pos)

    start = _varying(jnp.zeros(query[0].shape, np.int32), axis_name)
    return lax.fori_loop(0, steps, step, start)


def _cuts(okeys: list[jax.Array], tie: jax.Array, axis_name: AxisName, g: int) -> jax.Array:
    """(g + 1,) int32: this device's sorted shard cut at the global ranks 0, n, ..., g n (module
    docstring: the splitters)."""
    n = okeys[0].shape[0]
    rank_dtype = index_dtype(g * n)
    targets = jnp.arange(1, g, dtype=rank_dtype)[:, None] * n  # (g - 1, 1)
    lo = jnp.zeros((g - 1,), np.int32)
    hi = jnp.full((g - 1,), n, np.int32)
    s = SPLIT_SAMPLES
    j = jnp.arange(s, dtype=np.int32)
    for _ in range(split_rounds(n, s)):
        width = (hi - lo)[:, None]
        # lo + floor(width * j / s) without overflow: width < 2**31, j < s.
        pos = lo[:, None] + (width // s) * j + ((width % s) * j) // s  # (g - 1, s)
        valid = jnp.broadcast_to(width > 0, pos.shape)
        pos = jnp.minimum(pos, n - 1)
        sample = [k[pos] for k in okeys] + [jnp.broadcast_to(tie, pos.shape), pos, valid]
        gathered = [lax.all_gather(x, axis_name, axis=1, tiled=True) for x in sample]
        *query, qvalid = gathered  # each (g - 1, g s)
        below = _count_below(okeys, tie, query, axis_name)
        rank = lax.psum(below.astype(rank_dtype), axis_name)
        le = qvalid & (rank <= targets)
        gt = qvalid & (rank > targets)
        lo = jnp.maximum(lo, jnp.max(jnp.where(le, below, 0), axis=1))
        hi = jnp.minimum(hi, jnp.min(jnp.where(gt, below, n), axis=1))
    return jnp.concatenate([jnp.zeros((1,), np.int32), lo, jnp.full((1,), n, np.int32)])


# ---------------------------------------------------------------- the exchange


def _exchange_chunks(bits: list[jax.Array], send_at, recv_at, sent, received, axis_name, g,
                     reverse: bool):
    """Pieces of every array in bits (leading axis n): piece k, bits[send_at[k]:][:sent[k]],
    goes to device k, the piece from device i lands at recv_at[i] (received[i] elements);
    returns the received arrays (leading axis n). Every piece's first chunk travels in one
    all_to_all of fixed chunks (all of every piece on random keys), written whole in layout
    order (a chunk's tail past its piece is overwritten by the next piece's chunk). The rest of
    longer pieces (skewed keys), in rounds of as many chunks as the longest piece needs: for
    shards of at least RING_MIN_SHARD keys one device shift at a time, a round a ppermute of one
    chunk to device me + s (its own piece copied in place, s = 0), so each element crosses once;
    for smaller shards more rounds of the all_to_all, each shipping g chunks (fewer programs to
    compile: g loops of ppermutes cost the CPU tests' quick run 67 -> 87 s)."""
    n = bits[0].shape[0]
    chunk = _exchange_chunk(n, g)
    padded = [_padded(b, chunk) for b in bits]
    outs = [_varying(jnp.zeros((n + chunk, *b.shape[1:]), b.dtype), axis_name) for b in bits]
    lane = jnp.arange(chunk, dtype=np.int32)
    layout = range(g - 1, -1, -1) if reverse else range(g)  # recv_at ascending

    def place(out, piece, at, valid):  # piece's first `valid` elements to out[at:]
        keep = (lane < valid).reshape((chunk,) + (1,) * (out.ndim - 1))
        piece = jnp.where(keep, piece, lax.dynamic_slice_in_dim(out, at, chunk))
        return lax.dynamic_update_slice_in_dim(out, piece, at, 0)

    def all_to_all_round(r, outs, masked: bool):
        new = []
        for src, out in zip(padded, outs, strict=True):
            got = lax.all_to_all(_pieces(src, send_at + r * chunk, chunk, g), axis_name, 0, 0)
            for i in layout:  # got[i]: device i's chunk for me
                at = recv_at[i] + r * chunk
                out = (place(out, got[i], at, received[i] - r * chunk) if masked
                       else lax.dynamic_update_slice_in_dim(out, got[i], at, 0))
            new.append(out)
        return new

    outs = all_to_all_round(0, outs, masked=False)
    if n < RING_MIN_SHARD:
        rounds = lax.pmax((jnp.max(sent).astype(np.int32) + chunk - 1) // chunk, axis_name)
        outs = lax.fori_loop(1, rounds, lambda r, o: all_to_all_round(r, o, masked=True), outs)
        return [o[:n] for o in outs]
    me = lax.axis_index(axis_name)
    for shift in range(g):
        to, frm = (me + shift) % g, (me - shift) % g
        rounds = _mesh_max((sent[to].astype(np.int32) + chunk - 1) // chunk, axis_name)
        perm = [(i, (i + shift) % g) for i in range(g)]

        def ring_round(r, outs, to=to, frm=frm, shift=shift, perm=perm):
            new = []
            for src, out in zip(padded, outs, strict=True):
                piece = lax.dynamic_slice_in_dim(src, send_at[to] + r * chunk, chunk)
                if shift:
                    piece = lax.ppermute(piece, axis_name, perm)
                new.append(place(out, piece, recv_at[frm] + r * chunk, received[frm] - r * chunk))
            return new

        outs = lax.fori_loop(1, rounds, ring_round, outs)
    return [o[:n] for o in outs]


def _mesh_max(x: jax.Array, axis_name: AxisName) -> jax.Array:
    """x's maximum over every manual axis of the mesh (and axis_name): the trip count of a loop
    whose body holds a ppermute must agree on every device of the mesh, not only along
    axis_name (XLA's collective permute of one mesh axis is one operation over all the mesh's
    devices; a 2-D mesh's rows would otherwise wait on each other). x is typed varying over
    them all first (jax 0.11 refuses a pmax over an axis along which its input is invariant)."""
    names = axis_name if isinstance(axis_name, tuple) else (axis_name,)
    manual = tuple(jax.sharding.get_abstract_mesh().manual_axes)
    axes = tuple(dict.fromkeys((*manual, *names)))
    return lax.pmax(_varying(x, axes), axes)


def _exchange_ragged(bits, send_at, recv_at, sent, received, axis_name):
    out_at = lax.all_to_all(recv_at, axis_name, 0, 0, tiled=True)  # where my pieces land
    return [
        lax.ragged_all_to_all(b, jnp.zeros_like(b), send_at, sent, out_at, received,
                              axis_name=axis_name)
        for b in bits
    ]


def _exchange(bits: list[jax.Array], cuts: jax.Array, axis_name: AxisName, g: int,
              reverse: bool) -> tuple[list[jax.Array], jax.Array]:
    """Piece k of this device's sorted shard ([cuts[k], cuts[k + 1])) to device k; each device
    lays its received pieces out by the senders' tie rank (reversed device order when
    `reverse`), so that a stable merge of them keeps the global tie order. Returns the received
    arrays and the pieces' sizes in layout order."""
    sent = cuts[1:] - cuts[:-1]  # (g,)
    received = _received(sent, axis_name)
    order = _in_layout(received, reverse)  # the runs' sizes, in layout order
    at = jnp.cumsum(order) - order  # exclusive, in tie-rank order
    recv_at = _in_layout(at, reverse).astype(np.int32)
    send_at = cuts[:-1]
    if EXCHANGE == "ragged":
        return _exchange_ragged(bits, send_at, recv_at, sent, received, axis_name), order
    return _exchange_chunks(bits, send_at, recv_at, sent, received, axis_name, g, reverse), order


# ---------------------------------------------------------------- merging the received runs


def _merge_received(keys, others, sizes, *, descending: bool, op: str):
    """The stable sort of the g sorted runs laid out one after another (sizes: (g,) in layout
    order; ties: the earlier run first). Two runs of one key: one merge_runs (others follow its
    positions). Else a stable sort (one key on more devices, with pieces that fit one chunk of
    a large shard, merges them as rows instead: _redistribute_merged)."""
    if len(keys) == 1 and sizes.shape[0] == 2 and not is_complex(keys[0].dtype):
        k, perm = merge_runs_rows(keys[0], sizes[0], descending=descending,
                                  return_indices=bool(others), op=op)
        return [k], [_take(x, perm) for x in others]
    return _local_sort(keys, others, descending=descending, reverse_ties=False, op=op)


# ---------------------------------------------------------------- the sort


def sort_shards(
    keys: list[jax.Array],
    others: list[jax.Array],
    *,
    axis_name: AxisName,
    descending: bool,
    reverse_ties: bool,
    op: str,
) -> tuple[list[jax.Array], list[jax.Array]]:
    """This device's share of the global stable sort of `keys` (1-d local shards of n keys,
    lexicographic), moving `others` (leading axis n): module docstring."""
    g = lax.psum(1, axis_name)
    first = dict(descending=descending, reverse_ties=reverse_ties, op=op)
    if g == 1:
        return _local_sort(keys, others, **first)
    ks, os_ = _local_sort(keys, others, **first)
    okeys = [o for k in ks for o in order_keys(k, descending)]
    moved = [*ks, *os_]
    if len(ks) == 1 and g > 2 and g & (g - 1) == 0 and EXCHANGE == "chunks" \
            and not is_complex(ks[0].dtype) and ks[0].shape[0] >= MERGED_ROWS_MIN_SHARD:
        return _redistribute_merged(okeys, moved, axis_name, g, reverse_ties, descending, op)
    got, layout = _redistribute(okeys, moved, axis_name, g, reverse_ties)
    rk, ro = got[: len(ks)], got[len(ks):]
    return _merge_received(rk, ro, layout, descending=descending, op=op)


def _redistribute_merged(okeys, moved, axis_name, g, reverse_ties, descending, op):
    """_redistribute then _merge_received for one key and g a power of two above 2: where every
    piece fits one chunk (one round: random keys), the pieces received from one all_to_all
    stay rows of a chunk, merged pairwise in layout order (log2 g levels of ragged merges at the
    copy rate) instead of placed one after another and sorted again; else (skewed keys) the
    general exchange and sort."""
    cuts = _splitters(okeys, axis_name, g, reverse_ties)
    sent = cuts[1:] - cuts[:-1]
    n = moved[0].shape[0]
    chunk = _exchange_chunk(n, g)
    fits = lax.pmax(jnp.max(sent), axis_name) <= chunk

    def by_rows(moved):
        sizes = _received(sent, axis_name)
        rows = []
        for x in moved:  # row i: the chunk device i sent here
            pieces = _pieces(_padded(to_bits(x), chunk), cuts[:-1], chunk, g)
            got = _in_layout(lax.all_to_all(pieces, axis_name, 0, 0), reverse_ties)
            rows.append(from_bits(got, x.dtype, x.weak_type))
        key, vals, lengths = rows[0], rows[1:], _in_layout(sizes, reverse_ties)
        while key.shape[0] > 1:  # merge rows 2i and 2i + 1, lengths adding
            la, lb = lengths[0::2], lengths[1::2]
            key, vals = merge_by_key_rows(key[0::2], key[1::2], la, lb, [v[0::2] for v in vals],
                                          [v[1::2] for v in vals], descending=descending,
                                          full_rows=False, op=op)
            lengths = la + lb
        return [_varying(x[0, :n], axis_name) for x in (key, *vals)]

    def placed_and_sorted(moved):
        got, layout = _exchange_moved(moved, cuts, axis_name, g, reverse_ties)
        ks, os_ = _merge_received(got[:1], got[1:], layout, descending=descending, op=op)
        return [_varying(x, axis_name) for x in (*ks, *os_)]

    out = lax.cond(fits, by_rows, placed_and_sorted, moved)
    return out[:1], out[1:]


def _received(sent: jax.Array, axis_name: AxisName) -> jax.Array:
    """(g,): the sizes of the pieces this device receives, from each sender (sent: this
    device's pieces' sizes, for each receiver)."""
    return lax.all_gather(sent, axis_name)[:, lax.axis_index(axis_name)]


def _exchange_chunk(n: int, g: int) -> int:
    """Elements a device pair's chunk of the exchange holds (EXCHANGE_CHUNK x n / g)."""
    return max(1, min(n, math.ceil(EXCHANGE_CHUNK * n / g)))


def _padded(b: jax.Array, chunk: int) -> jax.Array:
    """b with a chunk of zeros after it, so a chunk read from any start within b is not a
    clamped window."""
    return jnp.concatenate([b, jnp.zeros((chunk, *b.shape[1:]), b.dtype)])


def _pieces(padded: jax.Array, starts: jax.Array, chunk: int, g: int) -> jax.Array:
    """(g, chunk, ...): chunk elements of a _padded array from each of the g starts (the
    all_to_all's operand: row k goes to device k)."""
    return jnp.stack([lax.dynamic_slice_in_dim(padded, starts[k], chunk) for k in range(g)])


def _in_layout(x, reverse: bool):
    """x (indexed by sending device) in layout order: the senders' tie rank."""
    return x[::-1] if reverse else x


def _redistribute(okeys: list[jax.Array], moved: list[jax.Array], axis_name: AxisName, g: int,
                  reverse_ties: bool) -> tuple[list[jax.Array], jax.Array]:
    """Each device's share of the elements, this device's sorted by okeys (then the tie rank of
    the device, then position): the splitters, then the exchange of every array in moved, bit
    for bit. Returns the received arrays and their runs' sizes in layout order."""
    return _exchange_moved(moved, _splitters(okeys, axis_name, g, reverse_ties), axis_name, g,
                           reverse_ties)


def _splitters(okeys: list[jax.Array], axis_name: AxisName, g: int,
               reverse_ties: bool) -> jax.Array:
    """(g + 1,): where this device's sorted shard is cut for devices 0..g-1 (_cuts, ties by the
    device's tie rank)."""
    me = lax.axis_index(axis_name)
    tie = (g - 1 - me if reverse_ties else me).astype(np.int32)
    return _cuts(okeys, tie, axis_name, g)


def _exchange_moved(moved: list[jax.Array], cuts: jax.Array, axis_name: AxisName, g: int,
                    reverse_ties: bool) -> tuple[list[jax.Array], jax.Array]:
    """_exchange of every array in moved as bits, back in their dtypes."""
    got, layout = _exchange([to_bits(x) for x in moved], cuts, axis_name, g, reverse_ties)
    got = [from_bits(b, x.dtype, x.weak_type) for b, x in zip(got, moved, strict=True)]
    return got, layout


def merge_shards(a: jax.Array, b: jax.Array, *, axis_name: AxisName, descending: bool,
                 return_indices: bool, op: str) -> list[jax.Array]:
    """This device's share of the stable merge of the globally sorted a and b (1-d local shards
    of na and nb keys: device i holds a[i na:(i + 1) na] and b[i nb:(i + 1) nb]): the merge of
    its own shards, then the sort's splitters and exchange over (key, a before b), then the
    received elements of a and of b (each a sorted slice) partitioned apart and merged.
    Returns [merged] or [merged, positions in concatenate([a, b])]."""
    g = lax.psum(1, axis_name)
    na, nb = a.shape[0], b.shape[0]
    merged, idx = merge_rows(a, b, jnp.full((), na, position_dtype(na)),
                             jnp.full((), nb, position_dtype(nb)), (), descending=descending,
                             payload=Payload.INDEX, full_rows=True, op=op)
    from_b = idx >= na
    dtype = index_dtype(g * (na + nb))
    me = lax.axis_index(axis_name).astype(dtype)
    idx = idx.astype(dtype)
    positions = jnp.where(from_b, g * na + me * nb + (idx - na), me * na + idx)
    if g == 1:
        return [merged, positions] if return_indices else [merged]
    source = from_b.astype(np.uint8)
    moved = [merged, source, *([positions] if return_indices else [])]
    okeys = [*order_keys(merged, descending), source]
    got, _ = _redistribute(okeys, moved, axis_name, g, False)
    # The received runs' elements of a, in run (device) order, are a slice of the sorted a; so
    # are b's: a stable partition by source, then one merge of the two.
    is_b = got[1].astype(bool)
    n = is_b.shape[0]
    count_a = (n - jnp.sum(is_b, dtype=np.int32)).astype(np.int32)
    dest = jnp.where(is_b, count_a + jnp.cumsum(is_b, dtype=np.int32),
                     jnp.cumsum(~is_b, dtype=np.int32)) - 1
    part = [from_bits(jnp.zeros_like(to_bits(x)).at[dest].set(to_bits(x), unique_indices=True),
                      x.dtype, x.weak_type) for x in (got[0], *got[2:])]
    out, perm = merge_runs_rows(part[0], count_a, descending=descending,
                                return_indices=return_indices, op=op)
    return [out, _take(part[1], perm)] if return_indices else [out]


def global_positions(n: int, axis_name: AxisName) -> jax.Array:
    """The global positions of this device's shard of n elements along the sharded axis."""
    g = lax.psum(1, axis_name)
    dtype = index_dtype(g * n)
    me = lax.axis_index(axis_name).astype(dtype)
    return me * n + lax.iota(dtype, n)


def _positions_like(keys: jax.Array, ax: int, axis_name: AxisName) -> jax.Array:
    """The global positions along `ax` of this device's shard, in the keys' shape."""
    shape = [1] * keys.ndim
    shape[ax] = keys.shape[ax]
    pos = global_positions(keys.shape[ax], axis_name).reshape(shape)
    return jnp.broadcast_to(pos, keys.shape)


def on_rows(fn: Callable, arrays: list[jax.Array], ax: int) -> list[jax.Array]:
    """fn(1-d shards) on every row of arrays whose sorted axis is `ax`: every other dimension
    of arrays[0] (the keys) is a row, mapped by vmap; the dimensions the other arrays have past
    the keys' rank move with the elements."""
    moved = [jnp.moveaxis(x, ax, 0) for x in arrays]
    f = fn
    for _ in range(arrays[0].ndim - 1):
        f = jax.vmap(f, in_axes=1, out_axes=1)
    out = f(moved)
    return [jnp.moveaxis(x, 0, ax) for x in out]


# ---------------------------------------------------------------- entry from the public functions


def _mesh_axes_size(mesh, entry: AxisName) -> int:
    names = (entry,) if isinstance(entry, str) else tuple(entry)
    return math.prod(mesh.shape[name] for name in names)


def _split_sharding(x: jax.Array, ax: int):
    """(mesh, spec) when x's axis `ax` is split over mesh axes: read from x's type (explicit
    mesh axes, under jit or not) or, for a concrete array, from its NamedSharding; else None."""
    candidates = [getattr(jax.typeof(x), "sharding", None)]
    if isinstance(x, jax.Array) and not isinstance(x, jax.core.Tracer):
        candidates.append(x.sharding)
    for sharding in candidates:
        spec = getattr(sharding, "spec", None)  # (NamedSharding only)
        if spec is not None and len(spec) > ax and spec[ax] is not None:
            return sharding.mesh, spec
    return None


def _check_divisible(length: int, mesh, entry: AxisName, what: str, op: str) -> None:
    """The number of devices along mesh axes `entry` must divide `length` (jax places only
    even shards)."""
    g = _mesh_axes_size(mesh, entry)
    if length % g:
        raise ValueError(
            f"jax_mergepath.{op}: {what} ({length} elements) is split over mesh axes "
            f"{entry!r} of {g} devices; its length must be a multiple of {g}"
        )


def _check_axis_name(axis_name: AxisName, op: str) -> int:
    """The number of devices along axis_name, which must be bound (inside shard_map)."""
    names = (axis_name,) if isinstance(axis_name, str) else axis_name
    if not isinstance(names, tuple) or not names or not all(isinstance(a, str) for a in names):
        raise TypeError(
            f"jax_mergepath.{op}: axis_name must be a mesh axis name or a tuple of them, got "
            f"{axis_name!r}"
        )
    try:
        return lax.psum(1, axis_name)
    except NameError as e:
        raise ValueError(
            f"jax_mergepath.{op}: axis_name={axis_name!r} is not bound here: call it inside "
            f"jax.shard_map over a mesh with that axis, on the local shards"
        ) from e


def _placed(x: jax.Array, mesh, spec) -> jax.Array:
    """x laid out as `spec` over mesh (a no-op when it is)."""
    current = getattr(getattr(jax.typeof(x), "sharding", None), "spec", None)
    if current is not None and tuple(current) + (None,) * (x.ndim - len(current)) == tuple(spec):
        return x
    if isinstance(x, jax.core.Tracer):
        return jax.sharding.reshard(x, jax.sharding.NamedSharding(mesh, spec))
    return jax.device_put(x, jax.sharding.NamedSharding(mesh, spec))


def sort_split_axis(
    keys: list[jax.Array],
    others: list[jax.Array],
    ax: int,
    axis_name: AxisName | None,
    *,
    descending: bool,
    reverse_ties: bool,
    positions: bool,
    op: str,
) -> list[jax.Array] | None:
    """The sort of keys (of one shape, lexicographic) along axis `ax`, moving others (the keys'
    shape, then any trailing dimensions), when that axis is split over devices: named by
    axis_name (inside shard_map, on local shards) or read from the keys' sharding. Returns
    [*keys, *others] sorted (then the global positions when `positions`), sharded as the keys;
    None when the axis is not split (the single-device way applies)."""
    if axis_name is not None:
        _check_axis_name(axis_name, op)
        return _sort_local_shards(keys, others, ax, axis_name, descending=descending,
                                  reverse_ties=reverse_ties, positions=positions, op=op)
    found = _split_sharding(keys[0], ax)
    if found is None:
        return None
    mesh, spec = found
    entry = spec[ax]
    _check_divisible(keys[0].shape[ax], mesh, entry, "the sorted axis", op)
    key_spec = _pad_spec(spec, keys[0].ndim)
    specs = [_pad_spec(key_spec, x.ndim) for x in [*keys, *others]]
    arrays = [_placed(x, mesh, s) for x, s in zip([*keys, *others], specs, strict=True)]
    out_specs = specs + ([key_spec] if positions else [])

    mapped = _mapped_sort(mesh, tuple(specs), tuple(out_specs), len(keys), ax, entry,
                          descending, reverse_ties, positions, op)
    return list(mapped(*arrays))


@functools.lru_cache(maxsize=256)
def _mapped_sort(mesh, specs, out_specs, nk, ax, entry, descending, reverse_ties, positions, op):
    """The jitted shard_map of a sort over mesh: one compile per layout and call (eager calls
    reuse it)."""
    def local(*shards):
        return _sort_local_shards(list(shards[:nk]), list(shards[nk:]), ax, entry,
                                  descending=descending, reverse_ties=reverse_ties,
                                  positions=positions, op=op)

    return jax.jit(jax.shard_map(local, mesh=mesh, in_specs=specs, out_specs=list(out_specs)))


def _sort_local_shards(keys, others, ax, axis_name, *, descending, reverse_ties, positions, op):
    nk = len(keys)
    arrays = [*keys, *others]
    if positions:
        arrays.append(_positions_like(keys[0], ax, axis_name))

    def rows(shards):
        k, o = sort_shards(shards[:nk], shards[nk:], axis_name=axis_name,
                           descending=descending, reverse_ties=reverse_ties, op=op)
        return [*k, *o]

    def run(arrays):
        return on_rows(rows, list(arrays), ax)

    if not any(jnp.issubdtype(x.dtype, jnp.inexact) for x in arrays):
        return run(arrays)
    return _with_vjp(run, arrays, ax, axis_name, op)


def _with_vjp(run: Callable, arrays: list[jax.Array], ax: int, axis_name: AxisName, op: str):
    """run(arrays) (a sort along ax moving every array with the keys, arrays[0]) with reverse-mode
    derivatives: the forward pass also moves each element's global position; the backward pass
    sorts the cotangents by those positions, which sends each back to its element's device and
    place."""
    source = _positions_like(arrays[0], ax, axis_name)

    def back(perm, cts):
        def rows(shards):
            _, o = sort_shards([shards[0]], shards[1:], axis_name=axis_name, descending=False,
                               reverse_ties=False, op=op)
            return o
        return on_rows(rows, [perm, *cts], ax)

    def varying(out):  # (the kernels' outputs are typed invariant; they vary)
        return [_varying(x, axis_name) for x in out]

    @jax.custom_vjp
    def sort(arrays, source):
        del source
        return tuple(varying(run(arrays)))

    def fwd(arrays, source):
        out = varying(run([*arrays, source]))
        return tuple(out[:-1]), out[-1]

    def bwd(perm, cts):
        inexact = [i for i, x in enumerate(arrays) if jnp.issubdtype(x.dtype, jnp.inexact)]
        moved = back(perm, [cts[i] for i in inexact])
        out = [np.zeros(x.shape, jax.dtypes.float0) for x in arrays]
        for i, ct in zip(inexact, moved, strict=True):
            out[i] = _varying(ct, axis_name)
        return tuple(out), np.zeros(source.shape, jax.dtypes.float0)

    sort.defvjp(fwd, bwd)
    return list(sort(tuple(arrays), source))


def _pad_spec(spec, ndim: int):
    return jax.sharding.PartitionSpec(*spec, *([None] * (ndim - len(spec))))


def merge_split_axis(a: jax.Array, b: jax.Array, ax: int, axis_name: AxisName | None, *,
                     descending: bool, return_indices: bool, op: str) -> list[jax.Array] | None:
    """The merge of a and b along `ax` when that axis is split over devices (named by
    axis_name inside shard_map, or read from a's or b's sharding; the other array is laid out
    as the first): [merged] or [merged, positions], the output split as a; None otherwise."""
    if axis_name is not None:
        _check_axis_name(axis_name, op)
        return _merge_local_shards(a, b, ax, axis_name, descending=descending,
                                   return_indices=return_indices, op=op)
    found = _split_sharding(a, ax) or _split_sharding(b, ax)
    if found is None:
        return None
    mesh, spec = found
    spec = _pad_spec(spec, a.ndim)
    for x, arg in ((a, "a"), (b, "b")):
        _check_divisible(x.shape[ax], mesh, spec[ax], f"{arg}'s merged axis", op)
    a, b = _placed(a, mesh, spec), _placed(b, mesh, spec)
    return list(_mapped_merge(mesh, spec, ax, descending, return_indices, op)(a, b))


@functools.lru_cache(maxsize=256)
def _mapped_merge(mesh, spec, ax, descending, return_indices, op):
    def local(a, b):
        return _merge_local_shards(a, b, ax, spec[ax], descending=descending,
                                   return_indices=return_indices, op=op)

    out_specs = [spec, spec] if return_indices else [spec]
    return jax.jit(jax.shard_map(local, mesh=mesh, in_specs=(spec, spec), out_specs=out_specs))


def _merge_local_shards(a, b, ax, axis_name, *, descending, return_indices, op):
    """merge_shards on every row (on_rows), with reverse-mode derivatives for float keys: the
    forward pass keeps each output's position in concatenate([a, b]); the backward pass sorts
    the cotangents by the device and place of that position in a's or b's shards."""
    def run(a, b, indices):
        return on_rows(lambda s: merge_shards(s[0], s[1], axis_name=axis_name,
                                              descending=descending, return_indices=indices,
                                              op=op), [a, b], ax)

    if not jnp.issubdtype(a.dtype, jnp.inexact):
        return run(a, b, return_indices)
    g = lax.psum(1, axis_name)
    na, nb = a.shape[ax], b.shape[ax]

    def varying(out):
        return [_varying(x, axis_name) for x in out]

    @jax.custom_vjp
    def merged(a, b):
        return tuple(varying(run(a, b, return_indices)))

    def fwd(a, b):
        out = varying(run(a, b, True))
        return tuple(out if return_indices else out[:1]), out[1]

    def bwd(positions, cts):
        from_b = positions >= g * na
        rest = positions - g * na
        device = jnp.where(from_b, rest // nb, positions // na)
        slot = jnp.where(from_b, na + rest % nb, positions % na)
        home = device * (na + nb) + slot  # where the element's cotangent goes
        back = on_rows(lambda s: sort_shards([s[0]], [s[1]], axis_name=axis_name,
                                             descending=False, reverse_ties=False, op=op)[1],
                       [home, cts[0]], ax)[0]
        back = jnp.moveaxis(back, ax, -1)
        ct_a = _varying(jnp.moveaxis(back[..., :na], -1, ax), axis_name)
        ct_b = _varying(jnp.moveaxis(back[..., na:], -1, ax), axis_name)
        return ct_a, ct_b

    merged.defvjp(fwd, bwd)
    return list(merged(a, b))


def searchsorted_split_axis(a: jax.Array, v: jax.Array, axis_name: AxisName | None, *,
                            right: bool, op: str) -> jax.Array | None:
    """searchsorted_rows(a, v) (counts of a row's elements before each query) when a's
    last axis is split over devices, summed over the devices: a is sorted as a whole, so a
    query's global count is the sum of its counts in the shards. a: (*batch, n), v: (*batch, q);
    with axis_name (inside shard_map) v holds this device's queries; they are gathered along the
    axis, counted in this shard, and the sums scattered back. Read from a's sharding, the
    queries are replicated over the axis and the counts summed (psum). None when a's axis is not
    split."""
    if axis_name is not None:
        g = _check_axis_name(axis_name, op)
        dtype = search_index_dtype(g * a.shape[-1])
        every = lax.all_gather(v, axis_name)  # (g, *batch, q)
        queries = jnp.moveaxis(every, 0, -2).reshape(*v.shape[:-1], g * v.shape[-1])
        counts = searchsorted_rows(a, queries, right=right, sorted_v=False, op=op)
        counts = counts.astype(dtype).reshape(*v.shape[:-1], g, v.shape[-1])
        return lax.psum_scatter(jnp.moveaxis(counts, -2, 0), axis_name, scatter_dimension=0)
    found = _split_sharding(a, a.ndim - 1)
    if found is None:
        return None
    mesh, spec = found
    spec = _pad_spec(spec, a.ndim)
    _check_divisible(a.shape[-1], mesh, spec[-1], "a's sorted axis", op)
    v_spec = jax.sharding.PartitionSpec(*spec[:-1], None)
    a, v = _placed(a, mesh, spec), _placed(v, mesh, v_spec)
    dtype = search_index_dtype(a.shape[-1])
    return _mapped_search(mesh, spec, v_spec, np.dtype(dtype), right, op)(a, v)


@functools.lru_cache(maxsize=256)
def _mapped_search(mesh, spec, v_spec, dtype, right, op):
    def local(a, v):
        counts = searchsorted_rows(a, v, right=right, sorted_v=False, op=op)
        return lax.psum(counts.astype(dtype), spec[-1])

    return jax.jit(jax.shard_map(local, mesh=mesh, in_specs=(spec, v_spec), out_specs=v_spec))
