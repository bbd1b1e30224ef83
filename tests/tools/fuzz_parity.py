"""Time-bounded randomized differential fuzz of every public jax_mergepath function.

Contract of this file (run by hand on a GPU machine; not a pytest module):

    python3 tests/tools/fuzz_parity.py --seconds 240 --seed 1 [--max-log2 22] [--cpu-only]
    python3 tests/tools/fuzz_parity.py --replay CASE_SEED [--max-log2 22] [--cpu-only]

Until --seconds run out, each case draws (from its own seed, CASE_SEED = seed * 10**6 + i) one
public function (merge, merge_by_key, merge_runs, co_rank, is_sorted, sort, argsort, sort_by_key,
lax_sort, searchsorted), a supported key dtype (docs/contract.md), a direction, an axis, leading
batch dims (also mapped by jax.vmap, nested, with random in_axes and unbatched operands), sizes
around the tiles of tuning/merge.h and tuning/sort.h (read from the native module) and
occasionally a large one (2^18..2^max_log2 elements; the quad passes need --max-log2 24 for 8-byte
elements (argsort of 4-byte keys, 8-byte keys) and 26 for 4-byte keys alone, the partition's thread
search 25), and a key pattern (random, few distinct, all equal, edge values: NaNs, +-0.0, +-inf,
subnormals, int min/max; sorted, reversed, skewed or disjoint merges). Checks:
- sorted (or unconstrained) inputs: the same jitted function on jax.devices("cpu")[0] and on the
  GPU gives bit-identical outputs (every leaf; dtype and shape too), and on a sample of cases
  (every case with --cpu-only or --replay) the CPU result equals a numpy reference built on stable
  argsorts of order keys (reference.py: NaN last, -0.0 == +0.0, subnormals ordered, stable ties);
- unsorted merge inputs (a precondition violation): on each device only that the output is a
  permutation of the inputs (indices a permutation that gathers the output; (key, value) pairs
  kept), never CPU == GPU.
A failing case prints one line (its description, the first differing index, a replay command).
The last line is `fuzz_parity: N cases, F failed, S seconds (device kind)`; exit status 1 if F > 0.
GPU memory stays modest: no preallocation, inputs of at most MAX_BYTES.
"""

# ruff: noqa: E402
from __future__ import annotations

import os

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import argparse
import math
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import jax
import numpy as np

jax.config.update("jax_enable_x64", True)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: reference, sort_checks
from reference import (
    KEY_DTYPES,
    assert_bits_equal,
    gather_values,
    index_dtype,
    np_argsort,
    random_keys,
    ref_jnp_sort,
    ref_merge,
    ref_sort,
    sort_segments,
    to_bits,
)
from sort_checks import (
    PATTERNS,
    assert_is_permutation,
    assert_leaf_bits_equal,
    assert_same_multiset,
    ref_lax_sort,
    ref_searchsorted,
    ref_sort_by_key,
    sort_input,
    sorted_queries,
)

import jax_mergepath as jmp
from jax_mergepath import _cpu

OPS: dict[str, float] = {  # function -> weight of its draw
    "merge": 3.0, "merge_by_key": 2.0, "merge_runs": 2.0, "co_rank": 1.0, "is_sorted": 1.0,
    "sort": 2.0, "argsort": 2.0, "sort_by_key": 2.0, "lax_sort": 1.5, "searchsorted": 1.5,
}  # fmt: skip
SMALL_LENS = (0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128,
              129, 255, 256, 257, 511, 512, 513, 1000, 1023, 1024, 1025)  # fmt: skip
BATCH_SIZES = (1, 2, 3, 5, 7)
ROW_COUNTS = (37, 300, 1000, 4097)  # many short rows: the rows and packed kernels
SMALL_CAP = 1 << 17  # elements of a small case's keys
LARGE_P = 0.06  # probability of a large case
MAX_BYTES = 1 << 29  # a large case's key (+ payload) bytes
REF_P = 0.5  # probability of checking the CPU result against the reference (GPU runs)
VALUE_DTYPES = [*KEY_DTYPES, np.dtype(np.complex64)]
MERGE_PATTERNS = ("random", "few", "equal", "special", "plain", "sparse", "disjoint", "above")
UNSORTED_PATTERNS = ("random", "few", "special", "swaps", "reverse")
SORT_PATTERNS = (*PATTERNS, "plain", "sparse")


# ----------------------------------------------------------------------------- tiles
# (tuning/merge.h, tuning/sort.h)

PAYLOAD_NONE, PAYLOAD_INDEX, PAYLOAD_VALUE, PAYLOAD_RANKS_B = 0, 1, 2, 4


@cache
def merge_menu(key_bytes: int, payload: int, value_bytes: int) -> tuple[int, ...]:
    """Merged lengths around a merge tile: the rows kernel's thread groups (items), its largest
    row (tile - items), one and two tiles, +-1."""
    threads, items, _ = _cpu.merge_shape_for(key_bytes, payload, value_bytes)
    t = threads * items
    sizes = {items - 1, items, items + 1, 2 * items + 1, t - items - 1, t - items, t - items + 1,
             t - 1, t, t + 1, 2 * t - 1, 2 * t + 1, 3 * t + 2}  # fmt: skip
    return tuple(sorted(s for s in sizes if s >= 0))


