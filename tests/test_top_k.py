# jmp.top_k / top_k_by_key on the CPU: lax.top_k's results bit for bit (values and indices) on
# every dtype where lax's result is the contract's (not where XLA:CPU compares bfloat16
# subnormals as zeros and they occur: select_checks.py), a numpy reference on every dtype, both
# directions, k at the edges, rows and axes, the CPU's chunked long rows (ties, equal keys,
# presorted), weak types, errors as lax raises them, and hypothesis properties of ties, +-0.0
# and NaNs. Transforms (jit, vmap as one call, grad, jvp) at the end.
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jax import lax
from reference import assert_bits_equal, random_keys, special_values
from select_checks import (
    LAX_DTYPES,
    OTHER_DTYPES,
    assert_values_match_lax,
    every_pattern,
    has_subnormals,
    lax_flushes_subnormals,
    ref_top_k,
)
from tiers import core_fast

import jax_mergepath as jmp

# The fast tier (the README's test command): the core of every test; the dtype sweeps past a
# few core dtypes and the longest rows carry `slow` themselves.
pytestmark = pytest.mark.fast
CORE = {np.dtype(np.float32), np.dtype(np.int32), np.dtype(np.bool_)}


def _tiered(dtypes):
    return core_fast(dtypes, lambda d: d in CORE)


def _keys(rng, dtype, shape, pattern="random"):
    dt = np.dtype(dtype)
    if dt in LAX_DTYPES[:13]:
        return random_keys(rng, dt, shape, pattern)
    return rng.choice(every_pattern(dt), size=shape)


_top_k = jax.jit(jmp.top_k, static_argnames=("k", "axis", "largest"))
_lax_top_k = jax.jit(lax.top_k, static_argnames=("k",))


def _check(x, k, axis=-1, largest=True, against_lax=False):
    got = _top_k(x, k=k, axis=axis, largest=largest)
    want = ref_top_k(x, k, axis, largest)
    assert_bits_equal(got[1], want[1], "indices")
    assert_bits_equal(got[0], want[0], "values")
    if against_lax and largest and not (lax_flushes_subnormals(x.dtype) and has_subnormals(x)):
        lax_v, lax_i = _lax_top_k(jnp.moveaxis(jnp.asarray(x), axis, -1), k=k)
        assert_bits_equal(got[1], jnp.moveaxis(lax_i, -1, axis), "indices vs lax.top_k")
        assert_values_match_lax(got[0], jnp.moveaxis(lax_v, -1, axis))
    return got


def test_the_total_order_of_floats():
    x = jnp.array([0.0, -0.0, jnp.nan, -jnp.nan, 1.0, -jnp.inf, jnp.inf, 0.0, -0.0], jnp.float32)
    values, indices = jmp.top_k(x, 9)
    np.testing.assert_array_equal(indices, [2, 6, 4, 0, 7, 1, 8, 5, 3])
    assert_bits_equal(values, lax.top_k(x, 9)[0])
    _, smallest = jmp.top_k(x, 9, largest=False)
    np.testing.assert_array_equal(smallest, [3, 5, 1, 8, 0, 7, 4, 6, 2])


@pytest.mark.parametrize("dtype", _tiered(LAX_DTYPES), ids=lambda d: d.name)
def test_matches_lax_top_k(dtype, rng):
    for shape, k in [((57,), 5), ((3, 300), 300), ((2, 4100), 33)]:
        for pattern in ("random", "few", "special"):
            x = _keys(rng, dtype, shape, pattern)
            _check(x, k, against_lax=True)
            _check(x, k, largest=False)


@pytest.mark.parametrize("dtype", _tiered(LAX_DTYPES + OTHER_DTYPES), ids=lambda d: d.name)
def test_every_bit_pattern_of_narrow_dtypes(dtype, rng):
    dt = np.dtype(dtype)
    if jax.dtypes.itemsize_bits(dt) > 8 or dt == np.bool_:
        x = special_values(dt)
    else:
        x = every_pattern(dt)
    x = np.concatenate([x, x[rng.permutation(len(x))]])  # every key twice: ties
    _check(x, len(x), against_lax=dt in LAX_DTYPES)
    _check(x, len(x), largest=False)


