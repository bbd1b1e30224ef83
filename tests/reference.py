# Reference implementations and data helpers for the merge tests, independent of jax_mergepath.
# The one key order of docs/contract.md is jnp.argsort(stable=True[, descending=True]): every
# reference below derives its permutation from it (a stable merge of sorted a and b IS the stable
# sort of their concatenation), and gathers values with it, so expected outputs are bit-exact copies
# of input elements. Also: bit-level comparison (floats viewed as unsigned ints) and generators of
# keys with duplicates, NaNs (several payloads, both signs), +-0, +-inf, subnormals, int min/max.
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np

BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
FLOAT_DTYPES: list[np.dtype] = [
    np.dtype(np.float16),
    BFLOAT16,
    np.dtype(np.float32),
    np.dtype(np.float64),
]
INT_DTYPES: list[np.dtype] = [
    np.dtype(t)
    for t in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64)
]
KEY_DTYPES: list[np.dtype] = [np.dtype(np.bool_), *INT_DTYPES, *FLOAT_DTYPES]

# NaN bit patterns (quiet; positive and negative sign; default and non-default payload).
_NAN_BITS = {
    2: [0x7E00, 0xFE00, 0x7E01],
    4: [0x7FC00000, 0xFFC00000, 0x7FC00001],
    8: [0x7FF8000000000000, 0xFFF8000000000000, 0x7FF8000000000001],
}
# bfloat16 has no non-default payload here: XLA:CPU moves bfloat16 through float32 in concatenate
# and gather and canonicalizes NaN payloads there (an XLA artifact, not the package's to fix).
_BF16_NAN_BITS = [0x7FC0, 0xFFC0]


def is_float(dtype: Any) -> bool:
    return bool(jnp.issubdtype(np.dtype(dtype), jnp.floating))


def dtype_id(dtype: Any) -> str:
    return np.dtype(dtype).name


def to_bits(x: Any) -> np.ndarray:
    """x as a numpy array whose elements compare by bits (floats/bools viewed as uints)."""
    x = np.asarray(x)
    if x.dtype.kind in "iu":
        return x
    return x.view(np.dtype(f"u{x.dtype.itemsize}"))


def canonical_nans(x: Any) -> np.ndarray:
    """x with every NaN replaced by the dtype's canonical NaN (floats only): for comparisons with
    values XLA computed, where a GPU's arithmetic or XLA:GPU's sort may rewrite NaN bits (seen on
    H100 / H200, jax 0.11.2: 0x7fffffff for float32 x * 2 + 1, 0x7fff for a bfloat16 multi-key
    lax.sort)."""
    x = np.asarray(x)
    if not is_float(x.dtype):
        return x
    return np.where(np.isnan(x.astype(np.float64)), np.array(np.nan, x.dtype), x).astype(x.dtype)


def assert_bits_equal(got: Any, want: Any, what: str = "") -> None:
    """Same dtype, same shape, same bits everywhere (so -0.0 != +0.0, NaN payloads matter)."""
    got_np, want_np = np.asarray(got), np.asarray(want)
    assert got_np.dtype == want_np.dtype, f"{what}: dtype {got_np.dtype} != {want_np.dtype}"
    assert got_np.shape == want_np.shape, f"{what}: shape {got_np.shape} != {want_np.shape}"
    gb, wb = to_bits(got_np), to_bits(want_np)
    bad = np.argwhere(gb != wb)
    if bad.size:
        first = tuple(int(i) for i in bad[0])
        raise AssertionError(
            f"{what}: {len(bad)} of {gb.size} elements differ; first at {first}: "
            f"got {got_np[first]!r} (bits {gb[first]!r}), want {want_np[first]!r} "
            f"(bits {wb[first]!r})"
        )


# ----------------------------------------------------------------------------- data generation


