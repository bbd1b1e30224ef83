# jnp's results bit for bit (docs/contract.md "Ordering", "Dtypes", "Signatures, weak types,
# promotion"), with x64 on and off: positions in jnp's dtypes (argsort / merge / merge_runs /
# co_rank: int32, int64 with x64; searchsorted: int32 unless a has 2**31 elements); axes of 2**31
# elements or more (abstract inputs only) trace as jnp's do and run as lax.sort, checked on small
# arrays with the routing limit lowered; weak types kept where jnp keeps them; sort(descending=True)
# is jnp.sort's (the ascending sort reversed); mixed dtypes promote as jnp.concatenate; every key
# dtype jnp sorts (int2/int4, the float8 types, float4_e2m1fn, complex) on every function that takes
# keys, checked against jnp where jnp runs them and a numpy reference of jnp's order; values
# narrower than a byte move without aborting the process (checked in a subprocess); on a GPU, the
# new key dtypes give the CPU's bits.
from __future__ import annotations

import functools
import json
import subprocess
import sys
import warnings
from typing import Any

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import jax_mergepath as jmp

pytestmark = pytest.mark.slow  # the slow tier (165 s of test time on 2 cores)

S = jax.ShapeDtypeStruct
X64 = [True, False]
X64_IDS = ["x64", "x32"]
LONG = 2**31  # an axis this long needs int64 positions


def _idx() -> np.dtype:
    """jnp.argsort's positions dtype now."""
    return np.dtype(jnp.argsort(jnp.zeros(2)).dtype)


# ------------------------------------------------------------------------ numpy references


def _jnp_dtypes(*names: str) -> list[np.dtype]:
    return [np.dtype(getattr(jnp, n)) for n in names if hasattr(jnp, n)]


SUB_BYTE_INTS = _jnp_dtypes("int2", "int4", "uint2", "uint4")
NARROW_FLOATS = _jnp_dtypes(
    "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz",
    "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn",
)  # fmt: skip
COMPLEX = [np.dtype(np.complex64), np.dtype(np.complex128)]
NEW_KEY_DTYPES = SUB_BYTE_INTS + NARROW_FLOATS + COMPLEX


def _nbits(dtype: Any) -> int:
    return jax.dtypes.itemsize_bits(np.dtype(dtype))


def _float_keys(v: np.ndarray, nan_first: bool) -> list[np.ndarray]:
    """jnp's float order as (class, value): NaN one class after (or before) every number,
    -0.0 == +0.0, every NaN equal."""
    nan = np.isnan(v)
    cls = np.where(nan, -1 if nan_first else 1, 0).astype(np.float64)
    return [cls, np.where(nan | (v == 0), 0.0, v)]


def order_keys(x: np.ndarray) -> list[np.ndarray]:
    """Lexicographic keys (first most significant) of jnp's order of x: integers by value;
    floats by value with NaN last (first for the fnuz float8 types, whose one NaN XLA orders
    first); complex by real, then imaginary part."""
    dt = x.dtype
    if dt.kind == "c":
        return _float_keys(x.real.astype(np.float64), False) + _float_keys(
            x.imag.astype(np.float64), False
        )
    if jnp.issubdtype(dt, jnp.floating):
        return _float_keys(x.astype(np.float64), dt.name.endswith("fnuz"))
    return [x.astype(np.float64)]  # (the integer keys tested here fit a float64 exactly)


def ref_argsort(x: np.ndarray, descending: bool = False) -> np.ndarray:
    """Stable argsort along the last axis in jnp's order; ties in input order both ways."""
    keys = order_keys(x)
    if descending:
        keys = [-k for k in keys]
    return np.lexsort(keys[::-1], axis=-1)


def ref_sort(x: np.ndarray, descending: bool = False) -> np.ndarray:
    """jnp.sort: the ascending stable sort (input elements, so bits kept), reversed when
    descending."""
    up = np.take_along_axis(x, ref_argsort(x), -1)
    return up[..., ::-1] if descending else up


