# What goes IN (test_dropin_surface.py) meets what comes OUT (test_dropin_results.py): the jnp /
# lax arguments (axis=None, positional axis, stable, sorter, sort_key_val, merge_by_key's lengths)
# and check_sorted_inputs with every key dtype (sub-byte integers, the float8 types, float4,
# complex), jnp's index dtypes and promotion, and long axes (abstract inputs only: nothing that
# long runs here).
from __future__ import annotations

import functools
import re
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import checkify

import jax_mergepath as jmp

pytestmark = pytest.mark.slow  # the slow tier (98 s of test time on 2 cores)

S = jax.ShapeDtypeStruct
LONG = 2**31  # an axis this long needs int64 positions


def _jnp_dtypes(*names: str) -> list[np.dtype]:
    return [np.dtype(getattr(jnp, n)) for n in names if hasattr(jnp, n)]


NEW_KEY_DTYPES = [
    *_jnp_dtypes("int2", "int4", "uint2", "uint4"),
    *_jnp_dtypes(
        "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz",
        "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn",
    ),
    np.dtype(np.complex64), np.dtype(np.complex128), np.dtype(jnp.bfloat16), np.dtype(np.int32),
]  # fmt: skip


def _increasing(dtype: np.dtype) -> jax.Array:
    """Four keys of dtype in strictly increasing key order (every dtype holds them exactly)."""
    if dtype.kind == "c":
        return jnp.array([0, 1j, 1, 1 + 1j], dtype)  # by real part, then imaginary part
    if jnp.issubdtype(dtype, jnp.signedinteger):
        return jnp.array([-2, -1, 0, 1], dtype)
    if jnp.issubdtype(dtype, jnp.unsignedinteger):
        return jnp.array([0, 1, 2, 3], dtype)
    return jnp.array([0.5, 1.0, 2.0, 4.0], dtype)  # (float8_e8m0fnu has no zero)


def _cat(*xs) -> jax.Array:
    """concatenate on the host: XLA:CPU's own concatenate aborts on int2 / uint2."""
    return jnp.asarray(np.concatenate([np.asarray(x) for x in xs]))


def _bits(x) -> np.ndarray:
    """x's bits; a dtype narrower than a byte as its exact values (int8 / float32)."""
    x = jnp.asarray(x)
    if jax.dtypes.itemsize_bits(x.dtype) < 8:
        wide = jnp.float32 if jnp.issubdtype(x.dtype, jnp.floating) else jnp.int8
        return np.asarray(x.astype(wide))
    return np.atleast_1d(np.asarray(x)).view(np.uint8)


def _same(got, want, what: str) -> None:
    got, want = jnp.asarray(got), jnp.asarray(want)
    assert (got.dtype, got.shape, got.weak_type) == (want.dtype, want.shape, want.weak_type), what
    np.testing.assert_array_equal(_bits(got), _bits(want), err_msg=what)


