# Correctness of the merge family against the jnp.argsort(stable=True) references (docs/contract.md
# "Merge", "Ordering"): sizes 0/1/2/2^k+-1/tile+-1 and skewed, data patterns, descending,
# batch dims with any axis, return_indices, ragged a_length/b_length, merge_by_key (arrays,
# pytrees, trailing value dims), merge_runs (int and per-row split, clamping), co_rank, is_sorted,
# and robustness on unsorted inputs. Everything is compared bit-exactly, indices included.
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from merge_checks import (
    DIR_IDS,
    DIRECTIONS,
    TILE_TOTALS,
    check_co_rank,
    check_merge,
    check_merge_by_key,
    check_merge_runs,
)
from reference import (
    assert_bits_equal,
    index_dtype,
    is_float,
    is_permutation_of,
    random_keys,
    ref_is_sorted,
    ref_merge,
    ref_sort,
    sort_segments,
    sorted_keys,
)

import jax_mergepath as jmp
from jax_mergepath import _cpu

pytestmark = pytest.mark.slow  # the slow tier (126 s of test time on 2 cores)

# (m, n): 0/1/2, 2^k +- 1 on each side and in total, around likely tile sizes, skewed, mixed.
SIZE_PAIRS = [
    (0, 0), (0, 1), (1, 0), (1, 1), (2, 2), (1, 2), (2, 1), (3, 5), (7, 9), (16, 15),
    (31, 33), (64, 65), (128, 127), (128, 129), (255, 257), (256, 256), (257, 255),
    (511, 513), (1023, 1025), (1024, 1024), (1025, 1023), (1, 1024), (1024, 1),
    (0, 2048), (2048, 0), (2047, 2049), (2048, 2048), (2049, 2047), (2048, 2047), (1, 4096),
    (4095, 4097), (4096, 4096), (4097, 4095), (3017, 3000), (3000, 17), (17, 3000),
    (10000, 5), (5, 10000),
]  # fmt: skip


def _pair_id(p: tuple[int, int]) -> str:
    return f"{p[0]}x{p[1]}"


# ------------------------------------------------------------------------------------ merge


@pytest.mark.parametrize("descending", DIRECTIONS, ids=DIR_IDS)
@pytest.mark.parametrize("dtype", [np.int32, np.float32])
@pytest.mark.parametrize("mn", SIZE_PAIRS, ids=_pair_id)
def test_merge_sizes(rng, mn, dtype, descending):
    m, n = mn
    a = sorted_keys(rng, dtype, (m,), descending=descending)
    b = sorted_keys(rng, dtype, (n,), descending=descending)
    check_merge(a, b, descending=descending, values_only_too=not descending)


@pytest.mark.parametrize("dtype", [np.int8, np.float32, np.float64])
@pytest.mark.parametrize("total", TILE_TOTALS)
def test_merge_tile_boundaries(rng, total, dtype):
    """Output lengths at tile +- 1 for every tile size (key + payload bytes pick the tile)."""
    m = total * 2 // 5
    a = sorted_keys(rng, dtype, (m,))
    b = sorted_keys(rng, dtype, (total - m,))
    check_merge(a, b, values_only_too=True)


@pytest.mark.parametrize("total", TILE_TOTALS)
def test_merge_by_key_tile_boundaries(rng, total):
    m = total // 3
    a_k = sorted_keys(rng, np.float64, (m,), "few")
    b_k = sorted_keys(rng, np.float64, (total - m,), "few")
    check_merge_by_key(a_k, b_k, np.arange(m), np.arange(m, total))  # 8-byte keys + 8-byte values
    a_k16 = sorted_keys(rng, np.int16, (m,), "few")
    b_k16 = sorted_keys(rng, np.int16, (total - m,), "few")
    check_merge_by_key(a_k16, b_k16, a_k16.copy(), b_k16.copy())  # 2 + 2 bytes


def _rows_around_tiles() -> list[tuple[int, int, int]]:
    """(rows, m, n): rows of m + n outputs at tile - 1, tile, tile + 1 for the float32 merge's
    tiles here (keys alone, and with int32 indices or values), read from the native module."""
    cases = []
    for tile in sorted({int(_cpu.merge_tile(4, 0)), int(_cpu.merge_tile(4, 4))}):
        half = tile // 2
        cases += [(7, half - 1, tile - half), (3, tile - 1, 1), (5, half, tile - half + 1)]
    return cases


