"""The exchange of a sharded sort or merge: pieces of data-dependent sizes between every pair of
devices, with static-shape collectives.

Contract: a Stream is one source array per moved array (bits, leading axis the elements), where
its piece for device k starts (send_at[k]) and how long it is (sent[k]), and where the piece from
device i lands in the destination buffer (recv_at[i], received[i] elements). `exchange` moves
the sort's pieces: the first chunk of every piece in one all_to_all of fixed chunks of
EXCHANGE_CHUNK x n / g elements (all of every piece on random keys), the rest of longer pieces
(skewed keys) by `ring_rounds`; EXCHANGE = "ragged" uses lax.ragged_all_to_all instead.
`ring_rounds` moves pieces one device shift s at a time, each shift in as many rounds as its
longest piece needs (none when every piece at that shift is empty), a round a ppermute of one
chunk to device me + s (s = 0: a copy in place), so each element crosses once and an exchange
whose pieces sit near the diagonal (a merge of like inputs) moves little more than them.
XLA:CPU has no ragged all-to-all, and on GPUs it measured slower than the chunks
(docs/performance.md "Sharded axis").
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jax_mergepath._bits import from_bits, to_bits
from jax_mergepath._sharded.layout import Axes, mesh_max, varying, varying_as

EXCHANGE_CHUNK = 1.04  # the sort exchange's chunk, in units of n / g elements (n keys a device)
EXCHANGE = "chunks"  # "chunks": an all_to_all of chunks, then ppermute rounds; "ragged":
#                     lax.ragged_all_to_all
# Shards of at least this many keys move the rest of long pieces (skewed keys) by ppermute rounds
# of one chunk a device shift; smaller ones by more rounds of the all_to_all (exchange).
RING_MIN_SHARD = 1 << 14


@dataclasses.dataclass(frozen=True)
class Stream:
    """Pieces of `arrays` (bits, leading axis the elements; padded by a chunk) for every device,
    and where every device's piece lands in the destination buffers (one per array)."""

    arrays: list[jax.Array]
    send_at: jax.Array  # (g,) where my piece for device k starts
    sent: jax.Array  # (g,) its length
    recv_at: jax.Array  # (g,) where the piece from device i lands
    received: jax.Array  # (g,) its length


def exchange_kind() -> str:
    """EXCHANGE, read at trace time (benchmarks set it)."""
    return EXCHANGE


def exchange_chunk(n: int, g: int) -> int:
    """Elements a device pair's chunk of the sort's exchange holds (EXCHANGE_CHUNK x n / g)."""
    return max(1, min(n, math.ceil(EXCHANGE_CHUNK * n / g)))


def padded(b: jax.Array, chunk: int) -> jax.Array:
    """b with a chunk of zeros after it, so a chunk read from any start within b is not a
    clamped window."""
    return jnp.concatenate([b, jnp.zeros((chunk, *b.shape[1:]), b.dtype)])


def pieces(src: jax.Array, starts: jax.Array, chunk: int, g: int) -> jax.Array:
    """(g, chunk, ...): chunk elements of a padded array from each of the g starts (the
    all_to_all's operand: row k goes to device k)."""
    return jnp.stack([lax.dynamic_slice_in_dim(src, starts[k], chunk) for k in range(g)])


def in_layout(x, reverse: bool):
    """x (indexed by sending device) in layout order: the senders' tie rank."""
    return x[::-1] if reverse else x


def received_sizes(sent: jax.Array, axes: Axes) -> jax.Array:
    """(g,): the sizes of the pieces this device receives, from each sender (sent: this
    device's pieces' sizes, for each receiver)."""
    return lax.all_gather(sent, axes.name)[:, axes.index()]


def buffer(like: jax.Array, length: int, chunk: int, axes: Axes) -> jax.Array:
    """A destination buffer of `length` elements (and a chunk of slack) shaped like `like`."""
    zeros = jnp.zeros((length + chunk, *like.shape[1:]), like.dtype)
    return varying_as(varying(zeros, axes.names), like)


def _place(out: jax.Array, piece: jax.Array, at, valid) -> jax.Array:
    """piece's first `valid` elements written to out[at:] (the rest of out kept)."""
    chunk = piece.shape[0]
    lane = jnp.arange(chunk, dtype=np.int32)
    keep = (lane < valid).reshape((chunk,) + (1,) * (out.ndim - 1))
    piece = jnp.where(keep, piece, lax.dynamic_slice_in_dim(out, at, chunk))
    return lax.dynamic_update_slice_in_dim(out, piece, at, 0)


