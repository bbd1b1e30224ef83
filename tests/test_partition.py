# jmp.partition / jmp.argpartition on the CPU: jnp's values and indices bit for bit wherever
# jnp's result is a valid partition of its input laid out in the sorts' order (a host whose
# XLA:CPU compares bfloat16 subnormals as zeros ties them with the zeros), a valid partition
# always (jnp drops the smallest signed integer and puts negative NaNs first; bool keys, which
# jnp refuses), jnp's layout (the kth + 1 smallest ascending, then the rest descending / in index
# order), and jnp's errors.
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference import assert_bits_equal, random_keys
from select_checks import in_partition_layout, is_valid_partition, ref_top_k
from tiers import core_fast

import jax_mergepath as jmp

# The fast tier; the dtypes past float32 and int32 carry `slow` themselves.
pytestmark = pytest.mark.fast

_partition = jax.jit(jmp.partition, static_argnames=("kth", "axis"))
_argpartition = jax.jit(jmp.argpartition, static_argnames=("kth", "axis"))
_jnp_partition = jax.jit(jnp.partition, static_argnames=("kth", "axis"))
_jnp_argpartition = jax.jit(jnp.argpartition, static_argnames=("kth", "axis"))

DTYPES = [np.dtype(t) for t in (np.int8, np.int32, np.int64, np.uint8, np.uint32, np.uint64,
                                np.float16, np.float32, np.float64)] + [np.dtype(jnp.bfloat16)]
FLOATS = [np.dtype(t) for t in (np.float16, np.float32, np.float64)] + [
    np.dtype(jnp.bfloat16), np.dtype(jnp.float8_e5m2), np.dtype(jnp.float8_e4m3fn)]


def _check(x, kth, axis=-1):
    out = np.asarray(_partition(x, kth=kth, axis=axis))
    idx = np.asarray(_argpartition(x, kth=kth, axis=axis))
    n = np.asarray(x).shape[axis]
    kth = kth % n
    assert idx.dtype == np.int32
    assert is_valid_partition(x, out, kth, axis), (x, out)
    assert is_valid_partition(x, np.take_along_axis(np.asarray(x), idx.astype(np.int64), axis),
                              kth, axis)
    # the layout: the bottom's indices in (key ascending, index ascending) order, the rest in
    # index order
    bottom = np.moveaxis(idx, axis, -1)[..., : kth + 1]
    rest = np.moveaxis(idx, axis, -1)[..., kth + 1 :]
    assert np.all(np.diff(rest, axis=-1) > 0) if n - kth > 2 else True
    assert np.array_equal(np.sort(np.concatenate([bottom, rest], -1), -1),
                          np.broadcast_to(np.arange(n), bottom.shape[:-1] + (n,)))
    if np.asarray(x).dtype == np.bool_:  # (jnp.partition refuses bool)
        return out, idx
    want = _jnp_partition(x, kth=kth, axis=axis)
    if is_valid_partition(x, want, kth, axis) and in_partition_layout(want, kth, axis):
        assert_bits_equal(out, want, "partition vs jnp.partition")
        want_idx = _jnp_argpartition(x, kth=kth, axis=axis)
        assert_bits_equal(idx, want_idx, "argpartition vs jnp.argpartition")
    return out, idx


@pytest.mark.parametrize(
    "dtype",
    core_fast(DTYPES, lambda d: d == np.dtype(np.int32)),
    ids=lambda d: d.name,
)
def test_matches_jnp(dtype, rng):
    for shape in ((2,), (4, 300)):
        n = shape[-1]
        for pattern in ("random", "few"):
            x = random_keys(rng, dtype, shape, pattern)
            for kth in sorted({0, n // 3, n - 1}):
                _check(x, kth)


def test_where_jnp_is_not_a_partition():
    lo = np.iinfo(np.int32).min
    x = np.array([5, lo, 0, 3, lo, -1], np.int32)
    out, idx = _check(x, 1)
    np.testing.assert_array_equal(out[:2], [lo, lo])
    assert not is_valid_partition(x, jnp.partition(x, 1), 1)  # (jnp drops lo)
    nans = np.array([1.0, -np.nan, 0.0, np.nan, -0.0, 2.0], np.float32)
    out, idx = _check(nans, 2)
    assert np.isnan(out[3:5]).all()
    np.testing.assert_array_equal(np.sort(idx[:3]), [0, 2, 4])


@pytest.mark.parametrize("dtype", core_fast(FLOATS, lambda d: d == np.dtype(np.float32)),
                         ids=lambda d: d.name)
def test_nans_of_both_signs_with_one_payload(dtype, rng):
    # A positive and a negative NaN of the same payload are distinct keys in every row: the
    # bottom and the top never both take one of them (the result is a permutation), wherever
    # kth falls among the NaNs, numbers and zeros.
    bits = jax.dtypes.itemsize_bits(dtype)
    sign = 1 << (bits - 1)
    nan = np.array(np.nan, np.float32).astype(dtype).view(f"u{dtype.itemsize}")
    payloads = [int(nan), int(nan) | 1] if bits > 8 else [int(nan)]
    twins = [p for q in payloads for p in (q, q | sign)]
    numbers = np.array([0.0, -0.0, 1.0, -1.0, 2.0], np.float32).astype(dtype)
    twins = np.array(twins, f"u{dtype.itemsize}").view(dtype)
    x = np.concatenate([numbers, twins, twins])
    x = np.stack([x[rng.permutation(len(x))] for _ in range(3)])
    for kth in range(x.shape[-1]):
        out = np.asarray(_partition(x, kth=kth))
        assert is_valid_partition(x, out, kth), (kth, x.view(f"u{dtype.itemsize}"), out)
        idx = np.asarray(_argpartition(x, kth=kth))
        assert is_valid_partition(x, np.take_along_axis(x, idx.astype(np.int64), -1), kth)


def test_bool_and_axes(rng):
    b = rng.integers(0, 2, (3, 50)).astype(bool)
    out, _ = _check(b, 20)
    np.testing.assert_array_equal(out[:, :21].sum(-1), np.maximum(0, b.sum(-1) - 29))
    x = random_keys(rng, np.float32, (6, 9, 4), "few")
    for axis in (0, 1, 2):
        _check(x, 2, axis=axis)
        _check(x, -1, axis=axis)


def test_bottom_is_the_smallest_first(rng):
    x = random_keys(rng, np.float64, (2, 60))
    out = np.asarray(_partition(x, kth=9))
    v, _ = ref_top_k(x, 10, largest=False)
    assert_bits_equal(out[:, :10], v)
    top, _ = ref_top_k(x, 50, largest=True)
    assert_bits_equal(out[:, 10:], top)


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda f: f(jnp.ones(3, jnp.complex64), 1), NotImplementedError),
        (lambda f: f(jnp.ones(3), 3), ValueError),
        (lambda f: f(jnp.ones(3), -4), ValueError),
        (lambda f: f(jnp.ones((2, 3)), 1, axis=2), ValueError),
        (lambda f: f(jnp.float32(1), 0), ValueError),
    ],
)
def test_errors_as_jnp(call, error):
    for f in (jmp.partition, jmp.argpartition, jnp.partition, jnp.argpartition):
        with pytest.raises(error):
            call(f)