@pytest.mark.parametrize(
    ("rows", "m", "n"),
    [(1, 1, 0), (255, 2, 1), (256, 1, 1), (257, 5, 6), (600, 2, 1), (300, 7, 4),
     *_rows_around_tiles()],
)  # fmt: skip
def test_merge_packed_and_cut_rows(rng, rows, m, n):
    """Many short rows packed per tile (up to and beyond 256 per tile), rows at tile +- 1."""
    a = sorted_keys(rng, np.float32, (rows, m), "few")
    b = sorted_keys(rng, np.float32, (rows, n), "few")
    check_merge(a, b, values_only_too=True)
    a_len = rng.integers(0, m + 1, rows)
    b_len = rng.integers(0, n + 1, rows)
    a = sort_segments(random_keys(rng, np.int32, (rows, m)), a_len, sort_tail=False)
    b = sort_segments(random_keys(rng, np.int32, (rows, n)), b_len, sort_tail=False)
    check_merge(a, b, a_length=jnp.asarray(a_len), b_length=jnp.asarray(b_len))


@pytest.mark.parametrize("descending", DIRECTIONS, ids=DIR_IDS)
@pytest.mark.parametrize("pattern", ["few", "equal", "special"])
@pytest.mark.parametrize("dtype", [np.int32, np.float32])
@pytest.mark.parametrize(
    "mn", [(5, 7), (257, 255), (1025, 3), (2048, 2049), (4097, 4095)], ids=_pair_id
)
def test_merge_patterns(rng, mn, dtype, pattern, descending):
    m, n = mn
    a = sorted_keys(rng, dtype, (m,), pattern, descending=descending)
    b = sorted_keys(rng, dtype, (n,), pattern, descending=descending)
    check_merge(a, b, descending=descending)


@pytest.mark.parametrize("descending", DIRECTIONS, ids=DIR_IDS)
@pytest.mark.parametrize("order", ["a_first", "b_first"])
@pytest.mark.parametrize("mn", [(1, 1), (100, 3), (3, 100), (2049, 2047), (4096, 1)], ids=_pair_id)
def test_merge_disjoint_ranges(rng, mn, order, descending):
    """All of one input precedes all of the other (a merge path along one edge)."""
    m, n = mn
    c = sorted_keys(rng, np.int32, (m + n,), descending=descending)
    a, b = (c[:m], c[m:]) if order == "a_first" else (c[n:], c[:n])
    check_merge(a, b, descending=descending)


@pytest.mark.parametrize("descending", DIRECTIONS, ids=DIR_IDS)
def test_merge_all_equal_keys_keeps_a_before_b(rng, descending):
    """Ties: every element of a precedes every element of b, in both directions."""
    a = np.zeros(300, np.float32)
    b = np.full(200, -0.0, np.float32)
    got, idx = jmp.merge(a, b, descending=descending, return_indices=True)
    np.testing.assert_array_equal(np.asarray(idx), np.arange(500, dtype=np.int32))
    assert_bits_equal(got, np.concatenate([a, b]), "all-equal merge")


def test_merge_default_returns_single_array(rng):
    a = sorted_keys(rng, np.int32, (10,))
    b = sorted_keys(rng, np.int32, (6,))
    check_merge(a, b, values_only_too=True)
    check_merge(a, b, values_only_too=True, descending=False, axis=-1)


def test_merge_accepts_jax_arrays_and_python_lists():
    got = jmp.merge(jnp.array([1, 3, 5], jnp.int32), jnp.array([2, 3, 4], jnp.int32))
    np.testing.assert_array_equal(np.asarray(got), [1, 2, 3, 3, 4, 5])
    _, idx = jmp.merge(jnp.array([1.0, 3.0]), jnp.array([1.0, 2.0]), return_indices=True)
    np.testing.assert_array_equal(np.asarray(idx), [0, 2, 3, 1])


