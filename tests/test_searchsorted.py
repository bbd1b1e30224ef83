# searchsorted, the drop-in for jnp.searchsorted (docs/contract.md "Sort"): int32 insertion points
# of v's shape; side "left" / "right"; a sorted in the package's key order (NaN last, -0.0 == +0.0),
# so NaN / inf / -0.0 / subnormal queries land where the order keys say; duplicates in a; empty a,
# empty v, 0-d v, v longer and shorter than a; batched a (rows searched independently, any query
# shape after the batch dims); sorted_v=True agrees with sorted_v=False on sorted v; dtypes are
# promoted as jnp does (int a, float v); under jit and vmap. Reference: numpy searchsorted over
# the order keys after JAX's promotion (sort_checks.ref_searchsorted), plus jnp.searchsorted itself
# on plain data.
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference import KEY_DTYPES, assert_bits_equal, dtype_id, random_keys, ref_sort
from sort_checks import (
    check_searchsorted,
    no_nans,
    no_subnormals,
    ref_searchsorted,
    shape_id,
    sorted_queries,
)
from tiers import core_fast

import jax_mergepath as jmp

pytestmark = pytest.mark.fast  # the fast tier (the README's test command)

SIDES = ["left", "right"]


def test_hand_example():
    a = np.array([-np.inf, -1.0, 0.0, -0.0, 0.0, 2.0, 2.0, np.inf, np.nan, np.nan], np.float32)
    v = np.array([-0.0, 0.0, 2.0, np.nan, -np.nan, np.inf, -np.inf, 1.0, 3.0], np.float32)
    np.testing.assert_array_equal(np.asarray(jmp.searchsorted(a, v)), [2, 2, 5, 8, 8, 7, 0, 5, 7])
    np.testing.assert_array_equal(
        np.asarray(jmp.searchsorted(a, v, side="right")), [5, 5, 7, 10, 10, 8, 1, 5, 7]
    )
    got = jmp.searchsorted(a, v)
    assert np.asarray(got).dtype == np.int32


@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize(
    "dtype", core_fast(KEY_DTYPES, lambda d: np.dtype(d) in (np.int32, np.float32)), ids=dtype_id)
def test_every_dtype(rng, dtype, side):
    """a with duplicates and edge values (NaN, +-0, +-inf, subnormals, int min/max), queries
    drawn from the same values and from fresh ones, unsorted and sorted."""
    a = ref_sort(random_keys(rng, dtype, (700,), "few"))
    a_special = ref_sort(random_keys(rng, dtype, (300,), "special"))
    for a_ in (a, a_special):
        for pattern in ("random", "special", "few"):
            v = random_keys(rng, dtype, (257,), pattern)
            check_searchsorted(a_, v, side, what=pattern)
            check_searchsorted(a_, ref_sort(v), side, what=f"sorted {pattern}")


@pytest.mark.parametrize("side", core_fast(SIDES, lambda side: side == SIDES[0]))
@pytest.mark.parametrize(
    ("n", "q"),
    [(0, 5), (5, 0), (0, 0), (1, 1), (1, 50), (50, 1), (7, 3000), (3000, 7), (4097, 4095),
     (20000, 20001), (100000, 33)],
    ids=lambda v: str(v),
)  # fmt: skip
def test_sizes(rng, n, q, side):
    a = ref_sort(random_keys(rng, np.float32, (n,), "few" if n % 2 else "random"))
    v = random_keys(rng, np.float32, (q,), "few")
    check_searchsorted(a, v, side, what=f"n={n} q={q}")
    check_searchsorted(a, ref_sort(v), side, what=f"sorted n={n} q={q}")


@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize("v_shape", [(), (1,), (3, 4), (2, 3, 5), (0, 3)], ids=shape_id)
def test_query_shapes_1d_a(rng, v_shape, side):
    a = ref_sort(random_keys(rng, np.int32, (100,), "random"))
    v = random_keys(rng, np.int32, v_shape)
    got = jmp.searchsorted(a, v, side)
    assert np.asarray(got).shape == v_shape
    check_searchsorted(a, v, side, what=f"v{v_shape}")
    if v_shape:
        check_searchsorted(a, sorted_queries(v), side, what=f"sorted v{v_shape}")
    # python scalars and 0-d arrays
    got = jmp.searchsorted(a, a[37], side)
    assert np.asarray(got).shape == ()
    assert int(got) == int(ref_searchsorted(a, a[37], side))


