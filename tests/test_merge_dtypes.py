# Every key dtype of docs/contract.md (bool, int8..int64, uint8..uint64, float16, bfloat16, float32,
# float64) through merge, merge_by_key, merge_runs, co_rank and is_sorted, compared bit-exactly with
# the references; plus hand-written edge cases: NaN placement and payloads, +-0.0 stability,
# +-inf, subnormals ordered as numbers (not flushed to zero), int min/max, 64-bit keys that
# differ only below float precision, unsigned keys above the signed range.
from __future__ import annotations

import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from merge_checks import (
    DIR_IDS,
    DIRECTIONS,
    check_co_rank,
    check_merge,
    check_merge_by_key,
    check_merge_runs,
)
from reference import (
    FLOAT_DTYPES,
    KEY_DTYPES,
    assert_bits_equal,
    dtype_id,
    random_keys,
    ref_is_sorted,
    sort_segments,
    sorted_keys,
    special_values,
    to_bits,
)

import jax_mergepath as jmp

pytestmark = pytest.mark.slow  # the slow tier (49 s of test time on 2 cores)


@pytest.mark.parametrize("descending", DIRECTIONS, ids=DIR_IDS)
@pytest.mark.parametrize("mn", [(0, 3), (1, 1), (17, 30), (257, 255), (2049, 1023)], ids=str)
@pytest.mark.parametrize("dtype", KEY_DTYPES, ids=dtype_id)
def test_merge_every_dtype(rng, dtype, mn, descending):
    m, n = mn
    a = sorted_keys(rng, dtype, (m,), descending=descending)
    b = sorted_keys(rng, dtype, (n,), descending=descending)
    check_merge(a, b, descending=descending)


@pytest.mark.parametrize("descending", DIRECTIONS, ids=DIR_IDS)
@pytest.mark.parametrize("pattern", ["few", "equal", "special"])
@pytest.mark.parametrize("dtype", KEY_DTYPES, ids=dtype_id)
def test_merge_every_dtype_patterns_batched(rng, dtype, pattern, descending):
    a = sorted_keys(rng, dtype, (2, 300), pattern, descending=descending)
    b = sorted_keys(rng, dtype, (2, 211), pattern, descending=descending)
    check_merge(a, b, descending=descending)


@pytest.mark.parametrize("descending", DIRECTIONS, ids=DIR_IDS)
@pytest.mark.parametrize("dtype", KEY_DTYPES, ids=dtype_id)
def test_merge_ragged_every_dtype(rng, dtype, descending):
    a_len, b_len = np.array([0, 40, 13]), np.array([25, 0, 7])
    a = sort_segments(random_keys(rng, dtype, (3, 40)), a_len, -1, descending, sort_tail=False)
    b = sort_segments(random_keys(rng, dtype, (3, 25)), b_len, -1, descending, sort_tail=False)
    check_merge(
        a, b, a_length=jnp.asarray(a_len), b_length=jnp.asarray(b_len), descending=descending
    )


@pytest.mark.parametrize("descending", DIRECTIONS, ids=DIR_IDS)
@pytest.mark.parametrize("dtype", KEY_DTYPES, ids=dtype_id)
def test_merge_by_key_every_key_dtype(rng, dtype, descending):
    a_k = sorted_keys(rng, dtype, (3, 70), "few", descending=descending)
    b_k = sorted_keys(rng, dtype, (3, 45), "few", descending=descending)
    a_v = np.broadcast_to(np.arange(70, dtype=np.int32), (3, 70)).copy()
    b_v = np.broadcast_to(np.arange(70, 115, dtype=np.int32), (3, 45)).copy()
    check_merge_by_key(a_k, b_k, a_v, b_v, descending=descending)
    # values with the key's own dtype and a trailing dimension
    a_w = random_keys(rng, dtype, (3, 70, 2), "special")
    b_w = random_keys(rng, dtype, (3, 45, 2), "special")
    check_merge_by_key(a_k, b_k, a_w, b_w, descending=descending)