@pytest.mark.parametrize("descending", DIRECTIONS, ids=DIR_IDS)
@pytest.mark.parametrize(
    ("a_shape", "b_shape", "axis"),
    [
        ((4, 33), (4, 31), -1),
        ((4, 33), (4, 31), 1),
        ((2, 3, 100), (2, 3, 1), -1),
        ((33, 4), (31, 4), 0),
        ((33, 4), (31, 4), -2),
        ((3, 257, 2), (3, 255, 2), 1),
        ((3, 17, 2), (3, 0, 2), -2),
        ((2, 2, 9, 3), (2, 2, 12, 3), 2),
        ((5, 0), (5, 0), -1),
        ((0, 7), (0, 9), -1),
    ],
)
@pytest.mark.parametrize("dtype", [np.int16, np.float32])
def test_merge_batched_any_axis(rng, a_shape, b_shape, axis, dtype, descending):
    a = sorted_keys(rng, dtype, a_shape, "few", axis=axis, descending=descending)
    b = sorted_keys(rng, dtype, b_shape, "few", axis=axis, descending=descending)
    check_merge(a, b, axis=axis, descending=descending)


def test_merge_batched_rows_are_independent(rng):
    """Each row of a batch equals the 1-D merge of that row."""
    a = sorted_keys(rng, np.float32, (6, 40))
    b = sorted_keys(rng, np.float32, (6, 25))
    got, idx = jmp.merge(a, b, return_indices=True)
    for r in range(6):
        want_v, want_i = ref_merge(a[r], b[r])
        assert_bits_equal(np.asarray(got)[r], want_v, f"row {r}")
        assert_bits_equal(np.asarray(idx)[r], want_i, f"row {r} indices")


# ------------------------------------------------------------------------------- ragged merge


def _ragged_inputs(rng, dtype, a_shape, b_shape, a_len, b_len, axis, descending):
    """Keys whose valid prefixes are sorted and whose invalid tails are unsorted garbage."""
    a = sort_segments(random_keys(rng, dtype, a_shape), a_len, axis, descending, sort_tail=False)
    b = sort_segments(random_keys(rng, dtype, b_shape), b_len, axis, descending, sort_tail=False)
    return a, b


@pytest.mark.parametrize("descending", DIRECTIONS, ids=DIR_IDS)
@pytest.mark.parametrize(
    ("a_len", "b_len"),
    [(0, 0), (0, None), (None, 0), (1, 13), (20, None), (None, 31), (37, 50), (37, 0), (20, 13)],
)
def test_merge_ragged_int_lengths(rng, a_len, b_len, descending):
    a, b = _ragged_inputs(
        rng,
        np.float32,
        (37,),
        (50,),
        37 if a_len is None else a_len,
        50 if b_len is None else b_len,
        -1,
        descending,
    )
    check_merge(a, b, a_length=a_len, b_length=b_len, descending=descending)


@pytest.mark.parametrize("descending", DIRECTIONS, ids=DIR_IDS)
@pytest.mark.parametrize("dtype", [np.int32, np.float64])
@pytest.mark.parametrize(("rows", "m", "n"), [(8, 40, 33), (64, 300, 257), (5, 1025, 2049)])
def test_merge_ragged_per_row_lengths(rng, rows, m, n, dtype, descending):
    a_len = rng.integers(0, m + 1, rows)
    b_len = rng.integers(0, n + 1, rows)
    a_len[:3] = [0, m, m]  # empty and full rows are included
    b_len[:3] = [n, 0, n]
    a, b = _ragged_inputs(rng, dtype, (rows, m), (rows, n), a_len, b_len, -1, descending)
    check_merge(
        a,
        b,
        a_length=jnp.asarray(a_len, jnp.int32),
        b_length=jnp.asarray(b_len, jnp.int32),
        descending=descending,
    )


def test_merge_ragged_only_one_length_array(rng):
    a_len = rng.integers(0, 21, 6)
    a, b = _ragged_inputs(rng, np.int32, (6, 20), (6, 15), a_len, 15, -1, False)
    check_merge(a, b, a_length=jnp.asarray(a_len, jnp.int32))
    b_len = rng.integers(0, 16, 6)
    a, b = _ragged_inputs(rng, np.int32, (6, 20), (6, 15), 20, b_len, -1, False)
    check_merge(a, b, b_length=jnp.asarray(b_len, jnp.int32))