@cache
def sort_menu(key_bytes: int, payload_bytes: int) -> tuple[int, ...]:
    """Sorted lengths around the block-sort tile and its merge passes."""
    t = int(_cpu.sort_tile(key_bytes, payload_bytes))
    return (t - 1, t, t + 1, 2 * t - 1, 2 * t + 1, 3 * t, 4 * t + 1, 8 * t + 3)


# ----------------------------------------------------------------------------- the jitted call


@dataclass(frozen=True)
class Spec:
    """Everything static about a call (hashable: the jit cache key with the argument shapes)."""

    op: str
    params: tuple[tuple[str, Any], ...]
    tree: Any = None  # PyTreeDef of the value leaves (merge_by_key, sort_by_key)
    vmap: tuple[tuple[int | None, ...], ...] = ()  # in_axes of each vmap level, outermost first


def _core(spec: Spec, xs: Sequence[jax.Array]) -> Any:
    p = dict(spec.params)
    op = spec.op
    if op == "merge":
        rest = list(xs[2:])
        kw: dict[str, Any] = {}
        for name in ("a_length", "b_length"):
            if p[name] == "arg":
                kw[name] = rest.pop(0)
            elif p[name] is not None:
                kw[name] = p[name]
        return jmp.merge(
            xs[0], xs[1], axis=p["axis"], descending=p["desc"], return_indices=p["idx"], **kw
        )
    if op == "merge_by_key":
        nl = spec.tree.num_leaves
        av = jax.tree.unflatten(spec.tree, list(xs[2 : 2 + nl]))
        bv = jax.tree.unflatten(spec.tree, list(xs[2 + nl :]))
        return jmp.merge_by_key(xs[0], xs[1], av, bv, axis=p["axis"], descending=p["desc"])
    if op == "merge_runs":
        split = xs[1] if p["split"] == "arg" else p["split"]
        return jmp.merge_runs(
            xs[0], split, axis=p["axis"], descending=p["desc"], return_indices=p["idx"]
        )
    if op == "co_rank":
        return jmp.co_rank(xs[0], xs[1], xs[2], descending=p["desc"])
    if op == "is_sorted":
        return jmp.is_sorted(xs[0], axis=p["axis"], descending=p["desc"])
    if op == "sort":
        return jmp.sort(xs[0], axis=p["axis"], descending=p["desc"])
    if op == "argsort":
        return jmp.argsort(xs[0], axis=p["axis"], descending=p["desc"])
    if op == "sort_by_key":
        values = jax.tree.unflatten(spec.tree, list(xs[1:]))
        return jmp.sort_by_key(xs[0], values, axis=p["axis"], descending=p["desc"])
    if op == "lax_sort":
        operands = xs[0] if p["single"] else tuple(xs)
        return jmp.lax_sort(operands, dimension=p["axis"], num_keys=p["num_keys"])
    if op == "searchsorted":
        return jmp.searchsorted(xs[0], xs[1], p["side"], sorted_v=p["sorted_v"])
    raise ValueError(op)


def _apply(spec: Spec, *xs: jax.Array) -> Any:
    def fn(*ys: jax.Array) -> Any:
        return _core(spec, ys)

    for axes in reversed(spec.vmap):  # innermost level first
        fn = jax.vmap(fn, in_axes=axes)
    return fn(*xs)


_JIT = jax.jit(_apply, static_argnums=0)


def run_on(device: jax.Device, spec: Spec, args: Sequence[np.ndarray]) -> Any:
    xs = jax.device_put(list(args), device)
    with jax.default_device(device):
        out = _JIT(spec, *xs)
    return jax.tree.map(np.asarray, out)


# ----------------------------------------------------------------------------- references


def np_co_rank(k: np.ndarray, a: np.ndarray, b: np.ndarray, desc: bool) -> np.ndarray:
    m, n = a.shape[-1], b.shape[-1]
    perm = np_argsort(np.concatenate([a, b], axis=-1), -1, desc)
    from_a = np.cumsum(perm < m, axis=-1)
    counts = np.concatenate([np.zeros((*a.shape[:-1], 1), from_a.dtype), from_a], axis=-1)
    batch = a.shape[:-1]
    queries = math.prod(k.shape[len(batch) :])
    kk = np.clip(k.astype(np.int64), 0, m + n).reshape(*batch, queries)
    return np.take_along_axis(counts, kk, -1).reshape(k.shape).astype(index_dtype())


def np_is_sorted(x: np.ndarray, axis: int, desc: bool) -> np.ndarray:
    ax = axis % x.ndim
    iota = np.arange(x.shape[ax]).reshape([-1 if i == ax else 1 for i in range(x.ndim)])
    return np.all(np_argsort(x, ax, desc) == iota, axis=ax)


# ----------------------------------------------------------------------------- checks


def assert_tree_equal(got: Any, want: Any, what: str) -> None:
    gs, ws = jax.tree.structure(got), jax.tree.structure(want)
    assert gs == ws, f"{what}: tree {gs} != {ws}"
    for i, (g, w) in enumerate(zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True)):
        assert_leaf_bits_equal(g, w, f"{what} leaf {i}")