@pytest.mark.parametrize("n", core_fast([1, 2, 3, 63, 64, 65, 1000], lambda n: n in (1, 65, 1000)))
def test_k_at_the_edges(n, rng):
    x = random_keys(rng, np.float32, (2, n))
    for k in sorted({0, 1, n // 2, n - 1, n}):
        if k >= 0:
            v, i = _check(x, k, against_lax=True)
            assert v.shape == (2, k) and i.dtype == np.int32


def test_rows_and_axes(rng):
    x = random_keys(rng, np.int16, (3, 40, 5), "few")
    for axis in (0, 1, 2, -1, -3):
        _check(x, 3, axis=axis)
        _check(x, 2, axis=axis, largest=False)


@pytest.mark.parametrize("pattern", ["random", "equal", "sorted", "reverse", "few"])
@pytest.mark.parametrize("k", [1, pytest.param(100, marks=pytest.mark.slow),
                               pytest.param(5000, marks=pytest.mark.slow)])
def test_long_rows_cut_into_chunks(pattern, k, rng):
    # Rows of 2**17 keys and more are cut into chunks when there are fewer rows than threads.
    n = 300_001
    x = random_keys(rng, np.float32, (n,), "random" if pattern in ("sorted", "reverse")
                    else pattern)
    if pattern in ("sorted", "reverse"):
        x = np.sort(x)[:: 1 if pattern == "sorted" else -1].copy()
    _check(x, k)
    _check(x, k, largest=False)


@pytest.mark.parametrize(
    "dtype",
    _tiered([np.dtype(t) for t in (np.float16, np.float32, np.float64)]
            + [np.dtype(jnp.bfloat16), np.dtype(jnp.float8_e5m2)]),
    ids=lambda d: d.name,
)
def test_nan_payloads_along_every_axis(dtype, rng):
    # NaN payloads of both signs and -0.0 made in numpy (no XLA operation touches them before the
    # call), selected along every axis: the axis moves as bits, the values are the keys' bits.
    width = np.dtype(f"u{dtype.itemsize}")
    info = jnp.finfo(dtype)
    nan = ((1 << int(info.nexp)) - 1) << int(info.nmant)
    sign = 1 << (8 * dtype.itemsize - 1)
    special = [nan | 1, nan | 3, nan | (1 << int(info.nmant)) - 1, sign | nan | 1,
               sign | nan | 2, sign, 0, sign | 1]
    x = rng.standard_normal((5, 7, 3)).astype(dtype)
    b = x.view(width)
    b.flat[rng.choice(b.size, 3 * len(special), replace=False)] = np.repeat(special, 3)
    for axis in (0, 1, 2):
        for largest in (True, False):
            _check(x, 3, axis=axis, largest=largest)
    _check(x, 5, axis=0)


def test_values_keep_weak_types():
    x = lax.broadcast(2.5, (4,))  # weakly typed
    v, _ = jmp.top_k(x, 2)
    assert v.weak_type == lax.top_k(x, 2)[0].weak_type
    bf16 = jnp.bfloat16(1)
    assert (jmp.top_k(x, 2)[0] + bf16).dtype == (lax.top_k(x, 2)[0] + bf16).dtype


def test_returns_a_list_as_lax():
    """lax.top_k returns a list: ours too, so the two mix in lax.cond branches or scan carries."""
    x = jnp.arange(6.0)
    assert type(jmp.top_k(x, 2)) is type(lax.top_k(x, 2)) is list
    assert type(jax.jit(lambda x: jmp.top_k(x, 2))(x)) is list
    jax.lax.cond(True, lambda x: jmp.top_k(x, 2), lambda x: lax.top_k(x, 2), x)


def test_sub_byte_and_x64_off_indices_are_int32(rng):
    x = jnp.asarray(np.arange(-8, 8)).astype(jnp.int4)
    v, i = jmp.top_k(x, 3)
    assert v.dtype == jnp.int4 and i.dtype == np.int32
    np.testing.assert_array_equal(v.astype(np.int32), [7, 6, 5])
    with jax.enable_x64(False):
        _, i = jmp.top_k(jnp.arange(10.0), 3)
        assert i.dtype == np.int32


def test_top_k_by_key_moves_a_pytree(rng):
    keys = random_keys(rng, np.float32, (4, 50), "few")
    pos = rng.standard_normal((4, 50, 3)).astype(np.float32)
    ids = np.arange(200, dtype=np.int64).reshape(4, 50)
    top, fields = jmp.top_k_by_key(keys, {"pos": pos, "id": ids}, 7, largest=False)
    v, i = ref_top_k(keys, 7, largest=False)
    assert_bits_equal(top, v)
    assert_bits_equal(fields["id"], np.take_along_axis(ids, i.astype(np.int64), -1))
    assert_bits_equal(fields["pos"], np.take_along_axis(pos, i[..., None].astype(np.int64), 1))
    top0, f0 = jmp.top_k_by_key(keys.T, ids.T, 2, axis=0)
    assert_bits_equal(f0, np.take_along_axis(ids.T, ref_top_k(keys.T, 2, 0)[1], 0))


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: jmp.top_k(jnp.ones(3, jnp.complex64), 1), ValueError,
         "top_k is not compatible with complex inputs"),
        (lambda: jmp.top_k(jnp.float32(1), 1), TypeError, ">= 1 dimension"),
        (lambda: jmp.top_k(jnp.ones(3), -1), ValueError, "must be nonnegative"),
        (lambda: jmp.top_k(jnp.ones(3), 4), ValueError, "no larger than size along axis"),
        (lambda: jmp.top_k(jnp.ones(3), 1.5), TypeError, "k must be an int"),
        (lambda: jmp.top_k(jnp.ones(3), 1, axis=1), ValueError, "out of range"),
        (lambda: jmp.top_k(jnp.ones(3), 1, largest=1), TypeError, "largest must be"),
        (lambda: jmp.top_k(np.array(["a"]), 1), TypeError, "dtype"),
        (lambda: jax.jit(jmp.top_k)(jnp.ones(3), 1), TypeError, "static"),
        (lambda: jmp.top_k_by_key(jnp.ones(3), jnp.ones(4), 1), ValueError, "shape of its keys"),
    ],
)
def test_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_errors_match_lax_types():
    for bad in (lambda f: f(jnp.ones(3, jnp.complex64), 1), lambda f: f(jnp.ones(3), 4),
                lambda f: f(jnp.ones(3), -1)):
        with pytest.raises(ValueError):
            bad(lax.top_k)
        with pytest.raises(ValueError):
            bad(jmp.top_k)