def test_merge_ragged_numpy_length_arrays(rng):
    a_len = rng.integers(0, 11, 4).astype(np.int32)
    b_len = rng.integers(0, 9, 4).astype(np.int32)
    a, b = _ragged_inputs(rng, np.float32, (4, 10), (4, 8), a_len, b_len, -1, False)
    check_merge(a, b, a_length=a_len, b_length=b_len)


@pytest.mark.parametrize("descending", DIRECTIONS, ids=DIR_IDS)
def test_merge_ragged_axis_not_last(rng, descending):
    a_len = rng.integers(0, 21, (3, 2))
    b_len = rng.integers(0, 12, (3, 2))
    a, b = _ragged_inputs(rng, np.float32, (3, 20, 2), (3, 11, 2), a_len, b_len, 1, descending)
    check_merge(
        a,
        b,
        axis=1,
        a_length=jnp.asarray(a_len, jnp.int32),
        b_length=jnp.asarray(b_len, jnp.int32),
        descending=descending,
    )


def test_merge_ragged_output_is_permutation(rng):
    a_len = rng.integers(0, 51, 10)
    b_len = rng.integers(0, 51, 10)
    a, b = _ragged_inputs(rng, np.float32, (10, 50), (10, 50), a_len, b_len, -1, False)
    got = jmp.merge(a, b, a_length=jnp.asarray(a_len, jnp.int32), b_length=jnp.asarray(b_len))
    assert is_permutation_of(got, a, b)


# ------------------------------------------------------------------------------ merge_by_key


@pytest.mark.parametrize("descending", DIRECTIONS, ids=DIR_IDS)
@pytest.mark.parametrize(
    "mn", [(0, 0), (0, 5), (5, 0), (1, 1), (100, 37), (2049, 2047)], ids=_pair_id
)
def test_merge_by_key_array_values(rng, mn, descending):
    m, n = mn
    a_k = sorted_keys(rng, np.float32, (m,), "few", descending=descending)
    b_k = sorted_keys(rng, np.float32, (n,), "few", descending=descending)
    # Values are the positions in the concatenation: they show the permutation, ties included.
    a_v = np.arange(m, dtype=np.int32)
    b_v = np.arange(m, m + n, dtype=np.int32)
    check_merge_by_key(a_k, b_k, a_v, b_v, descending=descending)
    _, got_v = jmp.merge_by_key(a_k, b_k, a_v, b_v, descending=descending)
    _, want_i = ref_merge(a_k, b_k, descending=descending)
    np.testing.assert_array_equal(np.asarray(got_v), want_i)


@pytest.mark.parametrize("descending", DIRECTIONS, ids=DIR_IDS)
def test_merge_by_key_trailing_value_dims(rng, descending):
    a_k = sorted_keys(rng, np.int32, (4, 30), "few", descending=descending)
    b_k = sorted_keys(rng, np.int32, (4, 21), "few", descending=descending)
    a_v = rng.standard_normal((4, 30, 3)).astype(np.float32)
    b_v = rng.standard_normal((4, 21, 3)).astype(np.float32)
    check_merge_by_key(a_k, b_k, a_v, b_v, descending=descending)
    # 1-D keys, values with two trailing dims.
    a_k1 = sorted_keys(rng, np.float64, (17,), descending=descending)
    b_k1 = sorted_keys(rng, np.float64, (9,), descending=descending)
    a_v1 = rng.integers(0, 100, (17, 2, 3)).astype(np.int64)
    b_v1 = rng.integers(0, 100, (9, 2, 3)).astype(np.int64)
    check_merge_by_key(a_k1, b_k1, a_v1, b_v1, descending=descending)


def test_merge_by_key_axis_not_last(rng):
    a_k = sorted_keys(rng, np.float32, (25, 4), "few", axis=0)
    b_k = sorted_keys(rng, np.float32, (13, 4), "few", axis=0)
    a_v = rng.standard_normal((25, 4, 2)).astype(np.float32)
    b_v = rng.standard_normal((13, 4, 2)).astype(np.float32)
    check_merge_by_key(a_k, b_k, a_v, b_v, axis=0)
    check_merge_by_key(a_k, b_k, a_v[..., 0], b_v[..., 0], axis=-2)