def check_indices(out: np.ndarray, idx: np.ndarray, src: np.ndarray, axis: int, what: str) -> None:
    """idx: jnp's index dtype, a permutation of every row's positions in src, gathering out
    from src."""
    assert idx.dtype == index_dtype(), f"{what}: indices dtype {idx.dtype}"
    assert idx.shape == src.shape, f"{what}: indices shape {idx.shape} != {src.shape}"
    assert_is_permutation(idx, axis, f"{what} indices")
    assert_bits_equal(out, np.take_along_axis(src, idx.astype(np.int64), axis), f"{what} gather")


def pair_records(keys: np.ndarray, leaf: np.ndarray, axis: int) -> np.ndarray:
    """The sorted (row, key bits, value bits...) records of every element: the multiset of
    (key, value) pairs of each row (leaf shaped keys.shape + trailing dims)."""
    ax = axis % keys.ndim
    d = keys.shape[ax]
    if keys.size == 0:
        return np.zeros((0,), np.uint64)
    k = np.moveaxis(to_bits(keys), ax, -1).reshape(-1, d).astype(np.uint64)
    v = np.moveaxis(to_bits(leaf), ax, keys.ndim - 1).reshape(k.shape[0], d, -1)
    rows = np.broadcast_to(np.arange(k.shape[0], dtype=np.uint64)[:, None], k.shape)
    cols = [
        rows.ravel(),
        k.ravel(),
        *(v[:, :, j].ravel().astype(np.uint64) for j in range(v.shape[2])),
    ]
    order = np.lexsort(cols[::-1])
    return np.stack([c[order] for c in cols])


# ----------------------------------------------------------------------------- drawing cases