@pytest.mark.parametrize("descending", DIRECTIONS, ids=DIR_IDS)
@pytest.mark.parametrize("dtype", KEY_DTYPES, ids=dtype_id)
def test_merge_runs_every_dtype(rng, dtype, descending):
    split = np.array([0, 1, 33, 99, 100, -2, 150])
    x = sort_segments(random_keys(rng, dtype, (7, 100)), split, -1, descending)
    check_merge_runs(x, jnp.asarray(split, jnp.int32), descending=descending)


@pytest.mark.parametrize("descending", DIRECTIONS, ids=DIR_IDS)
@pytest.mark.parametrize("dtype", KEY_DTYPES, ids=dtype_id)
def test_co_rank_every_dtype(rng, dtype, descending):
    a = sorted_keys(rng, dtype, (90,), descending=descending)
    b = sorted_keys(rng, dtype, (61,), descending=descending)
    check_co_rank(np.arange(152, dtype=np.int32), a, b, descending=descending)


@pytest.mark.parametrize("descending", DIRECTIONS, ids=DIR_IDS)
@pytest.mark.parametrize("dtype", KEY_DTYPES, ids=dtype_id)
def test_is_sorted_every_dtype(rng, dtype, descending):
    rows = [sorted_keys(rng, dtype, (50,), p, descending=descending) for p in ("random", "few")]
    rows += [random_keys(rng, dtype, (50,), p) for p in ("random", "special")]
    rows += [special_values(dtype)[:2]]  # the first two edge keys
    for x in rows:
        want = bool(ref_is_sorted(x, descending=descending))
        assert bool(jmp.is_sorted(x, descending=descending)) == want, x


# ------------------------------------------------------------------------ hand-written edges


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_signed_zeros_are_equal_and_stable(dtype):
    a = np.array([-0.0, 0.0, -0.0], np.float64).astype(dtype)
    b = np.array([0.0, -0.0], np.float64).astype(dtype)
    for descending in DIRECTIONS:
        got, idx = jmp.merge(a, b, descending=descending, return_indices=True)
        np.testing.assert_array_equal(np.asarray(idx), [0, 1, 2, 3, 4])
        assert_bits_equal(got, np.concatenate([a, b]), f"signed zeros desc={descending}")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_nan_last_ascending_first_descending(dtype):
    nans = special_values(dtype)[-2:]  # two NaNs of different bit patterns
    a = np.concatenate([np.array([-np.inf, 1.0], np.float64).astype(dtype), nans[:1]])
    b = np.concatenate([np.array([0.0, np.inf], np.float64).astype(dtype), nans[1:]])
    got, idx = jmp.merge(a, b, return_indices=True)
    np.testing.assert_array_equal(np.asarray(idx), [0, 3, 1, 4, 2, 5])
    assert_bits_equal(got, np.concatenate([a, b])[[0, 3, 1, 4, 2, 5]], "ascending NaN last")
    got, idx = jmp.merge(a[::-1], b[::-1], descending=True, return_indices=True)
    np.testing.assert_array_equal(np.asarray(idx), [0, 3, 4, 1, 5, 2])
    c = np.concatenate([a[::-1], b[::-1]])
    assert_bits_equal(got, c[[0, 3, 4, 1, 5, 2]], "descending NaN first")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_subnormals_are_ordered_as_numbers(dtype):
    """Subnormals must not be flushed to zero (docs/contract.md: CPU and GPU bit-identical;
    docs/architecture.md: no fast-math). -tiny < -0.0 == +0.0 < tiny < 3*tiny < smallest normal."""
    info = ml_dtypes.finfo(dtype)
    tiny = float(info.smallest_subnormal)
    norm = float(info.smallest_normal)
    a = np.array([-norm, -tiny, 0.0, 3 * tiny], np.float64).astype(dtype)
    b = np.array([-3 * tiny, -0.0, tiny, norm], np.float64).astype(dtype)
    got, idx = jmp.merge(a, b, return_indices=True)
    np.testing.assert_array_equal(np.asarray(idx), [0, 4, 1, 2, 5, 6, 3, 7])
    got, idx = jmp.merge(a[::-1], b[::-1], descending=True, return_indices=True)
    np.testing.assert_array_equal(np.asarray(idx), [4, 0, 5, 1, 6, 2, 7, 3])


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_is_sorted_sees_subnormals(dtype):
    """is_sorted uses the merge's order: a subnormal is not equal to zero."""
    tiny = float(ml_dtypes.finfo(dtype).smallest_subnormal)
    a = np.array([-tiny, -0.0, 0.0, tiny, 2 * tiny], np.float64).astype(dtype)
    assert bool(jmp.is_sorted(a))
    assert bool(jmp.is_sorted(a[::-1], descending=True))
    assert not bool(jmp.is_sorted(np.array([tiny, 0.0], np.float64).astype(dtype)))
    assert not bool(jmp.is_sorted(np.array([0.0, -tiny], np.float64).astype(dtype)))
    assert not bool(jmp.is_sorted(np.array([0.0, tiny], np.float64).astype(dtype), descending=True))


