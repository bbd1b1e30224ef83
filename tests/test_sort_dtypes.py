# Every key dtype of docs/contract.md (bool, int8..int64, uint8..uint64, float16, bfloat16, float32,
# float64) through sort, argsort and sort_by_key in both directions, for every input pattern,
# compared bit-exactly with the numpy order-key references; plus hand-written edge cases: NaN last
# ascending / first descending with payloads kept, +-0.0 equal and stable, +-inf, subnormals
# ordered as numbers (not flushed), int min/max, 64-bit keys that differ below float precision,
# unsigned keys above the signed range, bool keys.
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from merge_checks import DIR_IDS, DIRECTIONS
from reference import (
    FLOAT_DTYPES,
    KEY_DTYPES,
    assert_bits_equal,
    dtype_id,
    random_keys,
    special_values,
    to_bits,
)
from sort_checks import (
    PATTERNS,
    check_sort,
    check_sort_by_key,
    size_of,
    sort_input,
    sort_tile,
)

import jax_mergepath as jmp

pytestmark = pytest.mark.slow  # the slow tier (26 s of test time on 2 cores)


@pytest.mark.parametrize("descending", DIRECTIONS, ids=DIR_IDS)
@pytest.mark.parametrize("dtype", KEY_DTYPES, ids=dtype_id)
def test_sort_every_dtype_every_pattern(rng, dtype, descending):
    """One batch whose rows are the input patterns (each row sorted on its own), then 1-D
    inputs across tile and pass boundaries of sort (no payload) and argsort (int32 payload)."""
    rows = np.stack(
        [sort_input(rng, dtype, (300,), p, descending=descending) for p in PATTERNS]
    )
    check_sort(rows, descending=descending, what="patterns")
    for label, payload in (("2tile+1", 0), ("3tile", 4), ("tile-1", 4)):
        n = size_of(label, sort_tile(dtype, payload))
        pattern = PATTERNS[n % len(PATTERNS)]
        x = sort_input(rng, dtype, (n,), pattern, descending=descending)
        check_sort(x, descending=descending, what=f"{label} {pattern}")


@pytest.mark.parametrize("descending", DIRECTIONS, ids=DIR_IDS)
@pytest.mark.parametrize("dtype", KEY_DTYPES, ids=dtype_id)
def test_sort_by_key_every_key_dtype(rng, dtype, descending):
    keys = random_keys(rng, dtype, (3, 700), "few")
    ids = np.broadcast_to(np.arange(700, dtype=np.int32), (3, 700)).copy()
    check_sort_by_key(keys, ids, descending=descending, what="ids")
    # values with the key's own dtype (special values: bits must survive) and a trailing dim
    vals = random_keys(rng, dtype, (3, 700, 2), "special")
    check_sort_by_key(keys, vals, descending=descending, what="own dtype")
    k1 = random_keys(rng, dtype, (2 * sort_tile(dtype, 8) + 1,), "special")
    check_sort_by_key(k1, np.arange(k1.size, dtype=np.int64), descending=descending, what="1-D")


@pytest.mark.parametrize("value_dtype", KEY_DTYPES + [np.dtype(np.complex64)], ids=dtype_id)
def test_sort_by_key_every_value_dtype(rng, value_dtype):
    keys = random_keys(rng, np.int8, (2, 1500), "few")
    if np.dtype(value_dtype).kind == "c":
        vals = (rng.standard_normal((2, 1500)) + 1j * rng.standard_normal((2, 1500))).astype(
            value_dtype
        )
    else:
        vals = random_keys(rng, value_dtype, (2, 1500), "special")
    for descending in DIRECTIONS:
        check_sort_by_key(keys, vals, descending=descending, what=f"{np.dtype(value_dtype)}")


