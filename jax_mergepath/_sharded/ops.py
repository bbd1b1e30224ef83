"""The calls the sharded layer runs, as data: an Op names a public function's call (its kind and
static arguments); `plain` is its single-device program, `layout` says how its arrays' dimensions
go together (which one is split over devices with which), `feeds` which inputs each output
permutes (for derivatives).

Contract: arrays have the sorted / merged / searched axis LAST (values may have trailing
dimensions after it), every leading dimension a row; `plain(op, arrays)` is exactly what the
public function runs on one device (the row-level functions of _rows.py; no precondition check),
so a call that the sharded layer wraps compiles to the same program where nothing is split. Ops
are hashable (a primitive's parameter, a cache key). `positions=True` appends each output
element's source, its position in the inputs (along the axis; for merges in
concatenate([a, b]), for merge_runs in x): argsort's and merge's indices, and the derivatives'
residual. Kinds "move" and "back" (with `base`) are a permutation's tangent and its transpose.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from jax_mergepath._bits import concatenate_bits, gather_along, reverse_bits
from jax_mergepath._dispatch import (
    co_rank_rows,
    fusable_values,
    is_sorted_rows,
    lexsort_rows,
    merge_by_key_rows,
    merge_rows,
    merge_runs_rows,
    searchsorted_rows,
    sort_rows,
)
from jax_mergepath._dtypes import index_dtype
from jax_mergepath._primitives import Payload
from jax_mergepath._select_dispatch import top_k_rows

SORTS = ("sort", "argsort", "sort_by_key", "lax_sort")
SELECTIONS = ("top_k",)  # outputs of k along the axis, replicated over its devices
MERGES = ("merge", "merge_by_key", "merge_runs")


@dataclasses.dataclass(frozen=True)
class Op:
    """One sharded call: kind (a public function's, or "move" / "back" of `base`), name (the
    public function, for messages) and its static arguments."""

    kind: str
    name: str
    descending: bool = False
    reverse_ties: bool = False  # sort: ties in reverse input order (jnp.sort's descending)
    nk: int = 1  # sort kinds: the keys among the operands
    positions: bool = False
    right: bool = False
    sorted_v: bool = False
    k: int = 0  # top_k: the selected count
    largest: bool = True  # top_k: largest first
    base: Op | None = None  # move / back: the permutation
    arity: int = 0  # move / back: the base call's operands
    diff: tuple[int, ...] = ()  # move / back: the base's outputs with tangents
    present: tuple[bool, ...] = ()  # move / back: which slots have tangents (empty: all)
    # vmap levels (outermost first): which operands carry each as a leading dimension
    vmapped: tuple[tuple[bool, ...], ...] = ()

    def replace(self, **changes) -> Op:
        return dataclasses.replace(self, **changes)

    def slots(self) -> list[int]:
        """move / back: the base's inputs whose tangents the diff outputs take, in order."""
        fed = feeds(self.base, self.arity)
        return [i for j in self.diff for i in fed[j]]

    def ins(self) -> list[int]:
        """move / back: the slots whose tangents are given (the linear operands)."""
        slots = self.slots()
        return [i for i, p in zip(slots, self.present or (True,) * len(slots), strict=True) if p]

    def filled(self, base: list[jax.Array], given: list[jax.Array]) -> list[jax.Array]:
        """move: every slot's tangent, zeros where none is given."""
        it = iter(given)
        slots = self.slots()
        return [next(it) if p else jnp.zeros_like(base[i])
                for i, p in zip(slots, self.present or (True,) * len(slots), strict=True)]

    def kept(self, cts: list[jax.Array]) -> list[jax.Array]:
        """back: the cotangents of the given slots alone (cts: every slot's)."""
        present = self.present or (True,) * len(cts)
        return [ct for ct, p in zip(cts, present, strict=True) if p]


@dataclasses.dataclass(frozen=True)
class Dims:
    """An array's dimensions after its rows: the factor of its element axis (None: none; "n"
    a sort's or the searched axis, "a" / "b" a merge's inputs, "o" its output, "q" queries) and
    the number of trailing dimensions."""

    elem: str | None
    trailing: int = 0


SPLIT_FACTORS = frozenset("nab")  # element axes a split is read from
FOLLOWERS = frozenset("o")  # element axes split as they are