def dense_ranks(*arrays: np.ndarray) -> list[np.ndarray]:
    """Integers ordered as jnp orders the elements of all the 1-D arrays together (equal keys,
    equal ranks)."""
    cat = np.concatenate(arrays)
    keys = np.stack(order_keys(cat), axis=-1)
    _, inv = np.unique(keys, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    return np.split(inv, np.cumsum([len(a) for a in arrays])[:-1])


def bits(x: Any) -> np.ndarray:
    """x's elements as unsigned integers of its bits (complex: both parts; sub-byte ints: their
    values, which are one-to-one with their bits)."""
    x = np.ascontiguousarray(x)
    if x.dtype.kind == "c":
        return x.view(f"u{x.dtype.itemsize // 2}")
    if _nbits(x.dtype) < 8:
        return x.view(np.uint8) if jnp.issubdtype(x.dtype, jnp.floating) else x.astype(np.int16)
    return x.view(f"u{x.dtype.itemsize}") if x.dtype.kind not in "iub" else x


def assert_same(got: Any, want: Any, what: str) -> None:
    """Same dtype, same shape, same bits."""
    g, w = np.asarray(got), np.asarray(want)
    assert g.dtype == w.dtype, f"{what}: dtype {g.dtype} != {w.dtype}"
    assert g.shape == w.shape, f"{what}: shape {g.shape} != {w.shape}"
    bad = np.flatnonzero(bits(g).reshape(-1) != bits(w).reshape(-1))
    assert bad.size == 0, f"{what}: {bad.size} elements differ, first at {bad[0]}"


def all_values(dtype: np.dtype, rng: np.random.Generator) -> np.ndarray:
    """Every value of a narrow dtype (every bit pattern) twice, or complex numbers whose parts
    mix -inf, -1.5, -0.0, +0.0, 1.5, inf and NaNs of two payloads and both signs; shuffled."""
    if dtype.kind == "c":
        part = np.dtype(f"f{dtype.itemsize // 2}")
        nans = {4: [0x7FC00001, 0xFFC00000], 8: [0x7FF8000000000001, 0xFFF8000000000000]}
        special = np.concatenate([
            np.array([-np.inf, -1.5, -0.0, 0.0, 1.5, np.inf], part),
            np.array(nans[part.itemsize], f"u{part.itemsize}").view(part),
        ])  # fmt: skip
        re, im = np.meshgrid(special, special)
        vals = np.empty(re.size, dtype)
        vals.real, vals.imag = re.reshape(-1), im.reshape(-1)
    elif jnp.issubdtype(dtype, jnp.floating):
        vals = np.arange(2 ** _nbits(dtype), dtype=np.uint8).view(dtype)
    else:
        info = ml_dtypes.iinfo(dtype)
        vals = np.arange(int(info.min), int(info.max) + 1).astype(dtype)
    vals = np.concatenate([vals, vals])
    return vals[rng.permutation(vals.size)]


def no_f16_subnormals(x: np.ndarray) -> np.ndarray:
    """x with numbers below float16's smallest normal (zeros aside) replaced by 1: XLA:CPU
    compares the narrow floats as float16 with subnormals flushed to zero (as it does float32's),
    where the package orders them as the numbers they are."""
    if x.dtype.kind == "c" or not jnp.issubdtype(x.dtype, jnp.floating):
        return x
    mag = np.abs(x.astype(np.float64))
    return np.where((mag > 0) & (mag < 2.0**-14), np.array(1.0, x.dtype), x)


def _key_cases() -> list:
    return [
        pytest.param(dt, x64, id=f"{dt.name}-{'x64' if x64 else 'x32'}")
        for dt in NEW_KEY_DTYPES
        for x64 in X64
        if x64 or dt != np.complex128
    ]


# ------------------------------------------------------------------------ 1. index dtypes


def test_index_dtypes_follow_jnp():
    """Positions come out in jnp.argsort's dtype (int32, int64 with x64 on); searchsorted's in
    jnp.searchsorted's (int32 for a of fewer than 2**31 elements), with x64 on and off."""
    for x64 in X64:
        with jax.enable_x64(x64):
            x = jnp.array([3.0, 1.0, 2.0, 1.0])
            a, b = jnp.sort(x[:2]), jnp.sort(x[2:])
            want = np.dtype(jnp.argsort(x).dtype)
            assert want == (np.int64 if x64 else np.int32)
            outs = {
                "argsort": jmp.argsort(x),
                "argsort desc": jmp.argsort(x, descending=True),
                "merge": jmp.merge(a, b, return_indices=True)[1],
                "merge ragged": jmp.merge(a, b, return_indices=True, a_length=1)[1],
                "merge empty": jmp.merge(a, b[:0], return_indices=True)[1],
                "merge_runs": jmp.merge_runs(jnp.concatenate([a, b]), 2, return_indices=True)[1],
                "co_rank": jmp.co_rank(jnp.arange(5), a, b),
                "co_rank int": jmp.co_rank(3, a, b),
                "argsort 1 element": jmp.argsort(x[:1]),
            }
            for name, out in outs.items():
                assert out.dtype == want, (x64, name, out.dtype)
            np.testing.assert_array_equal(jmp.argsort(x), jnp.argsort(x, stable=True))
            s = jnp.sort(x)
            for v in (x, 2.5, jnp.zeros((0,))):
                assert jmp.searchsorted(s, v).dtype == jnp.searchsorted(s, v).dtype, (x64, v)
                assert jmp.searchsorted(s, v, sorted_v=True).dtype == np.int32


def test_index_dtypes_under_jit_vmap_and_eval_shape():
    for x64 in X64:
        with jax.enable_x64(x64):
            want = _idx()
            x = jnp.arange(12.0).reshape(3, 4)[:, ::-1]
            assert jax.jit(jmp.argsort)(x).dtype == want
            assert jax.vmap(jmp.argsort)(x).dtype == want
            out = jax.eval_shape(functools.partial(jmp.merge, return_indices=True),
                                 S((3, 5), jnp.float32), S((3, 4), jnp.float32))  # fmt: skip
            assert out[1].dtype == want
            assert jax.eval_shape(jmp.co_rank, S((3, 2), jnp.int32), S((3, 5), jnp.int8),
                                  S((3, 4), jnp.int8)).dtype == want  # fmt: skip
            # a batched search keeps int32, as jnp.searchsorted of each row
            assert jax.vmap(jmp.searchsorted)(x, x).dtype == np.int32


# ------------------------------------------------------------------------ 2. long axes


def _trace(fn, *specs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (x64 off: jax's "int64 is not available" warning)
        return jax.eval_shape(fn, *specs)


def _avals(tree) -> list:
    return [(tuple(a.shape), np.dtype(a.dtype)) for a in jax.tree.leaves(tree)]


@pytest.mark.parametrize("x64", X64, ids=X64_IDS)
def test_long_axes_trace_as_jnp(x64):
    """Axes of 2**31 elements: the shapes and dtypes jnp gives, or the exception jnp raises
    (abstract inputs: nothing is materialised)."""
    f32, i8 = S((LONG,), jnp.float32), S((2, LONG), jnp.int8)
    with jax.enable_x64(x64):
        pairs = [
            (jmp.sort, jnp.sort, (f32,)),
            (functools.partial(jmp.sort, descending=True),
             functools.partial(jnp.sort, descending=True), (f32,)),
            (jmp.argsort, jnp.argsort, (i8,)),
            (functools.partial(jmp.argsort, descending=True, axis=1),
             functools.partial(jnp.argsort, descending=True, axis=1), (i8,)),
            (jmp.lax_sort, jax.lax.sort, (f32,)),
            (lambda k, v: jmp.lax_sort((k, v), num_keys=2),
             lambda k, v: jax.lax.sort((k, v), num_keys=2), (i8, i8)),
            (jmp.sort_by_key, jax.lax.sort_key_val, (f32, f32)),
            (jmp.searchsorted, jnp.searchsorted, (S((3,), jnp.float32), f32)),
        ]  # fmt: skip
        for ours, theirs, specs in pairs:
            assert _avals(_trace(ours, *specs)) == _avals(_trace(theirs, *specs))
        a, v = S((LONG,), jnp.float32), S((3,), jnp.float32)
        if x64:
            assert _avals(_trace(jmp.searchsorted, a, v)) == _avals(_trace(jnp.searchsorted, a, v))
        else:
            for fn in (jmp.searchsorted, jnp.searchsorted):
                with pytest.raises(OverflowError):
                    _trace(fn, a, v)


def test_long_merges_need_x64():
    """The merges (no jnp twin) run with int64 positions with x64 on and raise a ValueError that
    says to turn it on with it off."""
    a, b = S((2, LONG - 3), jnp.float32), S((2, 5), jnp.float32)
    calls = {
        "merge": lambda a, b: jmp.merge(a, b, return_indices=True),
        "ragged": lambda a, b: jmp.merge(a, b, a_length=jnp.array([1, LONG - 3])),
        "merge_by_key": lambda a, b: jmp.merge_by_key(a, b, {"v": a}, {"v": b}),
        "co_rank": lambda a, b: jmp.co_rank(np.array([[LONG + 1], [3]]), a, b),
        "merge_runs": lambda a, b: jmp.merge_runs(jnp.concatenate([a, b], -1), 7,
                                                  return_indices=True),
    }  # fmt: skip
    with jax.enable_x64(True):
        shapes = {name: _avals(_trace(fn, a, b)) for name, fn in calls.items()}
    assert shapes["merge"] == [((2, LONG + 2), np.float32), ((2, LONG + 2), np.int64)]
    assert shapes["co_rank"] == [((2, 1), np.int64)]
    assert shapes["merge_runs"][1] == ((2, LONG + 2), np.int64)
    with jax.enable_x64(False):
        for name, fn in calls.items():
            with pytest.raises(ValueError, match="jax_enable_x64"):
                _trace(fn, a, b)
            assert name


def test_long_axes_lower_to_xla_sort():
    """With x64 on, a long axis lowers to XLA's sort (no kernel call) with int64 positions."""
    with jax.enable_x64(True):
        text = jax.jit(jmp.argsort).lower(S((LONG,), jnp.float16)).as_text()
        assert "jmp_sort" not in text and "stablehlo.sort" in text and "i64" in text
        short = jax.jit(jmp.argsort).lower(S((LONG - 1,), jnp.float16)).as_text()
        assert "jmp_sort" in short and "stablehlo.sort" not in short


@pytest.mark.parametrize("x64", X64, ids=X64_IDS)
@pytest.mark.parametrize("dtype", [np.float32, np.int16, np.complex64, jnp.float8_e4m3fnuz],
                         ids=lambda d: np.dtype(d).name)  # fmt: skip
def test_long_axis_way_is_bit_identical(monkeypatch, rng, dtype, x64):
    """The way long axes run (lax.sort of order keys, a binary search in jnp), forced on small
    arrays by lowering its threshold, gives the kernels' results bit for bit."""
    from jax_mergepath import _dispatch
    from jax_mergepath._dtypes import definitely

    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        x = rng.integers(-5, 5, 40).astype(dtype)
    elif dtype.kind == "c" or dtype.itemsize == 1:
        x = all_values(dtype, rng)[:40]
    else:
        x = rng.choice(np.array([-0.0, 0.0, 1.5, -2.0, np.nan, 7.0]), 40).astype(dtype)
    x2 = np.stack([x, x[::-1]])
    s = ref_sort(x2)
    calls = {
        "sort": lambda: jmp.sort(x2),
        "sort desc": lambda: jmp.sort(x2, descending=True),
        "argsort desc": lambda: jmp.argsort(x2, descending=True),
        "sort_by_key": lambda: jmp.sort_by_key(x2, {"i": np.arange(80).reshape(2, 40),
                                                    "t": np.ones((2, 40, 2))}),
        "lax_sort": lambda: jmp.lax_sort((x2, x2[::-1], np.arange(80).reshape(2, 40)),
                                         num_keys=2),
        "merge": lambda: jmp.merge(s[:, :15], s[:, 15:], return_indices=True),
        "merge ragged": lambda: jmp.merge(s[:, :15], s[:, 15:], return_indices=True,
                                          a_length=np.array([3, 15]), b_length=20),
        "merge_by_key": lambda: jmp.merge_by_key(s[:, :15], s[:, 15:], s[:, :15], s[:, 15:]),
        "merge_runs": lambda: jmp.merge_runs(s, np.array([15, 30]), return_indices=True),
        "co_rank": lambda: jmp.co_rank(np.tile(np.arange(41), (2, 1)), s[:, :15], s[:, 15:]),
        "searchsorted": lambda: jmp.searchsorted(s, x2, "right"),
        "is_sorted": lambda: (jmp.is_sorted(s), jmp.is_sorted(x2)),
    }  # fmt: skip
    with jax.enable_x64(x64):
        for name, call in calls.items():
            kernels = call()
            monkeypatch.setattr(_dispatch, "_fits", lambda length: not definitely(
                lambda: length >= 8))
            long_way = call()
            monkeypatch.undo()
            for k, w in zip(jax.tree.leaves(kernels), jax.tree.leaves(long_way), strict=True):
                assert_same(w, k, f"{name} {dtype.name}")


# ------------------------------------------------------------------------ 3. weak types


@pytest.mark.parametrize("x64", X64, ids=X64_IDS)
def test_weak_types_kept_as_jnp(x64):
    """Outputs are weakly typed where jnp's / lax's are: sorts and merges of weakly typed
    arrays (a Python scalar's dtype) stay weak, so they give way in promotion."""
    with jax.enable_x64(x64):
        w = jnp.asarray(np.array([3, 1, 2, 1], np.int32)) * 1.0  # a weakly typed float array
        wc = jnp.asarray(np.array([3, 1, 2, 1], np.int32)) * 1j
        assert w.weak_type and wc.weak_type
        bf = jnp.ones(4, jnp.bfloat16)
        assert (jmp.sort(w) + bf).dtype == jnp.bfloat16
        cases = {
            "sort": (jmp.sort(w), jnp.sort(w)),
            "sort desc": (jmp.sort(w, descending=True), jnp.sort(w, descending=True)),
            "sort complex": (jmp.sort(wc), jnp.sort(wc)),
            "argsort": (jmp.argsort(w), jnp.argsort(w)),
            "lax_sort": (jmp.lax_sort(w), jax.lax.sort(w)),
            "lax_sort 2": (jmp.lax_sort((w, w), num_keys=2), jax.lax.sort((w, w), num_keys=2)),
            "sort_by_key": (jmp.sort_by_key(w, w), jax.lax.sort_key_val(w, w)),
            "sort_by_key gathered": (jmp.sort_by_key(w, (w, w)), jax.lax.sort((w, w, w))),
            "merge": (jmp.merge(w[:2], w[2:]), jnp.concatenate([w[:2], w[2:]])),
            "merge strong": (jmp.merge(w[:2], bf[2:]), jnp.concatenate([w[:2], bf[2:]])),
            "merge_by_key": (jmp.merge_by_key(w[:2], w[2:], w[:2], w[2:]),
                             (jnp.concatenate([w[:2], w[2:]]),) * 2),
            "merge_runs": (jmp.merge_runs(w, 2), jnp.sort(w)),
            "searchsorted": (jmp.searchsorted(w, w), jnp.searchsorted(w, w)),
        }  # fmt: skip
        for name, (ours, theirs) in cases.items():
            got = [(a.dtype, a.weak_type) for a in jax.tree.leaves(ours)]
            want = [(a.dtype, a.weak_type) for a in jax.tree.leaves(theirs)]
            assert got == want, (name, got, want)
        assert jax.jit(jmp.sort)(w).weak_type and jax.vmap(jmp.sort)(w[None]).weak_type


# ------------------------------------------------------------------------ 4. descending sort


@pytest.mark.parametrize(
    ("dtype", "x64"),
    [pytest.param(np.dtype(dt), x64, id=f"{np.dtype(dt).name}-{'x64' if x64 else 'x32'}")
     for dt in (np.float16, jnp.bfloat16, np.float32, np.float64) for x64 in X64
     if x64 or dt != np.float64],
)  # fmt: skip
def test_descending_sort_is_jnp_sort(rng, dtype, x64):
    """sort(descending=True) returns jnp.sort(descending=True) bit for bit: the ascending sort
    reversed (ties -- -0.0 / +0.0, NaN payloads -- in reverse input order); argsort keeps ties in
    input order as jnp.argsort(stable=True); integer keys sort descending in the kernel."""
    nbits = 8 * np.dtype(dtype).itemsize
    nan = {16: [0x7E01, 0xFE00, 0x7E00], 32: [0x7FC00001, 0xFFC00000], 64: [0x7FF8000000000001]}
    pool = np.concatenate([np.array([-0.0, 0.0, 1.0, -1.0], np.float64).astype(dtype),
                           np.array(nan[nbits], f"u{nbits // 8}").view(dtype)])  # fmt: skip
    if np.dtype(dtype) == jnp.bfloat16:  # (XLA:CPU canonicalizes bfloat16 NaN payloads)
        pool = pool[:-1]
    with jax.enable_x64(x64):
        x = rng.choice(pool, (3, 301))
        got = jmp.sort(x, descending=True)
        assert_same(got, jnp.sort(x, descending=True), "sort desc vs jnp")
        assert_same(got, np.asarray(jmp.sort(x))[..., ::-1], "sort desc = reversed ascending")
        assert_same(jax.jit(functools.partial(jmp.sort, axis=0, descending=True))(x.T),
                    jnp.sort(x.T, axis=0, descending=True), "jit sort desc axis 0")  # fmt: skip
        assert_same(jmp.argsort(x, descending=True),
                    jnp.argsort(x, descending=True, stable=True), "argsort desc")  # fmt: skip
        # sort_by_key and the merges keep ties in input order in both directions
        k, v = jmp.sort_by_key(x, np.broadcast_to(np.arange(301), x.shape), descending=True)
        perm = np.asarray(jnp.argsort(x, descending=True, stable=True))
        assert_same(v, perm, "sort_by_key desc ties")
        assert_same(k, np.take_along_axis(x, perm, -1), "sort_by_key desc keys")
    ints = jax.jit(functools.partial(jmp.sort, descending=True)).lower(np.arange(9)).as_text()
    floats = jax.jit(functools.partial(jmp.sort, descending=True)).lower(x).as_text()
    assert "stablehlo.reverse" not in ints and "stablehlo.reverse" in floats


# ------------------------------------------------------------------------ 5. promotion


@pytest.mark.parametrize("x64", X64, ids=X64_IDS)
def test_merges_promote_as_concatenate(x64):
    """Mixed dtypes promote as jnp.concatenate promotes them (weak types included) in merge,
    merge_by_key (keys and values), co_rank and searchsorted, instead of raising."""
    pairs = [
        (np.array([1, 4, 9], np.int8), np.array([2.5, 4.0], np.float32)),
        (np.array([1, 4, 9], np.uint32), np.array([-3, 4], np.int32)),
        (np.array([False, True]), np.array([-1, 0, 3], np.int8)),
        (np.array([0.5, 2.0], jnp.bfloat16), np.array([1.0, 3.0], np.float16)),
        (np.array([1.0, 2.0], np.float32), np.array([1 + 1j, 2 - 1j], np.complex64)),
        (np.array([-1, 3], np.int8), np.array([2, 200], np.uint8)),
    ]
    with jax.enable_x64(x64):
        for a, b in pairs:
            a, b = jnp.asarray(a), jnp.asarray(b)
            c = jnp.concatenate([a, b])
            got, idx = jmp.merge(a, b, return_indices=True)
            want = jnp.take(c, jnp.argsort(c, stable=True))
            assert_same(got, want, f"merge {a.dtype} {b.dtype}")
            assert_same(idx, jnp.argsort(c, stable=True), "merge indices")
            k, v = jmp.merge_by_key(a, b, b[:1].repeat(a.size), a[:1].repeat(b.size))
            assert_same(k, want, "merge_by_key keys")
            assert v.dtype == jnp.concatenate([b[:1], a[:1]]).dtype
            i = jmp.co_rank(jnp.arange(c.size + 1), a, b)
            want_i = np.concatenate([[0], np.cumsum(np.asarray(idx) < a.size)]).astype(_idx())
            assert_same(i, want_i, "co_rank")
            s = jnp.sort(c)
            assert_same(jmp.searchsorted(s, a), jnp.searchsorted(s, a), "searchsorted")
        # weak types: a weakly typed float beside int8 keeps int8's kind rules (float32 weak)
        w = jnp.asarray(np.array([1, 3], np.int32)) * 1.0
        out = jmp.merge(w, jnp.array([2.0], jnp.float16))
        assert (out.dtype, out.weak_type) == (jnp.float16, False)
        assert jmp.merge(w, w).weak_type
        assert_same(jmp.searchsorted(jnp.arange(5), 2.5), jnp.searchsorted(jnp.arange(5), 2.5),
                    "searchsorted python float")  # fmt: skip
        # where jnp.concatenate has no promotion, the same TypePromotionError
        i4, u8 = jnp.array([-1, 3], jnp.int4), jnp.array([2, 200], jnp.uint8)
        for fn in (jnp.concatenate, lambda ab: jmp.merge(*ab)):
            with pytest.raises(jax.dtypes.TypePromotionError, match="int4"):
                fn((i4, u8))


# ------------------------------------------------------------------------ 6. every key dtype


@pytest.mark.parametrize(("dtype", "x64"), _key_cases())
def test_sort_family_every_key_dtype(rng, dtype, x64):
    """sort, argsort (both directions), sort_by_key and lax_sort on every value of the dtype
    (every bit pattern of the narrow ones, twice), against jnp where jnp runs them and the numpy
    reference of jnp's order everywhere; bits (NaN payloads, -0.0) kept."""
    x = np.stack([all_values(dtype, rng), all_values(dtype, rng)])
    with jax.enable_x64(x64):
        xj = jnp.asarray(x)
        assert xj.dtype == dtype
        for desc in (False, True):
            assert_same(jmp.sort(xj, descending=desc), ref_sort(x, desc), f"sort desc={desc}")
            assert_same(jmp.argsort(xj, descending=desc),
                        ref_argsort(x, desc).astype(_idx()), f"argsort desc={desc}")  # fmt: skip
            if _nbits(dtype) != 2:  # (XLA:CPU's own argsort of int2 / uint2 fails to compile)
                xn = no_f16_subnormals(x)
                # jnp's on the CPU: XLA:GPU fails to compile its sort of sub-byte keys.
                with jax.default_device(jax.devices("cpu")[0]):
                    want = np.asarray(jnp.argsort(jnp.asarray(xn), descending=desc, stable=True))
                assert_same(jmp.argsort(jnp.asarray(xn), descending=desc), want, "argsort vs jnp")
            pos = np.broadcast_to(np.arange(x.shape[1]), x.shape)
            k, v = jmp.sort_by_key(xj, {"i": pos, "x": xj}, descending=desc)
            perm = ref_argsort(x, desc)
            assert_same(k, np.take_along_axis(x, perm, -1), "sort_by_key keys")
            assert_same(v["x"], np.take_along_axis(x, perm, -1), "sort_by_key values")
            assert_same(v["i"], perm.astype(v["i"].dtype), "sort_by_key positions")
        # jnp.sort's own bits, where XLA:CPU keeps them (it rewrites the NaN payloads of the
        # float8 types with infinities), else its order and values
        with jax.default_device(jax.devices("cpu")[0]):  # (XLA:GPU: see the argsort above)
            theirs = np.asarray(jnp.sort(no_f16_subnormals(x)))
        ours = np.asarray(jmp.sort(no_f16_subnormals(x)))
        if _nbits(dtype) != 2 and dtype.name not in ("float8_e3m4", "float8_e4m3", "float8_e5m2"):
            assert_same(ours, theirs, "sort vs jnp.sort")
        # lax_sort: the dtype as first or second key, and moved as an operand
        ints = rng.integers(0, 3, x.shape).astype(np.int8)
        got = jmp.lax_sort((ints, xj, xj), num_keys=2)
        perm = np.lexsort([*order_keys(x)[::-1], ints.astype(np.float64)], axis=-1)
        for g, w in zip(got, (ints, x, x), strict=True):
            assert_same(g, np.take_along_axis(w, perm, -1), "lax_sort")
        got = jmp.lax_sort((xj, ints))
        assert_same(got[0], ref_sort(x), "lax_sort one key")


@pytest.mark.parametrize(("dtype", "x64"), _key_cases())
def test_merge_family_every_key_dtype(rng, dtype, x64):
    """merge (with indices, ragged, descending), merge_by_key, merge_runs, co_rank,
    searchsorted and is_sorted on every value of the dtype, against the numpy reference."""
    x = all_values(dtype, rng)
    m = x.size // 3
    with jax.enable_x64(x64):
        for desc in (False, True):
            a = np.take(x[:m], ref_argsort(x[:m], desc))
            b = np.take(x[m:], ref_argsort(x[m:], desc))
            c = np.concatenate([a, b])
            perm = ref_argsort(c, desc)  # the stable merge of sorted a and b
            got, idx = jmp.merge(a, b, return_indices=True, descending=desc)
            assert_same(got, c[perm], f"merge desc={desc}")
            assert_same(idx, perm.astype(_idx()), "merge indices")
            k, v = jmp.merge_by_key(a, b, np.arange(m), np.arange(m, x.size), descending=desc)
            assert_same(k, c[perm], "merge_by_key keys")
            assert_same(v, perm.astype(v.dtype), "merge_by_key positions as values")
            assert_same(jmp.merge_by_key(a, b, a, b, descending=desc)[1], c[perm],
                        "merge_by_key same-dtype values")  # fmt: skip
            got, idx = jmp.merge_runs(c, m, return_indices=True, descending=desc)
            assert_same(got, c[perm], "merge_runs")
            want = np.concatenate([[0], np.cumsum(perm < m)])
            assert_same(jmp.co_rank(np.arange(x.size + 1), a, b, descending=desc),
                        want.astype(_idx()), "co_rank")  # fmt: skip
            assert bool(jmp.is_sorted(a, descending=desc))
            assert bool(jmp.is_sorted(c[perm], descending=desc))
            # ragged: the merge of the valid prefixes, then a's tail, then b's
            la, lb = m // 2, (x.size - m) // 3
            got = jmp.merge(a, b, a_length=la, b_length=lb, descending=desc)
            valid = np.concatenate([a[:la], b[:lb]])
            want = np.concatenate([valid[ref_argsort(valid, desc)], a[la:], b[lb:]])
            assert_same(got, want, "ragged merge")
        assert not bool(jmp.is_sorted(x))
        # searchsorted: counts of a's elements before (left) / not after (right) each query
        a = ref_sort(x[:m])
        ra, rv = dense_ranks(a, x)
        for side in ("left", "right"):
            want = np.searchsorted(ra, rv, side=side).astype(np.int32)
            assert_same(jmp.searchsorted(a, x, side), want, f"searchsorted {side}")
            q = ref_sort(x)
            rq = dense_ranks(a, q)[1]
            want_q = np.searchsorted(ra, rq, side=side).astype(np.int32)
            assert_same(jmp.searchsorted(a, q, side, sorted_v=True), want_q, "sorted_v")


@pytest.mark.parametrize("x64", X64, ids=X64_IDS)
def test_new_key_dtypes_under_transforms(rng, x64):
    """jit and vmap give the eager results; grad through a float8 sort follows the permutation
    as jnp.sort's does; complex keys differentiate as jnp.sort's."""
    with jax.enable_x64(x64):
        x = jnp.asarray(all_values(np.dtype(jnp.float8_e4m3fn), rng).reshape(4, 128))
        assert_same(jax.jit(jmp.sort)(x), jmp.sort(x), "jit float8")
        assert_same(jax.vmap(jmp.argsort)(x), jmp.argsort(x), "vmap float8")
        c = jnp.asarray(all_values(np.dtype(np.complex64), rng).reshape(2, 64))
        assert_same(jax.vmap(jmp.sort, in_axes=1, out_axes=1)(c.T), jmp.sort(c).T, "vmap complex")
        f = jnp.asarray(rng.permutation(64).astype(np.float32) / 4).astype(jnp.float8_e5m2)
        w = jnp.asarray(rng.standard_normal(64).astype(np.float32))

        def loss(sort, y):
            return (sort(y).astype(jnp.float32) * w).sum()

        assert_same(jax.grad(functools.partial(loss, jmp.sort))(f),
                    jax.grad(functools.partial(loss, jnp.sort))(f), "grad float8")  # fmt: skip
        z = jnp.asarray(rng.standard_normal(64) + 1j * rng.standard_normal(64), jnp.complex64)
        wz = jnp.asarray(rng.standard_normal(64).astype(np.float32))

        def closs(sort, y):
            return (jnp.real(sort(y)) * wz + jnp.imag(sort(y))).sum()

        assert_same(jax.grad(functools.partial(closs, jmp.sort))(z.real),
                    jax.grad(functools.partial(closs, jnp.sort))(z.real), "grad real keys")
        g = jax.grad(functools.partial(closs, jmp.sort), holomorphic=False)
        assert_same(g(z), jax.grad(functools.partial(closs, jnp.sort))(z), "grad complex")


def test_key_dtypes_are_the_ones_jnp_sorts():
    """Every key dtype jnp exposes traces on every function that takes keys; the float6 types,
    which XLA cannot hold, raise a TypeError naming the dtype."""
    fns = {
        "sort": jmp.sort, "argsort": jmp.argsort, "is_sorted": jmp.is_sorted,
        "lax_sort": jmp.lax_sort, "sort_by_key": lambda x: jmp.sort_by_key(x, x),
        "merge": lambda x: jmp.merge(x, x), "merge_by_key": lambda x: jmp.merge_by_key(x, x, x, x),
        "merge_runs": lambda x: jmp.merge_runs(x, 2), "co_rank": lambda x: jmp.co_rank(3, x, x),
        "searchsorted": lambda x: jmp.searchsorted(x, x),
    }  # fmt: skip
    for dt in NEW_KEY_DTYPES:
        for name, fn in fns.items():
            out = jax.eval_shape(fn, S((2, 5), dt))
            assert all(o.shape[0] == 2 for o in jax.tree.leaves(out)), (name, dt)
    for name in ("float6_e2m3fn", "float6_e3m2fn"):
        if hasattr(jnp, name):
            for fn in fns.values():
                with pytest.raises(TypeError, match=name):
                    jax.eval_shape(fn, S((2, 5), getattr(jnp, name)))


# ------------------------------------------------------------------------ 7. sub-byte payloads

_PAYLOAD_SCRIPT = r"""
import json, sys
import jax, jax.numpy as jnp, numpy as np
import jax_mergepath as jmp
out = {}
keys = jnp.array([3, 1, 2, 0, 1, 3, 2, 0])
for name in json.loads(sys.argv[1]):
    dt = jnp.dtype(getattr(jnp, name))
    vals = jax.lax.bitcast_convert_type(
        jnp.arange(8, dtype=jnp.uint8).astype(f"uint{jax.dtypes.itemsize_bits(dt)}"), dt
    ) if jnp.issubdtype(dt, jnp.floating) else jnp.arange(8).astype(dt)
    bits = lambda v: np.asarray(v).astype(np.int16).tolist() if not jnp.issubdtype(
        v.dtype, jnp.floating) else np.asarray(v).view(np.uint8).tolist()
    k, v = jmp.sort_by_key(keys, vals)
    _, t = jmp.sort_by_key(keys, jnp.stack([vals, vals], -1))
    _, mv = jmp.merge_by_key(keys[:4].sort(), keys[4:].sort(), vals[:4], vals[4:])
    _, mt = jmp.merge_by_key(keys[:4].sort(), keys[4:].sort(), vals[:4, None], vals[4:, None])
    lk, lv = jmp.lax_sort((keys, vals))
    out[name] = [bits(vals), bits(v), bits(t[:, 1]), bits(mv), bits(mt[:, 0]), bits(lv),
                 str(v.dtype), str(mt.dtype)]
print("RESULT" + json.dumps(out))
"""


def test_sub_byte_payloads_move_without_aborting():
    """Values narrower than a byte (int2, uint2, int4, uint4, float4_e2m1fn) move with their
    keys in sort_by_key, merge_by_key and lax_sort, in the kernel or gathered, with their bits
    (run in a subprocess: XLA:CPU aborted the process on an int2 payload)."""
    names = [n for n in ("int2", "uint2", "int4", "uint4", "float4_e2m1fn") if hasattr(jnp, n)]
    proc = subprocess.run(
        [sys.executable, "-c", _PAYLOAD_SCRIPT, json.dumps(names)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.split("RESULT", 1)[1])
    keys = np.array([3, 1, 2, 0, 1, 3, 2, 0])
    perm = np.argsort(keys, kind="stable")
    a, b = np.sort(keys[:4]), np.sort(keys[4:])
    mperm = np.argsort(np.concatenate([a, b]), kind="stable")
    for name in names:
        vals, v, t, mv, mt, lv, vdt, mdt = result[name]
        vals = np.array(vals)
        assert vdt == name and mdt == name
        assert v == vals[perm].tolist() and t == v and lv == v, name
        assert mv == vals[mperm].tolist() and mt == mv, name


# ------------------------------------------------------------------------ CPU / GPU parity


@pytest.mark.requires_gpu
@pytest.mark.parametrize("dtype", NEW_KEY_DTYPES, ids=lambda d: d.name)
def test_new_key_dtypes_cpu_gpu_bit_identical(rng, dtype):
    """The dtype mapping runs in jnp on both backends: the GPU gives the CPU's bits, positions
    included, and the numpy reference's order (on the GPU as well, XLA's own sort may order
    float8 subnormals or rewrite NaN payloads: the reference is the contract)."""
    x = np.stack([all_values(dtype, rng) for _ in range(3)])
    a = ref_sort(x[:, : x.shape[1] // 2])
    b = ref_sort(x[:, x.shape[1] // 2 :])

    ab = np.concatenate([a, b], -1)  # (XLA:GPU aborts the process on a concatenate of int2)

    def calls(x, a, b, ab):
        return (
            jmp.sort(x), jmp.sort(x, descending=True), jmp.argsort(x, descending=True),
            jmp.sort_by_key(x, x), jmp.lax_sort((x, x), num_keys=2),
            jmp.merge(a, b, return_indices=True), jmp.merge_runs(ab, a.shape[-1]),
            jmp.co_rank(np.arange(x.shape[1] + 1)[None].repeat(3, 0), a, b),
            jmp.searchsorted(a, x), jmp.is_sorted(a),
        )  # fmt: skip

    outs = {}
    for platform in ("cpu", "gpu"):
        device = jax.devices(platform)[0]
        args = jax.device_put((x, a, b, ab), device)
        with jax.default_device(device):
            outs[platform] = jax.tree.map(np.asarray, calls(*args))
    for c, g in zip(jax.tree.leaves(outs["cpu"]), jax.tree.leaves(outs["gpu"]), strict=True):
        assert_same(g, c, f"GPU vs CPU {dtype.name}")
    assert_same(outs["gpu"][0], ref_sort(x), "GPU sort vs reference")