@pytest.mark.parametrize("descending", DIRECTIONS, ids=DIR_IDS)
def test_merge_by_key_pytree_values(rng, descending):
    m, n = 40, 27
    a_k = sorted_keys(rng, np.uint16, (3, m), "few", descending=descending)
    b_k = sorted_keys(rng, np.uint16, (3, n), "few", descending=descending)

    def particles(size: int) -> dict:
        return {
            "pos": rng.standard_normal((3, size, 3)).astype(np.float32),
            "vel": (
                rng.standard_normal((3, size)).astype(np.float64),
                random_keys(rng, jnp.bfloat16, (3, size), "special"),
            ),
            "id": rng.integers(0, 2**40, (3, size)).astype(np.int64),
            "alive": rng.random((3, size)) < 0.5,
        }

    check_merge_by_key(a_k, b_k, particles(m), particles(n), descending=descending)


def test_merge_by_key_values_of_every_dtype(rng):
    a_k = sorted_keys(rng, np.int8, (50,), "few")
    b_k = sorted_keys(rng, np.int8, (45,), "few")
    dts = [np.bool_, np.int8, np.uint16, np.int32, np.uint64, np.float16, jnp.bfloat16, np.float64]
    a_v = [random_keys(rng, dt, (50,)) for dt in dts]
    b_v = [random_keys(rng, dt, (45,)) for dt in dts]
    check_merge_by_key(a_k, b_k, a_v, b_v)


# -------------------------------------------------------------------------------- merge_runs


@pytest.mark.parametrize("descending", DIRECTIONS, ids=DIR_IDS)
@pytest.mark.parametrize("split", [0, 1, 50, 99, 100])
def test_merge_runs_int_split(rng, split, descending):
    x = sort_segments(random_keys(rng, np.float32, (100,), "few"), split, -1, descending)
    check_merge_runs(x, split, descending=descending)


@pytest.mark.parametrize("split", [-1, -7, 101, 10**6])
def test_merge_runs_int_split_clamped(rng, split):
    """An out-of-range split is clamped to [0, d]: x is then one sorted run."""
    x = sorted_keys(rng, np.int32, (100,), "few")
    check_merge_runs(x, split)
    got, idx = jmp.merge_runs(x, split, return_indices=True)
    np.testing.assert_array_equal(np.asarray(idx), np.arange(100, dtype=np.int32))


@pytest.mark.parametrize("descending", DIRECTIONS, ids=DIR_IDS)
@pytest.mark.parametrize("dtype", [np.int64, np.float32])
@pytest.mark.parametrize(("rows", "d"), [(8, 77), (32, 513), (4, 4097)])
def test_merge_runs_per_row_split(rng, rows, d, dtype, descending):
    split = rng.integers(-5, d + 6, rows)  # includes values clamped to 0 and to d
    split[:4] = [0, d, -3, d + 3]
    x = sort_segments(random_keys(rng, dtype, (rows, d)), split, -1, descending)
    check_merge_runs(x, jnp.asarray(split, jnp.int32), descending=descending)


def test_merge_runs_axis_not_last(rng):
    split = rng.integers(0, 41, (3, 2))
    x = sort_segments(random_keys(rng, np.float32, (3, 40, 2), "few"), split, 1)
    check_merge_runs(x, jnp.asarray(split, jnp.int32), axis=1)
    check_merge_runs(x, jnp.asarray(split, jnp.int32), axis=-2)


@pytest.mark.parametrize("d", [0, 1, 2, 255, 256, 257, 4096, 4097])
def test_merge_runs_sizes(rng, d):
    split = d // 3
    x = sort_segments(random_keys(rng, np.int32, (d,)), split)
    check_merge_runs(x, split)