@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize(
    ("a_shape", "v_shape"),
    [((3, 50), (3, 7)), ((3, 50), (3,)), ((3, 50), (3, 4, 5)), ((2, 3, 64), (2, 3, 9)),
     ((2, 3, 64), (2, 3)), ((4, 1), (4, 10)), ((4, 0), (4, 6)), ((5, 300), (5, 0)),
     ((0, 10), (0, 5)), ((300, 9), (300, 11)), ((2, 5000), (2, 3000))],
    ids=shape_id,
)  # fmt: skip
def test_batched(rng, a_shape, v_shape, side):
    a = ref_sort(random_keys(rng, np.float64, a_shape, "few"))
    v = random_keys(rng, np.float64, v_shape, "few")
    check_searchsorted(a, v, side, what=f"a{a_shape} v{v_shape}")
    if len(v_shape) >= len(a_shape):
        vs = sorted_queries(v, len(a_shape) - 1)
        check_searchsorted(a, vs, side, what=f"sorted a{a_shape} v{v_shape}")


@pytest.mark.parametrize("side", SIDES)
def test_sorted_v_rows_sorted_along_last_axis(rng, side):
    """sorted_v=True promises v sorted along its LAST axis (each row of queries on its own, not
    all of v in row-major order), and must then give what sorted_v=False gives."""
    a = np.arange(10, dtype=np.int32)
    v = np.array([[5, 9], [0, 1]], np.int32)  # rows sorted; v.ravel() is not
    want = ref_searchsorted(a, v, side)
    assert_bits_equal(jmp.searchsorted(a, v, side), want, "sorted_v=False")
    assert_bits_equal(jmp.searchsorted(a, v, side, sorted_v=True), want, "sorted_v=True 1-D a")
    A = ref_sort(random_keys(rng, np.float32, (3, 200), "few"))
    V = ref_sort(random_keys(rng, np.float32, (3, 4, 50), "few"))  # sorted along the last axis
    want = ref_searchsorted(A, V, side)
    assert_bits_equal(jmp.searchsorted(A, V, side, sorted_v=True), want, "sorted_v=True batched")


def test_batched_rows_are_independent(rng):
    a = ref_sort(random_keys(rng, np.int16, (4, 80)))
    v = random_keys(rng, np.int16, (4, 30))
    got = np.asarray(jmp.searchsorted(a, v))
    for r in range(4):
        np.testing.assert_array_equal(got[r], np.searchsorted(a[r], v[r]), err_msg=f"row {r}")


@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize("dtype", core_fast([np.uint8, np.int32, np.float32, np.float64],
                                             lambda d: d in (np.uint8, np.float32)), ids=dtype_id)