# ----------------------------------------------------------------------------- properties

_FLOATS = st.sampled_from([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, 2.5, 1e-45, -1e-45])
_NANS = st.sampled_from([0x7FC00000, 0xFFC00000, 0x7FC00001, 0xFF800001])


# (fixed lengths and a few k: every example reuses a handful of compiled programs)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.one_of(_FLOATS.map(lambda f: ("f", f)), _NANS.map(lambda b: ("n", b))),
             min_size=24, max_size=24),
    st.sampled_from([0, 1, 5, 24]),
    st.booleans(),
)
def test_ties_zeros_and_nans(items, k, largest):
    bits = np.array([np.float32(v).view(np.uint32) if kind == "f" else v for kind, v in items],
                    dtype=np.uint32)
    _check(bits.view(np.float32), k, largest=largest, against_lax=True)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(-3, 3), min_size=300, max_size=300), st.sampled_from([1, 17, 300]))
def test_heavy_ties_of_integers(values, k):
    x = np.array(values, dtype=np.int8)
    _check(x, k, against_lax=True)
    _check(x, k, largest=False)


# ----------------------------------------------------------------------------- transforms


def test_jit_with_static_k(rng):
    x = random_keys(rng, np.float32, (5, 30))
    f = jax.jit(jmp.top_k, static_argnames=("k", "axis", "largest"))
    assert_bits_equal(f(x, k=4)[1], ref_top_k(x, 4)[1])
    assert_bits_equal(f(x, k=4, axis=0, largest=False)[0], ref_top_k(x, 4, 0, False)[0])


def test_vmap_is_one_batched_call(rng):
    x = random_keys(rng, np.float32, (3, 4, 25))
    f = jax.vmap(jax.vmap(lambda r: jmp.top_k(r, 6), in_axes=1, out_axes=1), in_axes=0)
    jaxpr = jax.make_jaxpr(f)(jnp.moveaxis(jnp.asarray(x), 2, 1))
    calls = [e for e in jaxpr.jaxpr.eqns if e.primitive.name == "jmp_top_k"]
    assert len(calls) == 1 and "while" not in str(jaxpr)
    got = f(jnp.moveaxis(jnp.asarray(x), 2, 1))
    want = ref_top_k(x, 6)
    assert_bits_equal(jnp.moveaxis(got[0], 1, 2), want[0])
    assert_bits_equal(jnp.moveaxis(got[1], 1, 2), want[1])


def test_grad_and_jvp_match_lax(rng):
    x = jnp.asarray(rng.standard_normal((3, 20)))
    w = jnp.asarray(rng.standard_normal((3, 5)))
    ours = jax.grad(lambda x: (jmp.top_k(x, 5)[0] * w).sum())(x)
    theirs = jax.grad(lambda x: (lax.top_k(x, 5)[0] * w).sum())(x)
    np.testing.assert_array_equal(ours, theirs)
    t = jnp.asarray(rng.standard_normal(x.shape))
    (v, i), (tv, ti) = jax.jvp(lambda x: jmp.top_k(x, 5, largest=False), (x,), (t,))
    np.testing.assert_array_equal(tv, jnp.take_along_axis(t, i, -1))
    assert ti.dtype == jax.dtypes.float0
    g = jax.grad(lambda x: jmp.top_k_by_key(x, {"y": 2 * x}, 3)[1]["y"].sum())(x)
    np.testing.assert_array_equal(g, 2 * jax.grad(lambda x: lax.top_k(x, 3)[0].sum())(x))


@pytest.mark.parametrize("route", ["kernel", "sort", "xla"])
def test_every_route_gives_the_same_bits(route, rng):
    from jax_mergepath._select_primitive import forced_route

    x = random_keys(rng, np.float32, (3, 500), "special")
    with forced_route(route):
        f = jax.jit(lambda x: (jmp.top_k(x, 40), jmp.top_k(x, 300, largest=False)))
        (v, i), (vs, is_) = f(x)
        assert ("jmp_top_k" in f.lower(x).as_text()) == (route == "kernel")
    for got, want in (((v, i), ref_top_k(x, 40)), ((vs, is_), ref_top_k(x, 300, largest=False))):
        assert_bits_equal(got[1], want[1], route)
        assert_bits_equal(got[0], want[0], route)
