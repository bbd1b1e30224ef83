# Regressions found in review: sub-byte value dtypes, narrow or huge integer lengths / splits /
# positions (clamped, never wrapped), jax.disable_jit(), bool axes, value shape errors, empty
# batches of co_rank, bfloat16 NaN payloads through gathers, host int64 lengths past int32 (x64
# off), float4 values, an int position for batched co_rank, a bool position. (Python lists beside
# arrays, once taken in the arrays' dtype, are refused since 0.3.0, as jnp refuses them:
# test_merge_errors.py.)
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jax_mergepath as jmp

pytestmark = pytest.mark.fast  # the fast tier (the README's test command)


@pytest.mark.parametrize("dtype", [jnp.int4, jnp.uint4])
def test_sub_byte_values_move_with_their_keys(dtype):
    n = 1 << 15  # several tiles: a packed-width bug would read past the buffers
    keys = jnp.arange(n) * 2
    values = (jnp.arange(n) % 7).astype(dtype)
    k, v = jmp.merge_by_key(keys, keys + 1, values, values)
    np.testing.assert_array_equal(np.asarray(k), np.arange(2 * n))
    np.testing.assert_array_equal(np.asarray(v).astype(int), np.repeat(np.arange(n) % 7, 2))


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16])
def test_narrow_lengths_are_clamped_not_wrapped(dtype):
    a = jnp.arange(256)
    _, idx = jmp.merge(a, a, a_length=np.array(3, dtype), return_indices=True)
    np.testing.assert_array_equal(np.asarray(idx[:4]), [0, 256, 1, 257])
    x = jnp.concatenate([jnp.arange(100), jnp.arange(156)])  # d = 256 wraps to 0 in uint8
    assert bool(jmp.is_sorted(jmp.merge_runs(x, np.array(100, dtype))))


def test_narrow_and_huge_co_rank_positions():
    a = jnp.arange(20000)
    assert int(jmp.co_rank(jnp.array([100], jnp.int8), a[:200], a[:200])[0]) == 50
    assert int(jmp.co_rank(jnp.array([20000], jnp.int16), a, a)[0]) == 10000
    assert int(jmp.co_rank(2**40, a[:3], a[:3])) == 3
    assert int(jmp.co_rank(-(2**40), a[:3], a[:3])) == 0


def test_huge_python_int_split_and_length_are_clamped():
    x = jnp.arange(4)
    np.testing.assert_array_equal(np.asarray(jmp.merge_runs(x, 2**40)), np.arange(4))
    np.testing.assert_array_equal(np.asarray(jmp.merge_runs(x, -(2**40))), np.arange(4))
    out = jmp.merge(x, x, a_length=2**40, b_length=-(2**40))
    np.testing.assert_array_equal(np.asarray(out), [0, 1, 2, 3, 0, 1, 2, 3])


def test_everything_runs_under_disable_jit():
    a, b = jnp.array([1, 3]), jnp.array([2])
    with jax.disable_jit():
        np.testing.assert_array_equal(np.asarray(jmp.merge(a, b)), [1, 2, 3])
        assert bool(jmp.is_sorted(a))
        assert int(jmp.co_rank(jnp.array([2]), a, b)[0]) == 1
        np.testing.assert_array_equal(
            np.asarray(jmp.merge_runs(jnp.array([1, 3, 2]), 2)), [1, 2, 3]
        )


def test_bool_axis_is_rejected():
    with pytest.raises(TypeError, match="axis"):
        jmp.merge(jnp.arange(3), jnp.arange(3), axis=True)


def test_mismatched_trailing_value_shapes_raise_value_error():
    k = jnp.arange(3)
    with pytest.raises(ValueError, match="trailing shape"):
        jmp.merge_by_key(k, k, jnp.zeros((3, 2)), jnp.zeros((3, 4)))
    # matching leaves of different dtypes promote as jnp.concatenate (no error)
    _, v = jmp.merge_by_key(k, k, jnp.zeros((3, 2), jnp.float16), jnp.zeros((3, 2), jnp.int8))
    assert v.dtype == jnp.float16


def test_co_rank_with_an_empty_batch():
    """A batch dimension of size 0 gives an empty result of k's shape (no reshape of an empty
    array by -1)."""
    for k_shape, a_shape, b_shape in [((0, 5), (0, 3), (0, 4)), ((3, 0, 2), (3, 0, 3), (3, 0, 4))]:
        k = jnp.zeros(k_shape, jnp.int32)
        a, b = jnp.zeros(a_shape), jnp.zeros(b_shape)
        for f in (jmp.co_rank, jax.jit(jmp.co_rank)):
            out = f(k, a, b)
            assert out.shape == k_shape and out.dtype == jnp.int64  # (x64 on: conftest)