def test_sorted_v_agrees(rng, dtype, side):
    """sorted_v=True (one merge-path pass) equals sorted_v=False and the reference on sorted
    queries, with many duplicates between a and v, across sizes where the pass is tiled."""
    for n, q in ((1, 1000), (1000, 1), (3000, 3000), (10000, 257), (257, 10000)):
        a = ref_sort(random_keys(rng, dtype, (n,), "few"))
        v = ref_sort(np.concatenate([random_keys(rng, dtype, (q - q // 2,)), a[: q // 2]]))
        want = ref_searchsorted(a, v, side)
        got_t = jmp.searchsorted(a, v, side, sorted_v=True)
        got_f = jmp.searchsorted(a, v, side, sorted_v=False)
        assert_bits_equal(got_t, want, f"sorted_v=True n={n} q={q}")
        assert_bits_equal(got_f, want, f"sorted_v=False n={n} q={q}")
    A = ref_sort(random_keys(rng, dtype, (6, 400), "few"))
    V = sorted_queries(random_keys(rng, dtype, (6, 2, 300), "few"), 1)
    want = ref_searchsorted(A, V, side)
    assert_bits_equal(jmp.searchsorted(A, V, side, sorted_v=True), want, "batched sorted_v")


# A jitted sorted_v=True search whose output reuses a donated buffer of -7s (same shape and
# dtype): a query the search never wrote keeps its -7 and shows as out of bounds.
@functools.partial(jax.jit, static_argnums=2, donate_argnums=3)
def _search_into_junk(a, v, side, junk):
    del junk  # donated: XLA may place the output in its buffer
    return jmp.searchsorted(a, v, side, sorted_v=True)


@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize("pattern", core_fast(["descending", "random", "sawtooth", "one_late"],
                                             lambda p: p in ("random", "one_late")))
def test_unsorted_v_with_sorted_v_stays_in_bounds(rng, side, pattern):
    """sorted_v=True on queries that are NOT sorted: the result is unspecified but every
    position is written and in [0, len(a)] (the docstring's promise), across one-tile sizes,
    merges of many tiles (their partition splits need not chain up on such queries), rows of a
    tile each and short rows several to a block."""
    for n, q in ((3000, 3000), (1 << 16, 1 << 16), (1000, 1 << 18), (1 << 20, 1 << 20)):
        a = ref_sort(rng.integers(-1000, 1000, n).astype(np.int32))
        if pattern == "descending":
            v = -np.sort(-rng.integers(-1100, 1100, q)).astype(np.int32)
        elif pattern == "random":
            v = rng.integers(-1100, 1100, q).astype(np.int32)
        elif pattern == "sawtooth":  # sorted runs of ~1024, each from the whole range
            raw = rng.integers(-1100, 1100, q).astype(np.int32)
            v = np.concatenate([np.sort(run) for run in np.array_split(raw, q // 1024)])
        else:  # sorted but for one early query far too large
            v = np.sort(rng.integers(-1100, 1100, q)).astype(np.int32)
            v[q // 7] = 5000
        got = np.asarray(_search_into_junk(a, v, side, jnp.full(q, -7, jnp.int32)))
        assert got.shape == (q,) and got.dtype == np.int32
        assert got.min() >= 0 and got.max() <= n, (n, q, got.min(), got.max())
    # Rows of one tile each, and short rows several to a block (the GPU's rows kernel), their
    # queries in the pattern's order along each row.
    for rows, n, q in ((40, 3000, 5000), (300, 1000, 65), (300, 40, 900)):
        rows_a = ref_sort(rng.integers(-50, 50, (rows, n)).astype(np.int32))
        rows_v = rng.integers(-60, 60, (rows, q)).astype(np.int32)
        if pattern == "descending":
            rows_v = -np.sort(-rows_v, axis=-1)
        elif pattern == "sawtooth":  # sorted runs of ~q / 4 a row
            rows_v = np.concatenate([np.sort(r, axis=-1) for r in np.array_split(rows_v, 4, -1)],
                                    axis=-1)
        elif pattern == "one_late":
            rows_v = np.sort(rows_v, axis=-1)
            rows_v[:, q // 7] = 5000
        junk = jnp.full((rows, q), -7, jnp.int32)
        got = np.asarray(_search_into_junk(rows_a, rows_v, side, junk))
        assert got.min() >= 0 and got.max() <= n, (rows, n, q, got.min(), got.max())


@pytest.mark.parametrize(
    ("a_dtype", "v_dtype"),
    [(np.int32, np.float32), (np.float32, np.int32), (np.int8, np.int64), (np.uint8, np.int8),
     (np.float16, np.float32), (jnp.bfloat16, np.float16), (np.bool_, np.int32),
     (np.int64, np.float64), (np.uint32, np.int32)],
    ids=lambda d: dtype_id(d),
)  # fmt: skip
def test_dtype_promotion(rng, a_dtype, v_dtype):
    """Mixed dtypes are compared after JAX's promotion, as jnp.searchsorted does (so an int a and
    float v compare as floats: 2.5 falls between 2 and 3)."""
    a = ref_sort(random_keys(rng, a_dtype, (300,)))
    v = random_keys(rng, v_dtype, (200,))
    for side in SIDES:
        check_searchsorted(a, v, side, what=f"{np.dtype(a_dtype)} {np.dtype(v_dtype)}")
    ai = np.arange(10, dtype=np.int32)
    vf = np.array([2.5, -0.5, 9.5, 3.0, np.nan], np.float32)
    np.testing.assert_array_equal(np.asarray(jmp.searchsorted(ai, vf)), [3, 0, 10, 3, 10])
    np.testing.assert_array_equal(np.asarray(jmp.searchsorted(ai, vf, "right")), [3, 0, 10, 4, 10])


def test_python_scalar_queries_take_a_dtype_as_in_jnp():
    """A Python scalar query is weakly typed: it is converted to a's dtype first (rounded, or
    wrapped for unsigned a), as jnp.searchsorted's promotion does."""
    cases = [
        (jnp.array([1.0, 1.0009765625, 2.0], jnp.float16), 1.0001),  # rounds to 1.0 in float16
        (jnp.array([1.0, 1.0078125, 2.0], jnp.bfloat16), 1.001),
        (jnp.array([0, 5, 200], jnp.uint8), -1),  # 255 in uint8
        (jnp.array([1, 2, 3], jnp.int32), 1.5),  # a float query against ints: compared as floats
    ]
    for a, v in cases:
        for side in SIDES:
            want = int(jnp.searchsorted(a, v, side))
            assert int(jmp.searchsorted(a, v, side)) == want, (a.dtype, v, side)
            assert int(jmp.searchsorted(a, v, side, sorted_v=True)) == want, (a.dtype, v)


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.float64], ids=dtype_id)
def test_matches_jnp_searchsorted(rng, dtype):
    """On data without NaN or subnormals, the same as jnp.searchsorted."""
    a = np.sort(no_nans(no_subnormals(random_keys(rng, dtype, (500,)))))
    v = no_nans(no_subnormals(random_keys(rng, dtype, (3, 100))))
    v[0, :50] = a[:50]  # exact hits
    for side in SIDES:
        got = np.asarray(jmp.searchsorted(a, v, side))
        want = np.asarray(jnp.searchsorted(a, v, side))
        np.testing.assert_array_equal(got, want.astype(np.int32))


def test_jit_and_vmap_over_queries(rng):
    a = ref_sort(random_keys(rng, np.float32, (1000,), "special"))
    V = random_keys(rng, np.float32, (8, 50), "special")
    for side in SIDES:
        f = jax.jit(functools.partial(jmp.searchsorted, side=side))
        assert_bits_equal(f(a, V), ref_searchsorted(a, V, side), f"jit {side}")
        g = jax.vmap(functools.partial(jmp.searchsorted, side=side), in_axes=(None, 0))
        assert_bits_equal(g(a, V), ref_searchsorted(a, V, side), f"vmap {side}")
        h = jax.jit(jax.vmap(functools.partial(jmp.searchsorted, side=side), in_axes=(None, 1)))
        assert_bits_equal(h(a, V), ref_searchsorted(a, V.T, side), f"jit vmap in_axes 1 {side}")
        vs = ref_sort(V)
        s = jax.jit(jax.vmap(functools.partial(jmp.searchsorted, side=side, sorted_v=True),
                             in_axes=(None, 0)))  # fmt: skip
        assert_bits_equal(s(a, vs), ref_searchsorted(a, vs, side), f"jit vmap sorted_v {side}")
    # a traced scalar query
    q = jax.jit(lambda a, x: jmp.searchsorted(a, x))(a, jnp.float32(0.5))
    assert int(q) == int(ref_searchsorted(a, np.float32(0.5)))


def test_query_count_beyond_int32_is_accepted():
    # Positions are int32 but the number of queries is not limited by it (review finding): only
    # a's length, and the merge path's merged length, must fit. Traced only (no 2^31 buffers).
    a = jax.ShapeDtypeStruct((10,), np.int32)
    v = jax.ShapeDtypeStruct((2**16, 2**15 + 1), np.int8)
    for sorted_v in (False, True):
        out = jax.eval_shape(lambda a, v, s=sorted_v: jmp.searchsorted(a, v, sorted_v=s), a, v)
        assert out.shape == v.shape and out.dtype == np.int32