def layout(op: Op, ndims: list[int], nout: int) -> tuple[list[Dims], list[Dims]]:
    """The Dims of each operand (ndims: their ranks) and of each of the nout outputs."""
    kind = op.kind
    if kind in ("move", "back"):
        n = op.arity
        base_in, base_out = layout(op.base.replace(positions=True), ndims[:n],
                                   len(feeds(op.base, n)) + 1)
        tangents = [base_in[i] for i in op.ins()]
        cotangents = [base_out[j] for j in op.diff]
        if kind == "move":
            return [*base_in, base_out[-1], *tangents], cotangents
        return [*base_in, base_out[-1], *cotangents], tangents
    if kind in SORTS:
        keys_nd = ndims[0]
        ins = [Dims("n", nd - keys_nd) for nd in ndims]
        outs = [Dims("n", d.trailing) for d in ins] if kind != "argsort" else []
        return ins, (outs + [Dims("n")] * (nout - len(outs)))[:nout]
    if kind in ("merge", "merge_by_key"):
        keys_nd = ndims[0]
        nv = (len(ndims) - 2) // 2
        ins = [Dims("a"), Dims("b")]
        ins += [Dims("a", nd - keys_nd) for nd in ndims[2:2 + nv]]
        ins += [Dims("b", nd - keys_nd) for nd in ndims[2 + nv:]]
        outs = [Dims("o")] + [Dims("o", d.trailing) for d in ins[2:2 + nv]]
        return ins, (outs + [Dims("o")] * (nout - len(outs)))[:nout]
    if kind == "merge_runs":
        return [Dims("n"), Dims(None)], [Dims("n")] * nout
    if kind == "co_rank":
        return [Dims("q"), Dims("a"), Dims("b")], [Dims("q")]
    if kind == "is_sorted":
        return [Dims("n")], [Dims(None)]
    if kind == "searchsorted":
        return [Dims("n"), Dims("q")], [Dims("q")]
    if kind in SELECTIONS:  # ("k": the selected axis, never split)
        keys_nd = ndims[0]
        ins = [Dims("n", nd - keys_nd) for nd in ndims]
        outs = [Dims("k"), Dims("k")] + [Dims("k", d.trailing) for d in ins[1:]]
        return ins, outs[:nout]
    raise ValueError(kind)


def feeds(op: Op, narrays: int) -> list[tuple[int, ...]]:
    """For each output holding input elements, the inputs it takes them from (a merge's output
    from its a-side and b-side input)."""
    if op.kind in ("sort", "sort_by_key", "lax_sort"):
        return [(i,) for i in range(narrays)]
    if op.kind == "merge":
        return [(0, 1)]
    if op.kind == "merge_by_key":
        nv = (narrays - 2) // 2
        return [(0, 1)] + [(2 + i, 2 + nv + i) for i in range(nv)]
    if op.kind == "merge_runs":
        return [(0,)]
    return []


# ---------------------------------------------------------------- single-device programs


def _sorted_moving(keys: list[jax.Array], others: list[jax.Array], op: Op):
    """keys sorted (lexicographic), others moved with them, and the sort's positions."""
    ax = keys[0].ndim - 1
    d = keys[0].shape[-1]
    if op.reverse_ties:  # ties in reverse input order: a stable sort of the reversed input
        keys = [reverse_bits(k, ax) for k in keys]
        others = [reverse_bits(x, ax) for x in others]
    if len(keys) == 1:
        k, idx = sort_rows(keys[0], (), descending=op.descending, payload=Payload.INDEX,
                           op=op.name)
        ks = [k]
    else:
        iota = jax.lax.broadcasted_iota(index_dtype(d), keys[0].shape, ax)
        *ks, idx = lexsort_rows(keys, [iota], op.name)
    moved = [gather_along(x, idx, ax) for x in others]
    if op.reverse_ties:
        idx = d - 1 - idx
    return ks, moved, idx


def _plain_sort(op: Op, arrays: list[jax.Array]) -> list[jax.Array]:
    keys, others = arrays[: op.nk], arrays[op.nk:]
    x = keys[0]
    if op.kind == "argsort":
        return [sort_rows(x, (), descending=op.descending, payload=Payload.INDEX, op=op.name,
                          wrap_positions=True, keys_needed=False)[1]]
    if op.positions:
        ks, moved, idx = _sorted_moving(keys, others, op)
        return [*ks, *moved, idx]
    if op.kind == "sort":
        return [sort_rows(x, (), descending=op.descending, payload=Payload.NONE, op=op.name,
                          reverse_ties=True)[0]]
    if op.kind == "lax_sort":
        return lexsort_rows(keys, others, op.name)
    if fusable_values(others, x.shape):  # sort_by_key
        k, v = sort_rows(x, (others[0],), descending=op.descending, payload=Payload.VALUE,
                         op=op.name)
        return [k, v]
    k, idx = sort_rows(x, (), descending=op.descending, payload=Payload.INDEX, op=op.name)
    return [k, *(gather_along(leaf, idx, x.ndim - 1) for leaf in others)]