def test_values_moved_by_a_gather_keep_their_bits():
    # sort_by_key / merge_by_key with several value leaves, lax_sort with num_keys=2 or with
    # several operands move values by a gather: XLA's CPU gather of bfloat16 rewrote NaN
    # payloads (0x7f81 -> 0x7fc0); outputs are the inputs gathered, bit for bit.
    bits = np.array([0x7F81, 0x3F80, 0xFF82, 0x8000], np.uint16)
    v = jnp.asarray(bits.view(jnp.bfloat16))
    keys = jnp.array([3, 0, 2, 1], jnp.int32)
    order = np.argsort(np.asarray(keys), kind="stable")

    def same_bits(x, want):
        assert np.array_equal(np.asarray(x).view(np.uint16), want)

    _, out = jmp.sort_by_key(keys, {"a": v, "b": v})
    same_bits(out["a"], bits[order])
    same_bits(out["b"], bits[order])
    same_bits(jmp.lax_sort((keys, v, v))[1], bits[order])
    same_bits(jmp.lax_sort((keys, v), num_keys=2)[1], bits[order])
    by_v = jmp.lax_sort((v, keys), num_keys=2)[0]  # -0.0, 1, then the NaNs (equal) by keys
    same_bits(by_v, bits[[3, 1, 2, 0]])
    a_keys, b_keys = jnp.array([0, 2], jnp.int32), jnp.array([1, 3], jnp.int32)
    _, vals = jmp.merge_by_key(a_keys, b_keys, {"x": v[:2], "y": v[:2]}, {"x": v[2:], "y": v[2:]})
    same_bits(vals["x"], bits[[0, 2, 1, 3]])
    same_bits(jmp.merge(v, v[:0]), bits)  # an empty side: no kernel, the inputs concatenated
    same_bits(jmp.merge_by_key(v[:0], v, v[:0], v)[1], bits)


def test_host_int64_lengths_past_int32_are_clamped_not_wrapped():
    # With x64 off (JAX's default; the suite turns it on), jnp.asarray wraps an int64 numpy
    # array (2**32 + 1 -> 1); the package clamps host arrays on the host first.
    with jax.enable_x64(False):
        a, b = jnp.array([1, 3, 5, 7]), jnp.array([2, 4])
        got = jmp.merge(a, b, a_length=np.array(2**32 + 1), return_indices=True)[1]
        np.testing.assert_array_equal(np.asarray(got), [0, 4, 1, 5, 2, 3])
        assert int(jmp.co_rank(np.array([2**32 + 1]), a, b)[0]) == 4
        x = jnp.array([1, 5, 9, 2, 3, 4])  # split past d: all of x is the first run
        for split in (np.array(2**32 + 3), np.array(2**63, np.uint64)):
            np.testing.assert_array_equal(np.asarray(jmp.merge_runs(x, split)), np.asarray(x))


@pytest.mark.parametrize("trailing", [(), (2,)])
def test_float4_values_move_with_their_keys(trailing):
    # float4_e2m1fn is 4 bits wide: its bits move as uint4, not uint8.
    keys = jnp.array([3, 1, 2, 0, 5, 4])
    col = np.array([0.5, 1.0, 1.5, 2.0, 3.0, 6.0], np.float32)
    host = np.stack([col, -col], axis=1) if trailing else col
    values = jnp.asarray(host).astype(jnp.float4_e2m1fn)
    order = np.argsort(np.asarray(keys), kind="stable")
    _, got = jmp.sort_by_key(keys, values)
    np.testing.assert_array_equal(np.asarray(got).astype(np.float32), host[order])
    if not trailing:
        got = jmp.lax_sort((keys, values))[1]
        np.testing.assert_array_equal(np.asarray(got).astype(np.float32), host[order])
    _, v = jmp.merge_by_key(keys[:3] * 0, keys[3:] * 0 + 1, values[:3], values[3:])
    np.testing.assert_array_equal(np.asarray(v).astype(np.float32), host)


def test_an_int_position_of_a_batched_co_rank_is_one_a_row():
    a = jnp.array([[1, 3], [2, 4]])
    b = jnp.array([[2], [1]])
    np.testing.assert_array_equal(np.asarray(jmp.co_rank(2, a, b)), [1, 1])
    np.testing.assert_array_equal(np.asarray(jmp.co_rank(jnp.array(1), a, b)), [1, 0])


def test_a_bool_position_is_refused():
    with pytest.raises(TypeError, match="k"):
        jmp.co_rank(True, jnp.arange(3), jnp.arange(3))