def test_merge_runs_equals_merge_of_the_runs(rng):
    a = sorted_keys(rng, np.float32, (5, 30), "few")
    b = sorted_keys(rng, np.float32, (5, 30), "few")
    x = np.concatenate([a, b], axis=-1)
    got_v, got_i = jmp.merge_runs(x, 30, return_indices=True)
    want_v, want_i = jmp.merge(a, b, return_indices=True)
    assert_bits_equal(got_v, want_v, "merge_runs vs merge")
    assert_bits_equal(got_i, want_i, "merge_runs vs merge indices")


# ----------------------------------------------------------------------------------- co_rank


@pytest.mark.parametrize("descending", DIRECTIONS, ids=DIR_IDS)
@pytest.mark.parametrize("pattern", ["random", "few", "equal"])
@pytest.mark.parametrize(
    "mn", [(0, 0), (0, 4), (4, 0), (1, 1), (10, 7), (255, 257), (1000, 3)], ids=_pair_id
)
def test_co_rank(rng, mn, pattern, descending):
    m, n = mn
    a = sorted_keys(rng, np.float32, (m,), pattern, descending=descending)
    b = sorted_keys(rng, np.float32, (n,), pattern, descending=descending)
    check_co_rank(np.arange(m + n + 1, dtype=np.int32), a, b, descending=descending)


def test_co_rank_unordered_queries_and_property(rng):
    a = sorted_keys(rng, np.int32, (60,), "few")
    b = sorted_keys(rng, np.int32, (45,), "few")
    k = rng.permutation(106).astype(np.int32)[:40]
    check_co_rank(k, a, b)
    i = np.asarray(jmp.co_rank(k, a, b))
    merged = ref_merge(a, b)[0]
    for kk, ii in zip(k.tolist(), i.tolist(), strict=True):
        assert 0 <= ii <= min(kk, 60) and kk - ii <= 45
        assert_bits_equal(merged[:kk], ref_merge(a[:ii], b[: kk - ii])[0], f"k={kk}")


def test_co_rank_ties_prefer_a(rng):
    a = np.full(5, 3, np.int32)
    b = np.full(4, 3, np.int32)
    got = np.asarray(jmp.co_rank(np.arange(10, dtype=np.int32), a, b))
    np.testing.assert_array_equal(got, [0, 1, 2, 3, 4, 5, 5, 5, 5, 5])


# --------------------------------------------------------------------------------- is_sorted

NAN = np.nan
IS_SORTED_CASES = [
    # (values, dtype, ascending?, descending?)
    ([], np.float32, True, True),
    ([1.0], np.float32, True, True),
    ([1.0, 2.0, 2.0, 3.0], np.float32, True, False),
    ([3.0, 2.0, 2.0, 1.0], np.float32, False, True),
    ([2.0, 2.0, 2.0], np.float32, True, True),
    ([0.0, -0.0, 0.0], np.float32, True, True),
    ([-0.0, 0.0], np.float64, True, True),
    ([1.0, 2.0, NAN], np.float32, True, False),
    ([1.0, NAN, NAN], np.float16, True, False),
    ([NAN, 1.0, 2.0], np.float32, False, False),
    ([NAN, 2.0, 1.0], np.float32, False, True),
    ([NAN, NAN, 2.0, 1.0], jnp.bfloat16, False, True),
    ([2.0, 1.0, NAN], np.float32, False, False),
    ([1.0, NAN, 2.0], np.float64, False, False),
    ([NAN, NAN], np.float32, True, True),
    ([-np.inf, -1.0, np.inf, NAN], np.float32, True, False),
    ([np.inf, -np.inf], np.float32, False, True),
    ([1, 0], np.int32, False, True),
    ([-128, 0, 127], np.int8, True, False),
    ([0, 2**64 - 1], np.uint64, True, False),
    ([2**63 - 1, -(2**63)], np.int64, False, True),
    ([0, 255, 128], np.uint8, False, False),
    ([False, True, True], np.bool_, True, False),
    ([True, False], np.bool_, False, True),
]


@pytest.mark.parametrize(("vals", "dtype", "asc", "desc"), IS_SORTED_CASES)
def test_is_sorted_cases(vals, dtype, asc, desc):
    x = np.array(vals, dtype=np.float64).astype(dtype) if is_float(dtype) else None
    x = np.array(vals, dtype=dtype) if x is None else x
    assert bool(jmp.is_sorted(x)) == asc
    assert bool(jmp.is_sorted(x, descending=False)) == asc
    assert bool(jmp.is_sorted(x, descending=True)) == desc
    assert np.shape(jmp.is_sorted(x)) == ()