@pytest.mark.parametrize("dtype", NEW_KEY_DTYPES, ids=lambda d: d.name)
def test_checked_inputs_every_key_dtype(dtype):
    """check_sorted_inputs checks keys of every dtype, in both directions, under jax.jit:
    sorted inputs pass, an unsorted one is named; ragged rows check the valid prefix only."""
    k = _increasing(dtype)
    rev = k[::-1]
    unsorted = k[jnp.array([0, 2, 1, 3])]
    with jmp.check_sorted_inputs():
        merge = checkify.checkify(jax.jit(jmp.merge, static_argnames="descending"))
        assert merge(k, k)[0].get() is None
        assert merge(rev, rev, descending=True)[0].get() is None
        assert "merge: a is not sorted in ascending order" in merge(unsorted, k)[0].get()
        assert "merge: b is not sorted in descending order" in merge(
            rev, k, descending=True)[0].get()
        # ragged: a's tail past a_length may be anything
        a = k[jnp.array([0, 1, 3, 2])]
        mbk = checkify.checkify(jax.jit(jmp.merge_by_key))
        err, (keys, vals) = mbk(a, k, a, k, a_length=3)
        assert err.get() is None
        want = _cat(jmp.sort(_cat(a[:3], k)), a[3:])
        _same(keys, want, "ragged merge_by_key keys")
        _same(vals, keys, "ragged merge_by_key values (the keys' own bits)")
        assert "a_keys (its valid prefix, a_length) is not sorted" in mbk(
            a, k, a, k, a_length=4)[0].get()
        runs = checkify.checkify(jax.jit(jmp.merge_runs))
        assert runs(_cat(k, k), 4)[0].get() is None
        assert "second run" in runs(_cat(k, unsorted), 4)[0].get()
        co_rank = checkify.checkify(jax.jit(jmp.co_rank))
        assert "co_rank: b is not sorted" in co_rank(3, k, unsorted)[0].get()
        # searchsorted: a[sorter] is checked, and the queries with sorted_v
        search = checkify.checkify(jax.jit(jmp.searchsorted, static_argnames="sorted_v"))
        perm = jnp.array([2, 0, 3, 1])
        shuffled = k[perm]
        sorter = jnp.argsort(perm)
        err, got = search(shuffled, k, sorter=sorter)
        assert err.get() is None
        _same(got, jmp.searchsorted(k, k), "searchsorted with sorter")
        assert "a[sorter] is not sorted" in search(shuffled, k, sorter=sorter[::-1])[0].get()
        assert "v (sorted_v=True) is not sorted" in search(k, unsorted, sorted_v=True)[0].get()


@pytest.mark.parametrize("x64", [True, False], ids=["x64", "x32"])
@pytest.mark.parametrize("dtype", NEW_KEY_DTYPES, ids=lambda d: d.name)
def test_jnp_arguments_with_every_key_dtype(dtype, x64):
    """axis=None, a positional axis and stable=False with every key dtype; argsort's positions
    in jnp's index dtype; sort_key_val moves values of the keys' dtype (sub-byte ones too)."""
    with jax.enable_x64(x64):
        if dtype == np.complex128 and not x64:
            pytest.skip("complex128 needs x64")
        k = _increasing(dtype)
        x = jnp.asarray(np.stack([np.asarray(k)[::-1], np.asarray(k)[[1, 3, 0, 2]]]))  # (2, 4)
        flat = jnp.ravel(x)
        _same(jmp.sort(x, None, stable=False), jmp.sort(flat), "sort axis=None")
        _same(jmp.sort(x, 0), jnp.moveaxis(jmp.sort(x.T), -1, 0), "sort positional axis 0")
        _same(jmp.sort(x, None, descending=True), jmp.sort(flat)[::-1], "sort axis=None desc")
        idx = jmp.argsort(x, None)
        assert idx.dtype == jnp.argsort(jnp.zeros(2)).dtype
        _same(flat[idx], jmp.sort(flat), "argsort axis=None")
        keys, vals = jmp.sort_key_val(x, x[:, ::-1], 1)
        _same(keys, jmp.sort(x, 1), "sort_key_val keys")
        perm = jmp.argsort(x, 1)
        _same(vals, jnp.take_along_axis(x[:, ::-1], perm, 1), "sort_key_val values")
        out = jmp.lax_sort([x, x], 0)
        _same(out[1], jmp.sort(x, 0), "lax_sort positional dimension")


@pytest.mark.parametrize("x64", [True, False], ids=["x64", "x32"])
def test_searchsorted_sorter_promotes_as_jnp(rng, x64):
    """sorter with a and v of different dtypes (promoted as jnp.searchsorted promotes them,
    Python scalars weakly), complex keys, and jnp's index dtype."""
    with jax.enable_x64(x64):
        a = jnp.asarray(rng.integers(-20, 20, 31), jnp.int8)
        sorter = jnp.argsort(a)
        for v in (jnp.asarray(rng.normal(size=9) * 10, jnp.float16), 3, 2.5,
                  jnp.asarray(rng.integers(-30, 30, 9), jnp.int16)):
            for side in ("left", "right"):
                _same(jmp.searchsorted(a, v, side, sorter), jnp.searchsorted(a, v, side, sorter),
                      f"searchsorted {side} {v!r}")  # fmt: skip
        c = jnp.asarray(rng.integers(0, 3, 17) + 1j * rng.integers(0, 3, 17), jnp.complex64)
        q = jnp.asarray([1 + 1j, 0, 2 + 0.5j, 3], jnp.complex64)
        _same(jmp.searchsorted(c, q, sorter=jnp.argsort(c)),
              jnp.searchsorted(c, q, sorter=jnp.argsort(c)), "searchsorted complex sorter")


