# Reference helpers and assertion helpers for the sort-family tests (sort, argsort, sort_by_key,
# lax_sort, searchsorted), independent of jax_mergepath: every expected output is computed by
# numpy from the order keys of reference.py (order_key: NaN last, -0.0 == +0.0, subnormals ordered
# as numbers), so references never call the functions under test. Also: the native tile sizes
# the sizes are picked around, input patterns beyond random_keys (presorted, reverse, organ pipe,
# sorted with a few swaps), and check_* helpers that compare every output bit-exactly.
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
from reference import (
    assert_bits_equal,
    index_dtype,
    is_float,
    np_argsort,
    order_key,
    random_keys,
    ref_jnp_sort,
    ref_sort,
    to_bits,
)

import jax_mergepath as jmp
from jax_mergepath import _cpu

# ----------------------------------------------------------------------------- tiles and sizes


def sort_tile(dtype: Any, payload_bytes: int = 0) -> int:
    """The block-sort tile (elements) for keys of dtype with a payload of payload_bytes (0 for
    sort, 4 for argsort's int32 indices, the value width for sort_by_key)."""
    return int(_cpu.sort_tile(np.dtype(dtype).itemsize, payload_bytes))


# Sizes of a sorted axis, by label, as a function of the tile t: the trivial sizes, a tile +- 1
# (block sort only / one merge pass), 2 tiles +- 1, 3 tiles (an odd number of runs: one run has no
# partner in the first pass), 4 tiles + 1 (two full passes and a ragged run), and 2^k +- 1.
SIZE_LABELS = [
    "0", "1", "2", "3", "tile-1", "tile", "tile+1", "2tile-1", "2tile+1", "3tile", "4tile+1",
    "2^5-1", "2^5+1", "2^10-1", "2^10+1", "2^13+1",
]  # fmt: skip


def size_of(label: str, tile: int) -> int:
    """The size a SIZE_LABELS label stands for, at tile t."""
    if label.startswith("2^"):
        k, d = label[2:].replace("+", " +").replace("-", " -").split()
        return 2 ** int(k) + int(d)
    if "tile" in label:
        mult, _, delta = label.partition("tile")
        return (int(mult) if mult else 1) * tile + (int(delta) if delta else 0)
    return int(label)


def tile_sizes(tile: int) -> list[int]:
    """Every SIZE_LABELS size at tile t, without repeats, ascending."""
    return sorted({size_of(label, tile) for label in SIZE_LABELS})


# ----------------------------------------------------------------------------- input patterns

# random/few/equal/special come from reference.random_keys; the others are built here.
PATTERNS = ["random", "few", "equal", "special", "sorted", "reverse", "organ", "swaps"]