class Draw:
    """The random choices of one case, from its seed only."""

    def __init__(self, seed: int, max_log2: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.max_log2 = max_log2
        self.large = max_log2 >= 18 and self.coin(LARGE_P)

    def coin(self, p: float = 0.5) -> bool:
        return bool(self.rng.random() < p)

    def choice(self, seq: Sequence[Any]) -> Any:
        return seq[int(self.rng.integers(len(seq)))]

    def between(self, lo: int, hi: int) -> int:
        """An int in [lo, hi]."""
        return int(self.rng.integers(lo, hi + 1))

    def dtype(self) -> np.dtype:
        return np.dtype(self.choice(KEY_DTYPES))

    def length(self, menu: Sequence[int]) -> int:
        r = self.rng.random()
        if r < 0.4:
            return int(self.choice(SMALL_LENS))
        if r < 0.85:
            return int(self.choice(menu))
        return 2 ** self.between(5, 16) + self.between(-1, 1)

    def large_total(self, element_bytes: int) -> int:
        k = self.between(18, self.max_log2)
        while k > 10 and (element_bytes << k) > MAX_BYTES:
            k -= 1
        return max(1, (1 << k) + int(self.choice((0, 0, 1, -1, 7, -3))))

    def batch(self, n: int, lead_only: bool = False) -> tuple[list[int], int, int]:
        """(batch dims, the axis position among them, the axis length): rows of n elements
        within SMALL_CAP in all, or a large case's n elements cut into a few rows (lead_only:
        the axis is last)."""
        if self.large:
            rows = int(self.choice((1, 1, 1, 2, 3, 64, 1024)))
            dims = [rows] if rows > 1 else []
            n = max(1, n // rows)
        else:
            dims = [
                0 if self.coin(0.03) else int(self.choice(BATCH_SIZES))
                for _ in range(int(self.rng.choice(4, p=[0.35, 0.35, 0.2, 0.1])))
            ]
            if n <= 1024 and self.coin(0.3):
                dims.insert(self.between(0, len(dims)), int(self.choice(ROW_COUNTS)))
            cap = max(1, SMALL_CAP // max(n, 1))
            while math.prod(dims) > cap:
                i = int(np.argmax(dims))
                dims[i] = max(1, dims[i] // 2)
        pos = len(dims) if lead_only else self.between(0, len(dims))
        return dims, pos, n

    def split(self, total: int) -> tuple[int, str]:
        kinds = ("half", "third", "random", "skew_a", "skew_b", "empty_a", "empty_b")
        kind = str(self.rng.choice(kinds, p=[0.2, 0.15, 0.25, 0.15, 0.15, 0.05, 0.05]))
        m = {
            "half": total // 2,
            "third": total // 3,
            "random": self.between(0, total),
            "skew_a": total - min(total, self.between(1, 3)),
            "skew_b": min(total, self.between(1, 3)),
            "empty_a": 0,
            "empty_b": total,
        }[kind]
        return m, kind

    def lengths_arg(self, hi: int, shape: Sequence[int]) -> np.ndarray:
        """Per-row lengths in [-2, hi + 3] (out-of-range values are clamped by the API)."""
        dtype = self.choice((np.int32, np.int32, np.int64))
        return np.asarray(self.rng.integers(-2, hi + 4, size=tuple(shape)), dtype)

    def values(self, shape: Sequence[int], dtype: Any = None) -> np.ndarray:
        dtype = np.dtype(self.choice(VALUE_DTYPES) if dtype is None else dtype)
        shape = tuple(shape)
        if dtype.kind == "c":
            re, im = self.rng.standard_normal(shape), self.rng.standard_normal(shape)
            return (re + 1j * im).astype(dtype)
        return random_keys(self.rng, dtype, shape, self.choice(("random", "special")))

    def tree(self, shape: Sequence[int]) -> Any:
        """A pytree of values for keys of shape: one leaf shaped like the keys (it may travel in
        the kernel), with trailing dims, or a dict / tuple of several."""
        shape = tuple(shape)
        kind = self.choice(("leaf", "leaf", "trailing", "dict", "tuple"))
        if kind == "leaf":
            return self.values(shape)
        if kind == "trailing":
            return self.values(shape + self.choice(((3,), (2, 2), (1,))))
        if kind == "tuple":
            return (self.values(shape), self.values(shape))
        return {
            "pos": self.values(shape + (3,)),
            "id": self.values(shape),
            "flag": self.values(shape),
        }


def _shape(dims: Sequence[int], pos: int, n: int) -> tuple[int, ...]:
    return (*dims[:pos], n, *dims[pos:])


@dataclass
class Built:
    """A drawn call before vmap: logical arguments sharing `lead` leading batch dims."""

    op: str
    params: dict[str, Any]
    arrays: list[np.ndarray]
    groups: list[int]  # arguments a vmap level batches (or broadcasts) together
    lead: int
    ref: Callable[[list[np.ndarray], dict[str, Any]], Any]
    perm: Callable[[Any, list[np.ndarray], dict[str, Any]], None] | None = None
    tree: Any = None
    info: list[str] = field(default_factory=list)


def _payload_of(tree_leaves: list[np.ndarray], keys_shape: tuple[int, ...]) -> tuple[int, int]:
    """(payload kind, value bytes) the sort / merge kernel carries for these values."""
    if len(tree_leaves) == 1 and tree_leaves[0].shape == keys_shape:
        vb = tree_leaves[0].dtype.itemsize
        if vb <= 8:
            return PAYLOAD_VALUE, vb
    return PAYLOAD_INDEX, 0


def build_merge(d: Draw, by_key: bool) -> Built:
    dtype, desc = d.dtype(), d.coin()
    kb = dtype.itemsize
    unsorted = d.coin(0.15)
    idx = not by_key and d.coin(0.6)
    payload, vb = (PAYLOAD_INDEX if idx else PAYLOAD_NONE), 0
    if by_key and d.coin(0.5):
        payload, vb = PAYLOAD_VALUE, int(d.choice((1, 2, 4, 8)))
    elif by_key:
        payload = PAYLOAD_INDEX
    total = (
        d.large_total(kb + max(vb, 4 if payload else 0))
        if d.large
        else d.length(merge_menu(kb, payload, vb))
    )
    dims, pos, total = d.batch(total)
    m, split_kind = d.split(total)
    n = total - m
    batch = tuple(dims)
    a_shape, b_shape = _shape(dims, pos, m), _shape(dims, pos, n)
    params: dict[str, Any] = {
        "axis": pos,
        "desc": desc,
        "idx": idx,
        "a_length": None,
        "b_length": None,
    }
    arrays: list[np.ndarray] = []
    groups = [0, 1]
    lens: list[Any] = [None, None]
    if not by_key and d.coin(0.35):
        for side, (name, hi) in enumerate((("a_length", m), ("b_length", n))):
            how = d.choice((None, "int", "arg", "arg"))
            if how == "int":
                lens[side] = params[name] = d.between(-2, hi + 3)
            elif how == "arg":
                params[name] = "arg"
                lens[side] = d.lengths_arg(hi, batch)
    ragged = any(x is not None for x in lens)
    pattern = d.choice(UNSORTED_PATTERNS if unsorted else MERGE_PATTERNS)
    if pattern in ("disjoint", "above") and ragged:
        pattern = "random"
    if unsorted:
        a = sort_input(d.rng, dtype, a_shape, pattern, axis=pos, descending=desc)
        b = sort_input(d.rng, dtype, b_shape, pattern, axis=pos, descending=desc)
    elif pattern in ("disjoint", "above"):  # all of a before (after) all of b
        c = ref_sort(random_keys(d.rng, dtype, _shape(dims, pos, total)), pos, desc)
        first, second = np.split(c, [m if pattern == "disjoint" else n], axis=pos)
        a, b = (first, second) if pattern == "disjoint" else (second, first)
    else:
        a, b = (
            sort_segments(
                random_keys(d.rng, dtype, shape, pattern), length, pos, desc, sort_tail=False
            )
            if length is not None
            else ref_sort(random_keys(d.rng, dtype, shape, pattern), pos, desc)
            for shape, length in ((a_shape, lens[0]), (b_shape, lens[1]))
        )
    arrays = [a, b]
    info = [f"a{a_shape}", f"b{b_shape}", pattern, split_kind]
    if unsorted:
        info.append("UNSORTED")
    if by_key:
        a_tree = d.tree(a_shape)
        a_leaves, tree = jax.tree.flatten(a_tree)
        b_leaves = [d.values(b_shape + leaf.shape[len(a_shape) :], leaf.dtype) for leaf in a_leaves]
        arrays += [*a_leaves, *b_leaves]
        groups += list(range(2, 2 + 2 * len(a_leaves)))
        info.append(
            "values=" + ",".join(f"{x.dtype.name}{x.shape[len(a_shape) :]}" for x in a_leaves)
        )
    else:
        tree = None
        for side, name in enumerate(("a_length", "b_length")):
            if params[name] == "arg":
                arrays.append(lens[side])
                groups.append(side)  # a length moves with its keys' rows
        if idx:
            info.append("idx")
        if ragged:
            info.append(f"lengths={params['a_length']},{params['b_length']}")

    def args_of(full: list[np.ndarray], p: dict[str, Any]) -> tuple[Any, ...]:
        rest = iter(full[2:])
        return tuple(next(rest) if p[k] == "arg" else p[k] for k in ("a_length", "b_length"))

    def ref(full: list[np.ndarray], p: dict[str, Any]) -> Any:
        a, b = full[0], full[1]
        ax = p["axis"] % a.ndim
        if by_key:
            keys, perm = ref_merge(a, b, axis=ax, descending=p["desc"])
            nl = tree.num_leaves
            av = jax.tree.unflatten(tree, full[2 : 2 + nl])
            bv = jax.tree.unflatten(tree, full[2 + nl :])
            return keys, gather_values(av, bv, perm, ax)
        a_len, b_len = args_of(full, p)
        vals, perm = ref_merge(a, b, axis=ax, descending=p["desc"], a_length=a_len,
                               b_length=b_len)
        return (vals, perm) if p["idx"] else vals

    def perm_check(out: Any, full: list[np.ndarray], p: dict[str, Any]) -> None:
        a, b = full[0], full[1]
        ax = p["axis"] % a.ndim
        src = np.concatenate([a, b], axis=ax)
        if by_key:
            keys, values = out
            assert_same_multiset(keys, src, ax, "merged keys")
            nl = tree.num_leaves
            got_leaves = jax.tree.leaves(values)
            assert len(got_leaves) == nl, f"{len(got_leaves)} value leaves, want {nl}"
            for i in range(nl):
                leaf_src = np.concatenate([full[2 + i], full[2 + nl + i]], axis=ax)
                g, w = pair_records(keys, got_leaves[i], ax), pair_records(src, leaf_src, ax)
                assert g.shape == w.shape and np.array_equal(g, w), (
                    f"value leaf {i}: (key, value) pairs not kept"
                )
            return
        vals = out[0] if p["idx"] else out
        assert_same_multiset(vals, src, ax, "merged values")
        if p["idx"]:
            check_indices(vals, out[1], src, ax, "merge")

    return Built(
        "merge_by_key" if by_key else "merge",
        params,
        arrays,
        groups,
        pos,
        ref,
        perm_check if unsorted else None,
        tree,
        info,
    )


def build_merge_runs(d: Draw) -> Built:
    dtype, desc = d.dtype(), d.coin()
    unsorted, idx = d.coin(0.15), d.coin(0.5)
    kb = dtype.itemsize
    payload = PAYLOAD_INDEX if idx else PAYLOAD_NONE
    total = d.large_total(kb + 4 * idx) if d.large else d.length(merge_menu(kb, payload, 0))
    dims, pos, total = d.batch(total)
    shape = _shape(dims, pos, total)
    params: dict[str, Any] = {"axis": pos, "desc": desc, "idx": idx}
    if d.coin(0.5):
        split: Any = d.between(-2, total + 3)
        params["split"] = split
    else:
        split = d.lengths_arg(total, dims)
        params["split"] = "arg"
    if unsorted:
        pattern = d.choice(UNSORTED_PATTERNS)
        x = sort_input(d.rng, dtype, shape, pattern, axis=pos, descending=desc)
    else:
        pattern = d.choice(MERGE_PATTERNS[:6])
        x = sort_segments(random_keys(d.rng, dtype, shape, pattern), split, pos, desc)
    arrays = [x] + ([split] if params["split"] == "arg" else [])
    info = [f"x{shape}", pattern, f"split={params['split']}"] + ["idx"] * idx
    info += ["UNSORTED"] * unsorted

    def ref(full: list[np.ndarray], p: dict[str, Any]) -> Any:
        x = full[0]
        perm = np_argsort(x, p["axis"], p["desc"])
        vals = np.take_along_axis(x, perm, p["axis"])
        return (vals, perm) if p["idx"] else vals

    def perm_check(out: Any, full: list[np.ndarray], p: dict[str, Any]) -> None:
        x = full[0]
        ax = p["axis"] % x.ndim
        vals = out[0] if p["idx"] else out
        assert_same_multiset(vals, x, ax, "merge_runs values")
        if p["idx"]:
            check_indices(vals, out[1], x, ax, "merge_runs")

    return Built(
        "merge_runs",
        params,
        arrays,
        [0, 0][: len(arrays)],
        pos,
        ref,
        perm_check if unsorted else None,
        None,
        info,
    )


def build_co_rank(d: Draw) -> Built:
    dtype, desc = d.dtype(), d.coin()
    kb = dtype.itemsize
    total = d.large_total(kb) if d.large else d.length(merge_menu(kb, PAYLOAD_NONE, 0))
    dims, _, total = d.batch(total, lead_only=True)
    m, split_kind = d.split(total)
    dims = dims[:2]
    pattern = d.choice(MERGE_PATTERNS[:6])
    a = ref_sort(random_keys(d.rng, dtype, (*dims, m), pattern), -1, desc)
    b = ref_sort(random_keys(d.rng, dtype, (*dims, total - m), pattern), -1, desc)
    q_shape = d.choice(((), (1,), (5,), (33,), (300,), (3, 7)))
    k = d.rng.integers(-2, total + 3, size=(*dims, *q_shape))
    if k.size:
        k.reshape(-1)[0] = d.choice((0, total))
    k = k.astype(d.choice((np.int32, np.int64)))

    def ref(full: list[np.ndarray], p: dict[str, Any]) -> Any:
        return np_co_rank(full[0], full[1], full[2], p["desc"])

    info = [f"k{k.shape}:{k.dtype.name}", f"a{a.shape}", f"b{b.shape}", pattern, split_kind]
    return Built("co_rank", {"desc": desc}, [k, a, b], [0, 1, 2], len(dims), ref, info=info)


def build_is_sorted(d: Draw) -> Built:
    dtype, desc = d.dtype(), d.coin()
    n = d.large_total(dtype.itemsize) if d.large else d.length(sort_menu(dtype.itemsize, 0))
    dims, pos, n = d.batch(n)
    shape = _shape(dims, pos, n)
    pattern = d.choice(("random", "few", "equal", "special", "plain", "sparse"))
    x = random_keys(d.rng, dtype, shape, pattern)
    s = ref_sort(x, pos, desc)
    xl, sl = np.moveaxis(x, pos, -1).copy(), np.moveaxis(s, pos, -1)
    state = d.rng.integers(0, 3, size=xl.shape[:-1])  # 0 sorted, 1 one swap, 2 as drawn
    xl = np.where((state < 2)[..., None], sl, xl)
    if n >= 2:
        i = d.between(0, n - 2)
        swapped = xl.copy()
        swapped[..., [i, i + 1]] = swapped[..., [i + 1, i]]
        xl = np.where((state == 1)[..., None], swapped, xl)
    x = np.ascontiguousarray(np.moveaxis(xl, -1, pos))

    def ref(full: list[np.ndarray], p: dict[str, Any]) -> Any:
        return np_is_sorted(full[0], p["axis"], p["desc"])

    return Built(
        "is_sorted", {"axis": pos, "desc": desc}, [x], [0], pos, ref, info=[f"x{shape}", pattern]
    )


def build_sort(d: Draw, op: str) -> Built:
    dtype, desc = d.dtype(), d.coin()
    kb = dtype.itemsize
    pb = 4 if op == "argsort" else 0
    n = d.large_total(kb + pb) if d.large else d.length(sort_menu(kb, pb))
    dims, pos, n = d.batch(n)
    shape = _shape(dims, pos, n)
    pattern = d.choice(SORT_PATTERNS)
    x = sort_input(d.rng, dtype, shape, pattern, axis=pos, descending=desc)

    def ref(full: list[np.ndarray], p: dict[str, Any]) -> Any:
        if op == "sort":  # jnp.sort's: descending is the ascending sort reversed, ties too
            return ref_jnp_sort(full[0], p["axis"], p["desc"])
        return np_argsort(full[0], p["axis"], p["desc"])

    return Built(op, {"axis": pos, "desc": desc}, [x], [0], pos, ref, info=[f"x{shape}", pattern])


def build_sort_by_key(d: Draw) -> Built:
    dtype, desc = d.dtype(), d.coin()
    kb = dtype.itemsize
    pb = int(d.choice((1, 2, 4, 4, 8)))  # a fused value's bytes, or 4: the index payload's
    n = d.large_total(kb + 8) if d.large else d.length(sort_menu(kb, pb))
    dims, pos, n = d.batch(n)
    shape = _shape(dims, pos, n)
    pattern = d.choice(SORT_PATTERNS)
    keys = sort_input(d.rng, dtype, shape, pattern, axis=pos, descending=desc)
    leaves, tree = jax.tree.flatten(d.tree(shape))

    def ref(full: list[np.ndarray], p: dict[str, Any]) -> Any:
        values = jax.tree.unflatten(tree, full[1:])
        return ref_sort_by_key(full[0], values, axis=p["axis"], descending=p["desc"])

    kind, _ = _payload_of(leaves, shape)
    info = [
        f"keys{shape}",
        pattern,
        "values=" + ",".join(f"{x.dtype.name}{x.shape[len(shape) :]}" for x in leaves),
        "fused" * (kind == 2),
    ]
    return Built(
        "sort_by_key",
        {"axis": pos, "desc": desc},
        [keys, *leaves],
        list(range(1 + len(leaves))),
        pos,
        ref,
        tree=tree,
        info=info,
    )


def build_lax_sort(d: Draw) -> Built:
    num_keys = d.between(1, 3)
    n_ops = num_keys + int(d.rng.choice(3, p=[0.4, 0.4, 0.2]))
    dtypes = [d.dtype() for _ in range(num_keys)]
    n = d.large_total(8) if d.large else d.length(sort_menu(dtypes[0].itemsize, 4))
    dims, pos, n = d.batch(n)
    shape = _shape(dims, pos, n)
    patterns = [d.choice(("few", "few", "equal", "random", "special")) for _ in dtypes]
    ops = [random_keys(d.rng, dt, shape, pt) for dt, pt in zip(dtypes, patterns, strict=True)]
    ops += [d.values(shape) for _ in range(n_ops - num_keys)]
    single = n_ops == 1 and d.coin()

    def ref(full: list[np.ndarray], p: dict[str, Any]) -> Any:
        out = ref_lax_sort(full, p["axis"] % full[0].ndim, p["num_keys"])
        return out[0] if p["single"] else out

    info = [f"x{shape}", "ops=" + ",".join(x.dtype.name for x in ops), "/".join(patterns)]
    params = {"axis": pos, "num_keys": num_keys, "single": single}
    return Built("lax_sort", params, ops, list(range(n_ops)), pos, ref, info=info)


def build_searchsorted(d: Draw) -> Built:
    dtype = d.dtype()
    kb = dtype.itemsize
    side, sorted_v = d.choice(("left", "right")), d.coin()
    threads, items, _ = _cpu.merge_shape_for(kb, PAYLOAD_RANKS_B, 0)
    tile = threads * items
    total = (
        d.large_total(kb)
        if d.large
        else d.length((tile - 1, tile, tile + 1, 2 * tile + 1, *sort_menu(kb, 0)))
    )
    dims, _, total = d.batch(total, lead_only=True)
    n, _ = d.split(total)
    if n == total and total and d.coin(0.8):
        n -= min(total, int(d.choice((1, 7, 100))))
    dims = dims[:2]
    q = total - n
    q_shape = d.choice(((q,), (q,), (), (max(q // 7, 1), 7)))
    pattern = d.choice(("random", "few", "equal", "special", "plain", "sparse"))
    a = ref_sort(random_keys(d.rng, dtype, (*dims, n), pattern), -1, False)
    v = random_keys(d.rng, dtype, (*dims, *q_shape), d.choice(("random", "few", "special")))
    if a.size and v.size:  # queries equal to elements of a: left and right differ
        v = np.where(d.rng.random(v.shape) < 0.5, d.rng.choice(a.reshape(-1), v.shape), v)
        v = v.astype(dtype)
    if sorted_v:
        v = sorted_queries(v, len(dims))

    def ref(full: list[np.ndarray], p: dict[str, Any]) -> Any:
        return ref_searchsorted(full[0], full[1], p["side"])

    info = [f"a{a.shape}", f"v{v.shape}", pattern, side, "sorted_v" * sorted_v]
    return Built(
        "searchsorted",
        {"side": side, "sorted_v": sorted_v},
        [a, v],
        [0, 1],
        len(dims),
        ref,
        info=info,
    )


def plan_vmap(
    d: Draw, arrays: list[np.ndarray], groups: list[int], levels: int
) -> tuple[list[np.ndarray], list[np.ndarray], tuple[tuple[int | None, ...], ...]]:
    """Peels the first `levels` dims of every argument with nested jax.vmap: per level, each
    group of arguments is batched (at a random in_axes position) or unbatched (in_axes None; the
    logical argument is then that level's first slice, broadcast). Returns (the arguments to
    call with, the logical arguments the reference sees, in_axes of each level)."""
    names = sorted(set(groups))
    unbatched: list[dict[int, bool]] = []
    for k in range(levels):
        size = arrays[0].shape[k]
        flags = {g: size > 0 and d.coin(0.25) for g in names}
        if all(flags.values()):
            flags[d.choice(names)] = False
        unbatched.append(flags)
    full, args = [], []
    axes: list[list[int | None]] = [[None] * len(arrays) for _ in range(levels)]
    for i, x in enumerate(arrays):
        flat = [unbatched[k][groups[i]] for k in range(levels)]
        for k in range(levels):
            if flat[k]:
                x = np.broadcast_to(np.take(x, [0], axis=k), x.shape)
        x = np.array(x)  # a copy, C order (0-d stays 0-d)
        full.append(x)
        y = x[tuple(0 if flat[k] else slice(None) for k in range(levels))]
        batched = [k for k in range(levels) if not flat[k]]
        labels = list(range(len(batched), y.ndim))
        for j in reversed(range(len(batched))):  # innermost level first
            at = d.between(0, len(labels))
            labels.insert(at, j)
            axes[batched[j]][i] = at
        args.append(np.array(np.transpose(y, labels)))
    return args, full, tuple(tuple(a) for a in axes)


@dataclass
class Case:
    seed: int
    spec: Spec
    args: list[np.ndarray]
    full: list[np.ndarray]
    params: dict[str, Any]
    ref: Callable[[list[np.ndarray], dict[str, Any]], Any]
    perm: Callable[[Any, list[np.ndarray], dict[str, Any]], None] | None
    want_ref: bool
    desc: str


def is_large(seed: int, max_log2: int) -> bool:
    """Whether the case of this seed is a large one (its first draw), without drawing it."""
    return Draw(seed, max_log2).large


def make_case(seed: int, max_log2: int) -> Case:
    d = Draw(seed, max_log2)
    names = list(OPS)
    weights = np.array([OPS[k] for k in names])
    op = str(d.rng.choice(names, p=weights / weights.sum()))
    if op in ("merge", "merge_by_key"):
        built = build_merge(d, op == "merge_by_key")
    elif op == "merge_runs":
        built = build_merge_runs(d)
    elif op == "co_rank":
        built = build_co_rank(d)
    elif op == "is_sorted":
        built = build_is_sorted(d)
    elif op in ("sort", "argsort"):
        built = build_sort(d, op)
    elif op == "sort_by_key":
        built = build_sort_by_key(d)
    elif op == "lax_sort":
        built = build_lax_sort(d)
    else:
        built = build_searchsorted(d)
    levels = d.between(1, built.lead) if built.lead and d.coin(0.35) else 0
    args, full, axes = plan_vmap(d, built.arrays, built.groups, levels)
    params = dict(built.params)
    if "axis" in params and (levels or d.coin()):
        params["axis"] -= full[0].ndim  # negative: the same axis inside vmap
    spec = Spec(built.op, tuple(sorted(params.items())), built.tree, axes)
    dtype = built.arrays[0].dtype.name if built.op != "co_rank" else built.arrays[1].dtype.name
    shown = {k: v for k, v in params.items() if k in ("axis", "desc", "num_keys")}
    parts = [
        built.op,
        dtype,
        *[s for s in built.info if s],
        *[f"{k}={v}" for k, v in shown.items()],
    ]
    if levels:
        parts.append(f"vmap={axes}")
    if d.large:
        parts.append("LARGE")
    want_ref = d.coin(REF_P)
    return Case(seed, spec, args, full, params, built.ref, built.perm, want_ref, " ".join(parts))


# ----------------------------------------------------------------------------- running


def check_case(case: Case, cpu: jax.Device, gpu: jax.Device | None, with_ref: bool) -> None:
    if case.perm is not None:  # unsorted merge input: a permutation on every device
        for dev in (cpu, gpu):
            if dev is not None:
                out = run_on(dev, case.spec, case.args)
                try:
                    case.perm(out, case.full, case.params)
                except AssertionError as e:
                    raise AssertionError(f"{dev.platform}: {e}") from None
        return
    cpu_out = run_on(cpu, case.spec, case.args)
    if gpu is not None:
        gpu_out = run_on(gpu, case.spec, case.args)
        assert_tree_equal(gpu_out, cpu_out, "GPU vs CPU")
    if with_ref or gpu is None:
        assert_tree_equal(cpu_out, case.ref(case.full, case.params), "CPU vs reference")


def one_line(text: str, limit: int = 400) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def run_one(
    seed: int, args: argparse.Namespace, cpu: jax.Device, gpu: jax.Device | None, replay: bool
) -> tuple[bool, str, str]:
    """(passed, op, line) of one case."""
    replay_cmd = f"python3 tests/tools/fuzz_parity.py --replay {seed} --max-log2 {args.max_log2}"
    if args.cpu_only:
        replay_cmd += " --cpu-only"
    try:
        case = make_case(seed, args.max_log2)
    except Exception as e:  # a bug of this script's generators: reported like a failure
        return (
            False,
            "?",
            one_line(
                f"FAIL seed={seed} (drawing the case) {type(e).__name__}: "
                f"{e} | replay: {replay_cmd}"
            ),
        )
    try:
        check_case(case, cpu, gpu, case.want_ref or replay)
    except Exception as e:
        msg = str(e).splitlines()[0] if str(e) else ""
        return (
            False,
            case.spec.op,
            one_line(f"FAIL seed={seed} {case.desc}: {type(e).__name__}: {msg}", 700)
            + f" | replay: {replay_cmd}",
        )
    return True, case.spec.op, f"ok seed={seed} {case.desc}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=240.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--max-log2",
        type=int,
        default=22,
        help="largest case: 2^N elements in all (18..; default 22)",
    )
    parser.add_argument(
        "--cpu-only",
        action="store_true",
        help="no GPU: compare the CPU results with the reference only",
    )
    parser.add_argument(
        "--replay",
        type=int,
        default=None,
        metavar="CASE_SEED",
        help="run the one case of this seed, with the reference check",
    )
    parser.add_argument("--verbose", action="store_true", help="print every case")
    args = parser.parse_args()

    cpu = jax.devices("cpu")[0]
    gpu: jax.Device | None = None
    if not args.cpu_only:
        try:
            gpu = jax.devices("gpu")[0]
        except RuntimeError:
            print("fuzz_parity: no GPU device (use --cpu-only)", file=sys.stderr)
            return 2
    kind = "cpu only" if gpu is None else gpu.device_kind

    if args.replay is not None:
        ok, _, line = run_one(args.replay, args, cpu, gpu, True)
        print(line)
        return 0 if ok else 1

    start = time.monotonic()
    cases = failed = 0
    per_op: Counter[str] = Counter()
    i = 0
    while time.monotonic() - start < args.seconds:
        seed = args.seed * 10**6 + i
        i += 1
        if args.seconds - (time.monotonic() - start) < 30 and is_large(seed, args.max_log2):
            continue  # no large case in the last seconds
        ok, op, line = run_one(seed, args, cpu, gpu, False)
        cases += 1
        per_op[op] += 1
        if not ok:
            failed += 1
        if not ok or args.verbose:
            print(line, flush=True)
    elapsed = time.monotonic() - start
    if args.verbose:
        print("cases by function: " + ", ".join(f"{k} {v}" for k, v in sorted(per_op.items())))
    print(f"fuzz_parity: {cases} cases, {failed} failed, {elapsed:.0f} seconds ({kind})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