@pytest.mark.parametrize("x64", [True, False], ids=["x64", "x32"])
def test_merge_by_key_lengths_with_promotion_and_sub_byte_values(x64):
    """Ragged merge_by_key with keys of two dtypes (promoted) and values of two dtypes
    (promoted), and with int4 values (moved as bits), in the kernel way and the complex way."""
    with jax.enable_x64(x64):
        ak = jnp.array([[1, 4, 9, 0], [2, 2, 5, 7]], jnp.int8)
        bk = jnp.array([[0, 3, 8], [1, 6, 6]], jnp.int16)
        av = jnp.arange(8, dtype=jnp.int8).reshape(2, 4)
        bv = jnp.arange(-3, 3, dtype=jnp.float16).reshape(2, 3)
        a_len, b_len = jnp.array([3, 2]), 2
        want_k = np.array([[0, 1, 3, 4, 9, 0, 8], [1, 2, 2, 6, 5, 7, 6]])
        want_v = np.array([[-3, 0, -2, 1, 2, 3, -1], [0, 4, 5, 1, 6, 7, 2]])
        for keys in ((ak, bk), (ak.astype(jnp.complex64), bk.astype(jnp.complex64))):
            for vals in ((av, bv), (av.astype(jnp.int4), bv.astype(jnp.int4))):
                k, v = jmp.merge_by_key(*keys, *vals, a_length=a_len, b_length=b_len)
                assert k.dtype == jnp.result_type(*keys), keys
                assert v.dtype == jnp.result_type(*vals), vals
                np.testing.assert_array_equal(np.asarray(k.real if k.dtype.kind == "c" else k),
                                              want_k)  # fmt: skip
                np.testing.assert_array_equal(np.asarray(v.astype(jnp.float32)), want_v)


@pytest.mark.parametrize("x64", [True, False], ids=["x64", "x32"])
@pytest.mark.parametrize(("fn", "ref"), [(jmp.sort, jnp.sort), (jmp.argsort, jnp.argsort)],
                         ids=["sort", "argsort"])  # fmt: skip
def test_axis_none_of_a_long_array_traces_as_jnp(fn, ref, x64):
    """axis=None flattens to an axis of 2**31 elements or more: jnp's shape and dtype."""
    spec = S((2**16, 2**15 + 1), jnp.int8)
    with jax.enable_x64(x64), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (x64 off: jax's "int64 is not available" warning)
        got = jax.eval_shape(functools.partial(fn, axis=None), spec)
        want = jax.eval_shape(functools.partial(ref, axis=None), spec)
    assert (got.shape, got.dtype) == (want.shape, want.dtype)


def test_checked_ragged_rows_of_a_long_axis_use_int64_positions():
    """check_sorted_inputs on a ragged merge and merge_runs of a long axis: the valid-prefix
    positions are int64 (int32 ones would wrap past 2**31 - 1)."""
    with jax.enable_x64(True), jmp.check_sorted_inputs():
        for d, fn, specs in (
            (LONG, lambda x, n: jmp.merge(x, x, a_length=n),
             (S((LONG,), jnp.int8), S((), jnp.int64))),
            (LONG + 2, jmp.merge_runs, (S((2, LONG + 2), jnp.int8), S((2,), jnp.int64))),
        ):  # fmt: skip
            text = str(jax.make_jaxpr(lambda *xs, fn=fn: checkify.checkify(fn)(*xs)[1])(*specs))
            row_iotas = [i for i in re.findall(r"iota\[[^\]]*\]", text) if str(d) in i]
            assert row_iotas and all("int64" in i for i in row_iotas), row_iotas