# ------------------------------------------------------------------------ hand-written edges


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_signed_zeros_are_equal_and_stable(dtype):
    """argsort keeps ties in input order both ways; sort descending is the ascending sort
    reversed (jnp.sort), so its -0.0 / +0.0 come out in reverse input order."""
    x = np.array([-0.0, 0.0, 1.0, -0.0, 0.0, -1.0, 0.0], np.float64).astype(dtype)
    up = [5, 0, 1, 3, 4, 6, 2]
    for descending in DIRECTIONS:
        idx = np.asarray(jmp.argsort(x, descending=descending))
        want = up if not descending else [2, 0, 1, 3, 4, 6, 5]
        np.testing.assert_array_equal(idx, want)
        want_v = x[up[::-1]] if descending else x[up]
        assert_bits_equal(jmp.sort(x, descending=descending), want_v, f"desc={descending}")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_nan_last_ascending_first_descending(dtype):
    nans = special_values(dtype)[-2:]  # two NaNs of different bit patterns (one negative)
    x = np.concatenate([nans[:1], np.array([1.0, -np.inf], np.float64).astype(dtype), nans[1:],
                        np.array([np.inf, 0.0], np.float64).astype(dtype)])  # fmt: skip
    # x = [nan0, 1, -inf, nan1, inf, 0]
    idx = np.asarray(jmp.argsort(x))
    np.testing.assert_array_equal(idx, [2, 5, 1, 4, 0, 3])
    assert_bits_equal(jmp.sort(x), x[[2, 5, 1, 4, 0, 3]], "ascending NaN last")
    idx = np.asarray(jmp.argsort(x, descending=True))
    np.testing.assert_array_equal(idx, [0, 3, 4, 1, 5, 2])
    assert_bits_equal(jmp.sort(x, descending=True), x[[3, 0, 4, 1, 5, 2]], "descending NaN first")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_subnormals_are_ordered_as_numbers(dtype):
    """-norm < -3tiny < -tiny < -0.0 == +0.0 < tiny < 3tiny < norm; subnormals kept bit-exact."""
    info = ml_dtypes.finfo(dtype)
    tiny, norm = float(info.smallest_subnormal), float(info.smallest_normal)
    x = np.array([3 * tiny, 0.0, -tiny, norm, -0.0, tiny, -norm, -3 * tiny], np.float64)
    x = x.astype(dtype)
    want = [6, 7, 2, 1, 4, 5, 0, 3]
    np.testing.assert_array_equal(np.asarray(jmp.argsort(x)), want)
    assert_bits_equal(jmp.sort(x), x[want], "subnormals ascending")
    want_d = [3, 0, 5, 1, 4, 2, 7, 6]
    np.testing.assert_array_equal(np.asarray(jmp.argsort(x, descending=True)), want_d)
    assert_bits_equal(jmp.sort(x, descending=True), x[want[::-1]], "subnormals descending")


@pytest.mark.parametrize("dtype", [d for d in KEY_DTYPES if d.kind in "iu"], ids=dtype_id)
def test_integer_extremes(dtype):
    info = np.iinfo(dtype)
    mid = (int(info.min) + int(info.max)) // 2
    x = np.array([info.max, info.min, mid, info.max, info.min + 1, info.min, info.max - 1], dtype)
    want = [1, 5, 4, 2, 6, 0, 3]
    np.testing.assert_array_equal(np.asarray(jmp.argsort(x)), want)
    assert_bits_equal(jmp.sort(x), x[want], "int extremes")
    want_d = [0, 3, 6, 2, 4, 1, 5]
    np.testing.assert_array_equal(np.asarray(jmp.argsort(x, descending=True)), want_d)


def test_64bit_keys_are_compared_exactly(rng):
    """Keys that a float64 (or float32) comparison could not tell apart."""
    big = 2**60
    x = (big + rng.permutation(1000)).astype(np.int64)
    np.testing.assert_array_equal(np.asarray(jmp.sort(x)), np.arange(big, big + 1000))
    u = np.array([2**64 - 1, 2**63, 0, 2**63 - 1, 2**64 - 2, 2**63 + 1], np.uint64)
    np.testing.assert_array_equal(np.asarray(jmp.argsort(u)), [2, 3, 1, 5, 4, 0])
    one = np.float64(1.0)
    f = np.array([np.nextafter(np.nextafter(one, 2), 2), one, np.nextafter(one, 2)], np.float64)
    np.testing.assert_array_equal(np.asarray(jmp.argsort(f)), [1, 2, 0])


def test_unsigned_keys_above_signed_range():
    for dtype in (np.uint8, np.uint16, np.uint32, np.uint64):
        top = np.iinfo(dtype).max
        x = np.array([top, 0, top // 2 + 1, 1, top // 2, top - 1], dtype)
        np.testing.assert_array_equal(np.asarray(jmp.argsort(x)), [1, 3, 4, 2, 5, 0])


def test_bool_keys():
    x = np.array([True, False, True, False, False])
    np.testing.assert_array_equal(np.asarray(jmp.argsort(x)), [1, 3, 4, 0, 2])
    np.testing.assert_array_equal(np.asarray(jmp.argsort(x, descending=True)), [0, 2, 1, 3, 4])
    got = jmp.sort(x)
    assert np.asarray(got).dtype == np.bool_
    np.testing.assert_array_equal(np.asarray(got), [False, False, False, True, True])


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_nan_payloads_survive(rng, dtype):
    """Sorted values are input elements gathered by the permutation: NaN signs and payloads,
    -0.0 and subnormals are kept (compared as multisets of bits too)."""
    x = random_keys(rng, dtype, (2000,), "special")
    for descending in DIRECTIONS:
        got = np.asarray(jmp.sort(x, descending=descending))
        np.testing.assert_array_equal(np.sort(to_bits(got)), np.sort(to_bits(x)))