@pytest.mark.parametrize("descending", DIRECTIONS, ids=DIR_IDS)
@pytest.mark.parametrize("axis", [-1, 0])
def test_is_sorted_batched(rng, axis, descending):
    shape = (12, 20) if axis == -1 else (20, 12)
    x = random_keys(rng, np.float32, shape, "few")
    s = ref_sort(x, axis, descending)
    take = rng.random(12) < 0.5
    take[:2] = [True, False]
    sel = take[:, None] if axis == -1 else take[None, :]
    x = np.where(sel, s, x)
    want = ref_is_sorted(x, axis=axis, descending=descending)
    assert want.any() and not want.all()
    got = np.asarray(jmp.is_sorted(x, axis=axis, descending=descending))
    # docs/contract.md leaves the result's shape open: one flag per row, or one for the whole array.
    if got.shape == want.shape:
        np.testing.assert_array_equal(got, want)
    else:
        assert got.shape == (), got.shape
        assert bool(got) == bool(want.all())


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.uint64])
@pytest.mark.parametrize("d", [2, 257, 4097])
def test_is_sorted_agrees_with_reference(rng, dtype, d):
    s = sorted_keys(rng, dtype, (d,))
    assert bool(jmp.is_sorted(s))
    assert bool(jmp.is_sorted(s, descending=True)) == bool(ref_is_sorted(s, descending=True))
    r = s[::-1].copy()
    assert bool(jmp.is_sorted(r, descending=True)) == bool(ref_is_sorted(r, descending=True))
    swapped = s.copy()
    i = d // 2
    swapped[i - 1], swapped[i] = s[i], s[i - 1]
    assert bool(jmp.is_sorted(swapped)) == bool(ref_is_sorted(swapped))


# ---------------------------------------------------------------------------- unsorted input


@pytest.mark.parametrize("mn", [(1, 1), (30, 17), (1025, 2047), (4097, 3)], ids=_pair_id)
def test_merge_unsorted_input_does_not_crash(rng, mn):
    """Precondition violated: order unspecified, but shapes, dtypes and indices stay sane."""
    m, n = mn
    a = random_keys(rng, np.float32, (2, m), "special")
    b = random_keys(rng, np.float32, (2, n))
    got, idx = jmp.merge(a, b, return_indices=True)
    got, idx = np.asarray(got), np.asarray(idx)
    assert got.shape == (2, m + n) and got.dtype == np.float32
    assert idx.shape == (2, m + n) and idx.dtype == index_dtype()
    assert ((idx >= 0) & (idx < m + n)).all()
    assert_bits_equal(got, np.take_along_axis(np.concatenate([a, b], -1), idx, -1), "gathered")
    plain = jmp.merge(a, b, descending=True)
    assert plain.shape == (2, m + n) and plain.dtype == jnp.float32
    plain = jax.jit(jmp.merge)(b, a)
    assert plain.shape == (2, m + n) and plain.dtype == jnp.float32


def test_merge_unsorted_ragged_and_family_do_not_crash(rng):
    a = random_keys(rng, np.int64, (4, 100))
    b = random_keys(rng, np.int64, (4, 60))
    out = jmp.merge(a, b, a_length=jnp.array([0, 5, 100, 50]), b_length=jnp.array([60, 0, 7, 3]))
    assert out.shape == (4, 160) and out.dtype == jnp.int64
    k, v = jmp.merge_by_key(a, b, a.astype(np.float32), b.astype(np.float32))
    assert k.shape == (4, 160) and v.shape == (4, 160) and v.dtype == jnp.float32
    r = jmp.merge_runs(np.concatenate([a, b], -1), jnp.array([0, 50, 100, 160]))
    assert r.shape == (4, 160) and r.dtype == jnp.int64
    c = np.asarray(jmp.co_rank(np.arange(161, dtype=np.int32), a[0], b[0]))
    assert c.shape == (161,) and (c >= 0).all() and (c <= 100).all()