def _plain_merge(op: Op, arrays: list[jax.Array]) -> list[jax.Array]:
    if op.kind == "merge_runs":
        x, split = arrays
        keys, idx = merge_runs_rows(x, split, descending=op.descending,
                                    return_indices=op.positions, op=op.name)
        return [keys, idx] if op.positions else [keys]
    a, b, *values = arrays
    nv = len(values) // 2
    full = (None, None)  # (whole rows: merge_rows reads no lengths)
    kw = dict(descending=op.descending, full_rows=True, op=op.name)
    if op.kind == "merge_by_key" and not op.positions:
        keys, moved = merge_by_key_rows(a, b, *full, values[:nv], values[nv:], **kw)
        return [keys, *moved]
    if not nv and not op.positions:
        return [merge_rows(a, b, *full, (), payload=Payload.NONE, **kw)[0]]
    keys, idx = merge_rows(a, b, *full, (), payload=Payload.INDEX, **kw)
    ax = a.ndim - 1
    moved = [gather_along(concatenate_bits((x, y), ax), idx, ax)
             for x, y in zip(values[:nv], values[nv:], strict=True)]
    return [keys, *moved, *([idx] if op.positions else [])]


def plain(op: Op, arrays: list[jax.Array]) -> list[jax.Array]:
    """The single-device program of op (module docstring)."""
    if op.kind == "move":
        return plain_move(op, arrays)
    if op.kind == "back":
        return plain_back(op, arrays)
    if op.kind in SORTS:
        return _plain_sort(op, arrays)
    if op.kind in MERGES:
        return _plain_merge(op, arrays)
    if op.kind == "co_rank":
        k, a, b = arrays
        return [co_rank_rows(k, a, b, descending=op.descending, op=op.name)]
    if op.kind == "is_sorted":
        return [is_sorted_rows(arrays[0], descending=op.descending)]
    if op.kind == "searchsorted":
        a, v = arrays
        return [searchsorted_rows(a, v, right=op.right, sorted_v=op.sorted_v, op=op.name)]
    if op.kind == "top_k":
        x, *leaves = arrays
        values, idx = top_k_rows(x, op.k, largest=op.largest)
        return [values, idx, *(gather_along(leaf, idx, x.ndim - 1) for leaf in leaves)]
    raise ValueError(op.kind)


def gather_tangent(t: list[jax.Array], source: jax.Array) -> jax.Array:
    """Tangents of the inputs (a merge's two sides concatenated) at source, along the axis, as
    jnp.sort's derivative takes them (jnp.take_along_axis: linear, transposable)."""
    ax = source.ndim - 1
    src = t[0] if len(t) == 1 else jnp.concatenate(t, axis=ax)
    idx = jnp.expand_dims(source, tuple(range(source.ndim, src.ndim)))
    return jnp.take_along_axis(src, jnp.broadcast_to(idx, (*source.shape, *src.shape[ax + 1:])),
                               axis=ax)


def plain_move(op: Op, arrays: list[jax.Array]) -> list[jax.Array]:
    """The tangents of op.base's diff outputs: the inputs' tangents at the source positions."""
    n, fed = op.arity, feeds(op.base, op.arity)
    source, tans = arrays[n], op.filled(arrays[:n], arrays[n + 1:])
    out, at = [], 0
    for j in op.diff:
        out.append(gather_tangent(tans[at: at + len(fed[j])], source))
        at += len(fed[j])
    return out


def plain_back(op: Op, arrays: list[jax.Array]) -> list[jax.Array]:
    """The transpose of plain_move: each cotangent scattered back to its source position."""
    n, fed = op.arity, feeds(op.base, op.arity)
    base, source, cts = arrays[:n], arrays[n], arrays[n + 1:]
    out = []
    for j, ct in zip(op.diff, cts, strict=True):
        like = [base[i] for i in fed[j]]
        avals = [jax.ShapeDtypeStruct(x.shape, ct.dtype) for x in like]
        out.extend(jax.linear_transpose(lambda *t: gather_tangent(list(t), source), *avals)(ct))
    return op.kept(out)