def sort_input(
    rng: np.random.Generator,
    dtype: Any,
    shape: Sequence[int],
    pattern: str = "random",
    *,
    axis: int = -1,
    descending: bool = False,
) -> np.ndarray:
    """Keys of dtype and shape in one of PATTERNS, or "plain" / "sparse" (along axis):
    random/few/equal/special/plain/sparse: reference.random_keys;
    sorted: random keys already sorted in the requested direction;
    reverse: sorted in the opposite direction;
    organ: first half ascending, second half descending (organ pipe);
    swaps: sorted in the requested direction, then ~1% of positions (at least 1 pair) swapped.
    """
    if pattern in ("random", "few", "equal", "special", "plain", "sparse"):
        return random_keys(rng, dtype, shape, pattern)
    x = random_keys(rng, dtype, shape, "random")
    if pattern == "sorted":
        return ref_sort(x, axis, descending)
    if pattern == "reverse":
        return ref_sort(x, axis, not descending)
    xl = np.moveaxis(x, axis, -1).copy()
    d = xl.shape[-1]
    if pattern == "organ":
        h = d // 2
        xl[..., :h] = ref_sort(xl[..., :h], -1, False)
        xl[..., h:] = ref_sort(xl[..., h:], -1, True)
    else:
        assert pattern == "swaps", pattern
        xl = ref_sort(xl, -1, descending)
        if d >= 2:
            for _ in range(max(1, d // 100)):
                i, j = rng.integers(0, d, 2)
                xl[..., [i, j]] = xl[..., [j, i]]
    return np.moveaxis(xl, -1, axis)


def no_subnormals(x: Any) -> np.ndarray:
    """x with subnormal floats replaced by 1.0 (for comparisons with XLA:CPU's own sort, which
    flushes subnormals to zero); non-floats unchanged."""
    x = np.asarray(x)
    if not is_float(x.dtype):
        return x
    info = ml_dtypes.finfo(x.dtype)
    mag = np.abs(x.astype(np.float64))
    sub = (mag > 0) & (mag < float(info.smallest_normal))
    return np.where(sub, np.array(1.0, x.dtype), x).astype(x.dtype)


def no_nans(x: Any) -> np.ndarray:
    """x with NaNs replaced by 2.0 (floats only)."""
    x = np.asarray(x)
    if not is_float(x.dtype):
        return x
    return np.where(np.isnan(x.astype(np.float64)), np.array(2.0, x.dtype), x).astype(x.dtype)


def distinct_floats(rng: np.random.Generator, dtype: Any, shape: Sequence[int]) -> np.ndarray:
    """Floats without ties, NaNs or subnormals (a random permutation of well-separated values):
    sort's gradient is then the same for every valid order of ties (there are none)."""
    n = int(np.prod(shape))
    vals = (rng.permutation(n).astype(np.float64) - n / 2) * 0.5 + 0.25
    return vals.reshape(shape).astype(dtype)


# ----------------------------------------------------------------------------- references


def take_by_perm(x: Any, perm: np.ndarray, axis: int) -> np.ndarray:
    """x gathered along axis by perm (perm has the keys' shape; x may have trailing dims)."""
    x = np.asarray(x)
    perm = np.asarray(perm)
    idx = perm.reshape(perm.shape + (1,) * (x.ndim - perm.ndim))
    idx = np.broadcast_to(idx, perm.shape + x.shape[perm.ndim :])
    return np.take_along_axis(x, idx, axis % perm.ndim)


def ref_sort_by_key(
    keys: Any, values: Any, *, axis: int = -1, descending: bool = False
) -> tuple[np.ndarray, Any]:
    """(sorted keys, values moved with their keys), values a pytree of arrays."""
    keys = np.asarray(keys)
    perm = np_argsort(keys, axis, descending)
    return take_by_perm(keys, perm, axis), jax.tree.map(
        lambda v: take_by_perm(v, perm, axis), values
    )


def lex_argsort(keys: Sequence[Any], axis: int = -1) -> np.ndarray:
    """Stable lexicographic argsort over keys (keys[0] most significant) in the order-key order,
    along axis, as int64: least significant key first, each pass a stable argsort."""
    ks = [np.moveaxis(order_key(np.asarray(k)), axis, -1) for k in keys]
    p = np.broadcast_to(np.arange(ks[0].shape[-1]), ks[0].shape).copy()
    for k in reversed(ks):
        step = np.argsort(np.take_along_axis(k, p, -1), axis=-1, kind="stable")
        p = np.take_along_axis(p, step, -1)
    return np.moveaxis(p, -1, axis)


def ref_lax_sort(operands: Sequence[Any], dimension: int = -1, num_keys: int = 1) -> tuple:
    """jax.lax.sort's result (a tuple), lexicographic over the first num_keys operands, stable,
    with the package's key order (subnormals ordered)."""
    ops = [np.asarray(o) for o in operands]
    perm = lex_argsort(ops[:num_keys], dimension)
    return tuple(np.take_along_axis(o, perm, dimension) for o in ops)


def promoted_dtype(a: Any, v: Any) -> np.dtype:
    """The dtype jnp.searchsorted compares in (JAX's promotion of a's and v's dtypes)."""
    return np.dtype(jnp.promote_types(np.asarray(a).dtype, np.asarray(v).dtype))


def ref_searchsorted(a: Any, v: Any, side: str = "left") -> np.ndarray:
    """int32 insertion points of v into each row of a (a of shape (*B, n), v of shape (*B, ...);
    1-D a: v any shape), over the order keys of both after JAX's promotion."""
    a, v = np.asarray(a), np.asarray(v)
    dt = promoted_dtype(a, v)
    ka, kv = order_key(a.astype(dt)), order_key(v.astype(dt))
    batch = a.shape[:-1]
    if not batch:
        return np.asarray(np.searchsorted(ka, kv, side=side), dtype=np.int32)
    assert v.shape[: len(batch)] == batch, (a.shape, v.shape)
    out = np.empty(v.shape, np.int32)
    for b in np.ndindex(*batch):
        out[b] = np.searchsorted(ka[b], kv[b], side=side)
    return out


# ----------------------------------------------------------------------------- checks


def assert_is_permutation(idx: Any, axis: int = -1, what: str = "") -> None:
    """idx holds every position 0..d-1 exactly once along axis."""
    idx = np.moveaxis(np.asarray(idx), axis, -1)
    d = idx.shape[-1]
    want = np.broadcast_to(np.arange(d), idx.shape)
    assert np.array_equal(np.sort(idx, axis=-1), want), f"{what}: not a permutation"


def assert_same_multiset(got: Any, x: Any, axis: int = -1, what: str = "") -> None:
    """got holds the same bit patterns as x, row by row along axis."""
    g = np.moveaxis(to_bits(np.asarray(got)), axis, -1)
    w = np.moveaxis(to_bits(np.asarray(x)), axis, -1)
    assert g.shape == w.shape, f"{what}: shape {g.shape} != {w.shape}"
    assert np.array_equal(np.sort(g, axis=-1), np.sort(w, axis=-1)), f"{what}: not a permutation"


def assert_leaf_bits_equal(got: Any, want: Any, what: str = "") -> None:
    """assert_bits_equal for every dtype, complex included (real and imaginary parts compared
    by bits: reference.to_bits has no 16-byte unsigned view for complex128)."""
    got_np, want_np = np.asarray(got), np.asarray(want)
    if want_np.dtype.kind != "c":
        assert_bits_equal(got_np, want_np, what)
        return
    assert got_np.dtype == want_np.dtype, f"{what}: dtype {got_np.dtype} != {want_np.dtype}"
    assert_bits_equal(got_np.real, want_np.real, f"{what} (real part)")
    assert_bits_equal(got_np.imag, want_np.imag, f"{what} (imaginary part)")


def assert_tree_bits_equal(got: Any, want: Any, what: str = "") -> None:
    assert jax.tree.structure(got) == jax.tree.structure(want), (
        f"{what}: tree {jax.tree.structure(got)} != {jax.tree.structure(want)}"
    )
    for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        assert_leaf_bits_equal(g, w, what)


def check_sort(x: Any, *, axis: int = -1, descending: bool = False, what: str = "") -> None:
    """sort and argsort of x equal the numpy references bit-exactly (sort as jnp.sort: a
    descending sort reverses the ascending one; argsort in index_dtype(), ties in input order),
    and the outputs are permutations of the input."""
    x = np.asarray(x)
    tag = f"{what} {x.dtype}{list(x.shape)} axis={axis} desc={descending}"
    want_i = np_argsort(x, axis, descending)
    want_v = ref_jnp_sort(x, axis, descending)
    got_v = jmp.sort(x, axis=axis, descending=descending)
    assert isinstance(got_v, jax.Array), type(got_v)
    assert_bits_equal(got_v, want_v, f"sort {tag}")
    assert_same_multiset(got_v, x, axis, f"sort {tag}")
    got_i = jmp.argsort(x, axis=axis, descending=descending)
    assert np.asarray(got_i).dtype == index_dtype(), f"argsort {tag}: {np.asarray(got_i).dtype}"
    assert_bits_equal(got_i, want_i, f"argsort {tag}")
    assert_is_permutation(got_i, axis, f"argsort {tag}")


def check_sort_only(x: Any, *, axis: int = -1, descending: bool = False) -> None:
    x = np.asarray(x)
    got = jmp.sort(x, axis=axis, descending=descending)
    assert_bits_equal(got, ref_jnp_sort(x, axis, descending), f"sort {x.dtype}{list(x.shape)}")


def check_argsort_only(x: Any, *, axis: int = -1, descending: bool = False) -> None:
    x = np.asarray(x)
    got = jmp.argsort(x, axis=axis, descending=descending)
    want = np_argsort(x, axis, descending)
    assert_bits_equal(got, want, f"argsort {x.dtype}{list(x.shape)} desc={descending}")


def check_sort_by_key(
    keys: Any, values: Any, *, axis: int = -1, descending: bool = False, what: str = ""
) -> None:
    want_k, want_v = ref_sort_by_key(keys, values, axis=axis, descending=descending)
    got_k, got_v = jmp.sort_by_key(keys, values, axis=axis, descending=descending)
    tag = f"{what} axis={axis} desc={descending}"
    assert_bits_equal(got_k, want_k, f"sort_by_key keys {tag}")
    assert_tree_bits_equal(got_v, want_v, f"sort_by_key values {tag}")


def check_lax_sort(
    operands: Sequence[Any], *, dimension: int = -1, num_keys: int = 1, what: str = ""
) -> None:
    """lax_sort of a sequence returns a tuple equal to the lexicographic reference."""
    want = ref_lax_sort(operands, dimension, num_keys)
    got = jmp.lax_sort(list(operands), dimension=dimension, num_keys=num_keys)
    assert isinstance(got, tuple), type(got)
    assert len(got) == len(want), (len(got), len(want))
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert_leaf_bits_equal(g, w, f"lax_sort operand {i} {what} dim={dimension} nk={num_keys}")


def sorted_queries(v: Any, batch_ndim: int = 0) -> np.ndarray:
    """v with the queries of each batch entry (the dims after the first batch_ndim) sorted in
    row-major order, hence also along the last axis: sorted under either reading of sorted_v."""
    v = np.asarray(v)
    flat = v.reshape(*v.shape[:batch_ndim], int(np.prod(v.shape[batch_ndim:], dtype=np.int64)))
    return ref_sort(flat).reshape(v.shape)


def check_searchsorted(a: Any, v: Any, side: str = "left", *, what: str = "") -> None:
    """searchsorted(a, v, side) equals the reference (int32, v's shape); where v is sorted along
    its last axis (the contract of sorted_v), sorted_v=True gives the same."""
    want = ref_searchsorted(a, v, side)
    got = jmp.searchsorted(a, v, side)
    assert_bits_equal(got, want, f"searchsorted {what} side={side}")
    v = np.asarray(v)
    has_query_axis = v.ndim >= max(1, np.ndim(a))  # a (*B, n): v (*B, *Q) with Q non-empty
    if has_query_axis and np.array_equal(to_bits(ref_sort(v)), to_bits(v)):
        got_s = jmp.searchsorted(a, v, side, sorted_v=True)
        assert_bits_equal(got_s, want, f"searchsorted sorted_v {what} side={side}")


def shape_id(v: Any) -> str:
    """Readable parametrize id: shapes as 3x4, everything else as str."""
    if isinstance(v, tuple):
        return "x".join(str(d) for d in v) if v else "0d"
    return str(v)