def shift_rounds(stream: Stream, shift: int, axes: Axes, g: int, chunk: int) -> jax.Array:
    """The rounds of one chunk a device pair that the stream's pieces at a device shift need
    (the longest piece's; the same on every device of the mesh)."""
    to = (axes.index() + shift) % g
    return mesh_max((stream.sent[to].astype(np.int32) + chunk - 1) // chunk, axes)


def ring_rounds(streams: list[Stream], outs: list[jax.Array], axes: Axes, g: int, chunk: int,
                first: int, skip_own: bool = False) -> list[jax.Array]:
    """The streams' pieces from chunk `first` on into outs (the destination buffers, one per
    array of every stream), one device shift at a time (module docstring): shift 0 (this
    device's own piece, copied in place) unless skip_own, then shifts 1 .. g - 1, each stream
    in as many rounds of a ppermute of one chunk as its longest piece at that shift needs."""
    me = axes.index()
    for shift in range(1 if skip_own else 0, g):
        to, frm = (me + shift) % g, (me - shift) % g
        perm = [(i, (i + shift) % g) for i in range(g)]
        for stream in streams:
            rounds = shift_rounds(stream, shift, axes, g, chunk)

            def ring_round(r, outs, s=stream, to=to, frm=frm, shift=shift, perm=perm):
                new = []
                for src, out in zip(s.arrays, outs, strict=True):
                    piece = lax.dynamic_slice_in_dim(src, s.send_at[to] + r * chunk, chunk)
                    if shift:
                        piece = axes.permute(piece, perm)
                    new.append(_place(out, piece, s.recv_at[frm] + r * chunk,
                                      s.received[frm] - r * chunk))
                return new

            outs = lax.fori_loop(first, rounds, ring_round, outs)
    return outs


def _exchange_chunks(stream: Stream, outs: list[jax.Array], axes: Axes, g: int, reverse: bool,
                     n: int) -> list[jax.Array]:
    """The sort's exchange (module docstring): one all_to_all of every piece's first chunk,
    written whole in layout order (a chunk's tail past its piece is overwritten by the next
    piece's chunk); the rest for shards of at least RING_MIN_SHARD keys by ring_rounds, for
    smaller ones by more rounds of the all_to_all, each shipping g chunks (fewer programs to
    compile: g loops of ppermutes cost the CPU tests' quick run 67 -> 87 s)."""
    chunk = exchange_chunk(n, g)
    layout = range(g - 1, -1, -1) if reverse else range(g)  # recv_at ascending

    def all_to_all_round(r, outs, masked: bool):
        new = []
        for src, out in zip(stream.arrays, outs, strict=True):
            got = lax.all_to_all(pieces(src, stream.send_at + r * chunk, chunk, g), axes.name,
                                 0, 0)
            for i in layout:  # got[i]: device i's chunk for me
                at = stream.recv_at[i] + r * chunk
                out = (_place(out, got[i], at, stream.received[i] - r * chunk) if masked
                       else lax.dynamic_update_slice_in_dim(out, got[i], at, 0))
            new.append(out)
        return new

    outs = all_to_all_round(0, outs, masked=False)
    if n < RING_MIN_SHARD:
        rounds = mesh_max((jnp.max(stream.sent).astype(np.int32) + chunk - 1) // chunk, axes,
                          over=axes.names)
        outs = lax.fori_loop(1, rounds, lambda r, o: all_to_all_round(r, o, True), outs)
    else:
        outs = ring_rounds([stream], outs, axes, g, chunk, first=1)
    return [o[:n] for o in outs]


def _exchange_ragged(bits, send_at, recv_at, sent, received, axes: Axes):
    out_at = lax.all_to_all(recv_at, axes.name, 0, 0, tiled=True)  # where my pieces land
    return [
        lax.ragged_all_to_all(b, jnp.zeros_like(b), send_at, sent, out_at, received,
                              axis_name=axes.name)
        for b in bits
    ]


def exchange(moved: list[jax.Array], cuts: jax.Array, axes: Axes, g: int,
             reverse: bool) -> tuple[list[jax.Array], jax.Array]:
    """Piece k of this device's sorted shard ([cuts[k], cuts[k + 1])) of every array in moved
    to device k, bit for bit; each device lays its received pieces out by the senders' tie rank
    (reversed device order when `reverse`), so that a stable merge of them keeps the global tie
    order. Returns the received arrays and the pieces' sizes in layout order."""
    bits = [to_bits(x) for x in moved]
    n = bits[0].shape[0]
    sent = cuts[1:] - cuts[:-1]  # (g,)
    received = received_sizes(sent, axes)
    order = in_layout(received, reverse)  # the runs' sizes, in layout order
    at = jnp.cumsum(order) - order  # exclusive, in tie-rank order
    recv_at = in_layout(at, reverse).astype(np.int32)
    send_at = cuts[:-1]
    if EXCHANGE == "ragged":
        got = _exchange_ragged(bits, send_at, recv_at, sent, received, axes)
    else:
        chunk = exchange_chunk(n, g)
        stream = Stream([padded(b, chunk) for b in bits], send_at, sent, recv_at, received)
        got = _exchange_chunks(stream, [buffer(b, n, chunk, axes) for b in bits], axes, g,
                               reverse, n)
    out = [from_bits(b, x.dtype, x.weak_type) for b, x in zip(got, moved, strict=True)]
    return out, order