def special_values(dtype: Any) -> np.ndarray:
    """Edge values of dtype: NaNs, +-inf, +-0, subnormals, extremes for floats; min/max for ints."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return np.array([False, True])
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        vals = [info.min, info.min + 1, 0, 1, info.max - 1, info.max]
        if dtype.kind == "i":
            vals += [-1]
        return np.array(vals, dtype=dtype)
    info = ml_dtypes.finfo(dtype) if dtype == BFLOAT16 else np.finfo(dtype)
    finite = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        float(info.smallest_subnormal),
        -float(info.smallest_subnormal),
        3 * float(info.smallest_subnormal),
        float(info.smallest_normal),
        -float(info.smallest_normal),
        float(info.max),
        -float(info.max),
        np.inf,
        -np.inf,
    ]
    vals = np.array(finite, dtype=np.float64).astype(dtype)
    nan_bits = _BF16_NAN_BITS if dtype == BFLOAT16 else _NAN_BITS[dtype.itemsize]
    nans = np.array(nan_bits, dtype=f"u{dtype.itemsize}").view(dtype)
    return np.concatenate([vals, nans])


def random_keys(
    rng: np.random.Generator, dtype: Any, shape: Sequence[int], pattern: str = "random"
) -> np.ndarray:
    """Unsorted keys of dtype and shape.

    pattern: "random" (wide range with duplicates and ~5% edge values), "few" (3 distinct keys,
    +-0.0 mixed for floats), "equal" (all keys equal; floats mix +0.0 and -0.0, so stability is
    visible in the bits), "special" (edge values only); for floats also "plain" ("random" with
    no NaN and no -0.0: +0.0, +-inf, subnormals and duplicates stay) and "sparse" ("plain" with
    a NaN or a -0.0 about every 10^4 keys), where integers take "random".
    """
    dtype = np.dtype(dtype)
    shape = tuple(shape)
    if pattern in ("plain", "sparse"):
        out = random_keys(rng, dtype, shape, "random")
        if not is_float(dtype):
            return out
        out = np.where(np.isnan(out), np.inf, out)
        out = np.where(out == 0, 0.0, out).astype(dtype)  # -0.0 -> +0.0
        if pattern == "sparse":
            odd = rng.random(shape) < 1e-4
            out = np.where(odd, rng.choice(np.array([np.nan, -0.0]), size=shape), out)
        return out.astype(dtype)
    specials = special_values(dtype)
    if pattern == "special":
        return rng.choice(specials, size=shape)
    if pattern == "equal":
        if is_float(dtype):
            return np.where(rng.random(shape) < 0.5, 0.0, -0.0).astype(dtype)
        return np.full(shape, True if dtype == np.bool_ else 7, dtype=dtype)
    if pattern == "few":
        if is_float(dtype):
            pool = np.array([-0.0, 0.0, 1.5, np.nan], dtype=np.float64).astype(dtype)
        elif dtype == np.bool_:
            pool = np.array([False, True])
        else:
            info = np.iinfo(dtype)
            pool = np.array([info.min, 1, info.max], dtype=dtype)
        return rng.choice(pool, size=shape)
    assert pattern == "random", pattern
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        wide = rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
        lo = max(int(info.min), -50)
        narrow = rng.integers(lo, lo + 100, size=shape).astype(dtype)
        out = np.where(rng.random(shape) < 0.5, wide, narrow)
    else:
        out = np.round(rng.standard_normal(shape) * 100.0, 1).astype(dtype)
    edge = rng.random(shape) < 0.05
    return np.where(edge, rng.choice(specials, size=shape), out).astype(dtype)


# ----------------------------------------------------------------------------- references


def index_dtype() -> np.dtype:
    """The dtype of positions (jnp.argsort's): int64 with jax_enable_x64 on, else int32."""
    return np.dtype(np.int64 if jax.config.jax_enable_x64 else np.int32)


def _axis(axis: int, ndim: int) -> int:
    assert -ndim <= axis < ndim, (axis, ndim)
    return axis % ndim


def order_key(x: Any) -> np.ndarray:
    """Unsigned integers ordered as the float keys x (ints and bools are returned unchanged):
    IEEE numeric order with -0.0 == +0.0 and every NaN (any sign or payload) equal and last.

    Why not argsort the floats directly: XLA:CPU runs with denormals-are-zero, so jnp.argsort on
    CPU treats subnormals as 0 (and unlike jnp.argsort on GPU or numpy). Sorting these integer
    keys gives jnp.argsort's float order exactly, on every backend, with subnormals ordered."""
    x = np.asarray(x)
    if not is_float(x.dtype):
        return x
    udt = np.dtype(f"u{x.dtype.itemsize}")
    sign = udt.type(1 << (8 * x.dtype.itemsize - 1))
    u = to_bits(x).astype(udt)
    u = np.where(u == sign, udt.type(0), u)  # -0.0 -> +0.0
    nan = np.isnan(x.astype(np.float64))  # (dtypes without an inf, float8_e4m3fn, too)
    key = np.where(u & sign, ~u, u | sign)  # order-preserving map of the sign-magnitude bits
    return np.where(nan, np.iinfo(udt).max, key).astype(udt)


def ref_argsort(x: Any, axis: int = -1, descending: bool = False) -> np.ndarray:
    """Stable argsort in the package's key order, as index_dtype() (jnp.argsort is the
    definition; see order_key for why floats go through integer keys)."""
    idx = jnp.argsort(
        jnp.asarray(order_key(x)), axis=axis, stable=True, descending=descending,
        dtype=index_dtype(),
    )
    return np.asarray(idx)


def np_argsort(x: Any, axis: int = -1, descending: bool = False) -> np.ndarray:
    """ref_argsort computed by numpy (same order keys, same stable-descending convention as
    jnp.argsort: sort the reversed axis, reverse back). Used to build sorted inputs without an
    XLA compilation per shape; outputs are still checked against ref_argsort."""
    keys = np.moveaxis(order_key(x), axis, -1)
    if descending:
        d = keys.shape[-1]
        p = (d - 1 - np.argsort(keys[..., ::-1], axis=-1, kind="stable"))[..., ::-1]
    else:
        p = np.argsort(keys, axis=-1, kind="stable")
    return np.moveaxis(p, -1, axis).astype(index_dtype())


def _inverse_perm_last(p: np.ndarray) -> np.ndarray:
    """rank with rank[..., p[..., k]] = k, along the last axis."""
    rank = np.empty_like(p)
    np.put_along_axis(rank, p, np.broadcast_to(np.arange(p.shape[-1], dtype=p.dtype), p.shape), -1)
    return rank


def ref_sort(x: Any, axis: int = -1, descending: bool = False) -> np.ndarray:
    """x sorted stably along axis in the key order (values gathered, so bits are kept): ties in
    input order in both directions (argsort's, sort_by_key's order)."""
    x = np.asarray(x)
    return np.take_along_axis(x, np_argsort(x, axis, descending), axis)


def ref_jnp_sort(x: Any, axis: int = -1, descending: bool = False) -> np.ndarray:
    """jnp.sort's result: the ascending stable sort, reversed along axis when descending (so
    ties come out in reverse input order: -0.0 / +0.0 and NaN payloads show it)."""
    up = ref_sort(x, axis, False)
    return np.flip(up, axis) if descending else up


def sort_segments(
    x: Any, cut: Any, axis: int = -1, descending: bool = False, sort_tail: bool = True
) -> np.ndarray:
    """Sorts x[..., :cut] of every row along axis; also x[..., cut:] when sort_tail, else keeps
    the tail in its (unsorted) order. cut is an int or an int array of the batch shape, clamped
    to [0, d]. Builds merge_runs inputs (sort_tail) and ragged merge inputs (not sort_tail)."""
    x = np.asarray(x)
    axis = _axis(axis, x.ndim)
    xl = np.moveaxis(x, axis, -1)
    d = xl.shape[-1]
    c = np.clip(np.broadcast_to(np.asarray(cut, dtype=np.int64), xl.shape[:-1]), 0, d)[..., None]
    rank = _inverse_perm_last(np_argsort(xl, -1, descending).astype(np.int64))
    pos = np.arange(d, dtype=np.int64)
    tail_key = rank if sort_tail else pos
    composite = np.where(pos < c, rank, d + tail_key)
    p = np.argsort(composite, axis=-1, kind="stable")
    return np.moveaxis(np.take_along_axis(xl, p, -1), -1, axis)


def ref_merge(
    a: Any,
    b: Any,
    *,
    axis: int = -1,
    descending: bool = False,
    a_length: Any = None,
    b_length: Any = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(merged, idx) per docs/contract.md: the stable merge (all of a before all of b on ties),
    idx = positions (index_dtype()) in concatenate([a, b], axis). With a_length/b_length: merge
    of the valid prefixes, then a's invalid tail, then b's invalid tail, tails in their original
    order."""
    a, b = np.asarray(a), np.asarray(b)
    axis = _axis(axis, a.ndim)
    m, n = a.shape[axis], b.shape[axis]
    c = np.concatenate([a, b], axis=axis)
    perm = ref_argsort(c, axis, descending)
    if a_length is not None or b_length is not None:
        p = np.moveaxis(perm, axis, -1).astype(np.int64)
        batch = p.shape[:-1]
        la = np.clip(np.broadcast_to(np.asarray(m if a_length is None else a_length), batch), 0, m)
        lb = np.clip(np.broadcast_to(np.asarray(n if b_length is None else b_length), batch), 0, n)
        la, lb = la[..., None].astype(np.int64), lb[..., None].astype(np.int64)
        # A subsequence of a stable sort is the stable sort of that subset: the valid elements
        # keep their relative order from perm (their rank); tails keep their positions.
        rank = _inverse_perm_last(p)
        pos = np.arange(m + n, dtype=np.int64)
        group = np.where(pos < m, np.where(pos < la, 0, 1), np.where(pos - m < lb, 0, 2))
        composite = group * (m + n) + np.where(group == 0, rank, pos)
        perm = np.moveaxis(np.argsort(composite, axis=-1, kind="stable"), -1, axis)
        perm = perm.astype(index_dtype())
    return np.take_along_axis(c, perm, axis), perm


def gather_values(a_values: Any, b_values: Any, perm: np.ndarray, axis: int) -> Any:
    """Concatenates a pytree of values with their keys' axis and gathers them by perm (the keys'
    permutation, broadcast over the values' trailing dimensions)."""

    def one(av: Any, bv: Any) -> np.ndarray:
        av, bv = np.asarray(av), np.asarray(bv)
        c = np.concatenate([av, bv], axis=axis)
        idx = perm.reshape(perm.shape + (1,) * (c.ndim - perm.ndim))
        idx = np.broadcast_to(idx, perm.shape + c.shape[perm.ndim :])
        return np.take_along_axis(c, idx, axis)

    return jax.tree.map(one, a_values, b_values)


def ref_merge_by_key(
    a_keys: Any,
    b_keys: Any,
    a_values: Any,
    b_values: Any,
    *,
    axis: int = -1,
    descending: bool = False,
    a_length: Any = None,
    b_length: Any = None,
) -> tuple[np.ndarray, Any]:
    """ref_merge's permutation (ragged rows too) applied to the keys and the value pytrees."""
    a_keys = np.asarray(a_keys)
    axis = _axis(axis, a_keys.ndim)
    keys, perm = ref_merge(a_keys, b_keys, axis=axis, descending=descending, a_length=a_length,
                           b_length=b_length)
    return keys, gather_values(a_values, b_values, perm, axis)


def ref_merge_runs(
    x: Any, split: Any, *, axis: int = -1, descending: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """merge_runs reference for x whose runs x[..., :split] and x[..., split:] are sorted: the
    stable merge of the runs is then the stable sort of x (run 1 precedes run 2 in x)."""
    del split  # the result does not depend on it when the precondition holds
    x = np.asarray(x)
    perm = ref_argsort(x, axis, descending)
    return np.take_along_axis(x, perm, axis), perm


def ref_co_rank(k: Any, a: Any, b: Any, *, descending: bool = False) -> np.ndarray:
    """For 1-D a, b: how many of the first k merged elements come from a."""
    a = np.asarray(a)
    _, perm = ref_merge(a, b, descending=descending)
    counts = np.concatenate([[0], np.cumsum(perm < a.shape[0])])
    return counts[np.asarray(k)]


def ref_is_sorted(x: Any, *, axis: int = -1, descending: bool = False) -> np.ndarray:
    """Per row (batch shape): x is sorted iff its stable argsort is the identity."""
    x = np.asarray(x)
    axis = _axis(axis, x.ndim)
    iota = np.arange(x.shape[axis]).reshape([-1 if i == axis else 1 for i in range(x.ndim)])
    return np.all(ref_argsort(x, axis, descending) == iota, axis=axis)


def sorted_keys(
    rng: np.random.Generator,
    dtype: Any,
    shape: Sequence[int],
    pattern: str = "random",
    *,
    axis: int = -1,
    descending: bool = False,
) -> np.ndarray:
    """random_keys(...) sorted along axis in the requested direction."""
    return ref_sort(random_keys(rng, dtype, shape, pattern), axis, descending)


def is_permutation_of(got: Any, *inputs: Any, axis: int = -1) -> bool:
    """got holds the same multiset of bit patterns as the inputs concatenated, row by row."""
    c = np.concatenate([np.asarray(x) for x in inputs], axis=axis)
    g = np.asarray(got)
    if g.shape != c.shape:
        return False
    return bool(np.array_equal(np.sort(to_bits(g), axis=axis), np.sort(to_bits(c), axis=axis)))