@pytest.mark.parametrize("dtype", [d for d in KEY_DTYPES if d.kind in "iu"], ids=dtype_id)
def test_integer_extremes(dtype):
    info = np.iinfo(dtype)
    a = np.array([info.min, info.min, info.min + 2, info.max], dtype)
    b = np.array([info.min, info.min + 3, info.max - 1, info.max, info.max], dtype)
    got, idx = jmp.merge(a, b, return_indices=True)
    np.testing.assert_array_equal(np.asarray(idx), [0, 1, 4, 2, 5, 6, 3, 7, 8])
    assert_bits_equal(got, np.concatenate([a, b])[np.asarray(idx)], "int extremes")
    got, idx = jmp.merge(a[::-1], b[::-1], descending=True, return_indices=True)
    np.testing.assert_array_equal(np.asarray(idx), [0, 4, 5, 6, 7, 1, 2, 3, 8])


def test_64bit_keys_are_compared_exactly():
    """Keys that a float64 (or float32) comparison could not tell apart."""
    big = 2**60
    a = np.array([big, big + 2, big + 4], np.int64)
    b = np.array([big + 1, big + 3, big + 3], np.int64)
    np.testing.assert_array_equal(np.asarray(jmp.merge(a, b)), np.sort(np.concatenate([a, b])))
    ua = np.array([2**63 - 1, 2**63, 2**64 - 2], np.uint64)
    ub = np.array([0, 2**63 + 1, 2**64 - 1], np.uint64)
    _, idx = jmp.merge(ua, ub, return_indices=True)
    np.testing.assert_array_equal(np.asarray(idx), [3, 0, 1, 4, 2, 5])
    fa = np.array([1.0, np.nextafter(1.0, 2.0)], np.float64)
    fb = np.array([1.0, np.nextafter(np.nextafter(1.0, 2.0), 2.0)], np.float64)
    _, idx = jmp.merge(fa, fb, return_indices=True)
    np.testing.assert_array_equal(np.asarray(idx), [0, 2, 1, 3])


def test_unsigned_keys_above_signed_range():
    for dtype in (np.uint8, np.uint16, np.uint32):
        top = np.iinfo(dtype).max
        a = np.array([0, top // 2, top // 2 + 1, top], dtype)
        b = np.array([1, top // 2 + 2, top - 1], dtype)
        got = np.asarray(jmp.merge(a, b))
        np.testing.assert_array_equal(got, np.sort(np.concatenate([a, b])))


def test_bool_keys():
    a = np.array([False, False, True])
    b = np.array([False, True, True])
    got, idx = jmp.merge(a, b, return_indices=True)
    np.testing.assert_array_equal(np.asarray(idx), [0, 1, 3, 2, 4, 5])
    assert np.asarray(got).dtype == np.bool_
    _, idx = jmp.merge(a[::-1], b[::-1], descending=True, return_indices=True)
    np.testing.assert_array_equal(np.asarray(idx), [0, 3, 4, 1, 2, 5])


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_nan_payloads_survive(rng, dtype):
    """Values are input elements gathered by the permutation: NaN signs and payloads are kept."""
    a = sorted_keys(rng, dtype, (64,), "special")
    b = sorted_keys(rng, dtype, (64,), "special")
    got = np.asarray(jmp.merge(a, b))
    want_bits = np.sort(to_bits(np.concatenate([a, b])))
    np.testing.assert_array_equal(np.sort(to_bits(got)), want_bits)
