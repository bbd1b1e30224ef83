# Correctness of sort, argsort and sort_by_key against the numpy order-key references
# (docs/contract.md "Sort", "Ordering"): sizes 0/1/2/3, tile +- 1, 2 tiles +- 1, 3 tiles
# (odd number of runs), 4 tiles + 1 (more passes), 2^k +- 1 and > 2^20, at the native tile of each
# key/payload size; input patterns (random, few distinct, all equal, special values, presorted,
# reverse, organ pipe, sorted with a few swaps); batch dimensions with rows of many widths and any
# axis; stability (argsort of ties, +-0.0 bits); drop-in equality with jnp.sort / jnp.argsort; and
# sort_by_key with arrays, trailing value dimensions and pytrees. Compared bit-exactly.
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from merge_checks import DIR_IDS, DIRECTIONS
from reference import (
    assert_bits_equal,
    dtype_id,
    index_dtype,
    np_argsort,
    random_keys,
    ref_argsort,
    ref_jnp_sort,
    ref_sort,
)
from sort_checks import (
    PATTERNS,
    SIZE_LABELS,
    check_sort,
    check_sort_by_key,
    no_subnormals,
    ref_sort_by_key,
    shape_id,
    size_of,
    sort_input,
    sort_tile,
)
from tiers import core_fast

import jax_mergepath as jmp

pytestmark = pytest.mark.fast  # the fast tier (the README's test command)

# ------------------------------------------------------------------------------ sizes

# The fast tier's sizes (every size in the slow tier): around one tile and past a few.
CORE_SIZE_LABELS = {"1", "tile-1", "tile+1", "2tile+1", "4tile+1", "2^13+1"}


@pytest.mark.parametrize("label", core_fast(SIZE_LABELS, lambda s: s in CORE_SIZE_LABELS))
@pytest.mark.parametrize("dtype", core_fast([np.uint8, np.int16, np.int32, np.float32, np.float64],
                                             lambda d: d is np.float32), ids=dtype_id)
def test_sort_tile_sizes(rng, dtype, label):
    """sort (no payload) at sizes around its tile; argsort (int32 payload) around its own."""
    for descending in DIRECTIONS:
        n = size_of(label, sort_tile(dtype, 0))
        pattern = "few" if descending else "random"
        x = random_keys(rng, dtype, (n,), pattern)
        got = jmp.sort(x, descending=descending)
        assert_bits_equal(got, ref_jnp_sort(x, -1, descending), f"sort n={n} desc={descending}")
        n = size_of(label, sort_tile(dtype, 4))
        x = random_keys(rng, dtype, (n,), pattern)
        got = jmp.argsort(x, descending=descending)
        want = np_argsort(x, -1, descending)
        assert_bits_equal(got, want, f"argsort n={n} desc={descending}")


@pytest.mark.parametrize("descending", DIRECTIONS, ids=DIR_IDS)
@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("dtype", [np.int32, np.float32], ids=dtype_id)
def test_sort_patterns(rng, dtype, pattern, descending):
    """Every input pattern, 1-D, over several merge passes (sort and argsort)."""
    n = 2 * sort_tile(dtype, 4) + 3 * sort_tile(dtype, 0) // 2 + 7
    x = sort_input(rng, dtype, (n,), pattern, descending=descending)
    check_sort(x, descending=descending, what=pattern)
    y = sort_input(rng, dtype, (37,), pattern, descending=descending)
    check_sort(y, descending=descending, what=pattern)


@pytest.mark.parametrize(
    ("dtype", "n", "descending", "pattern"),
    core_fast([
        (np.uint8, 2**20 + 17, False, "random"),
        (np.float16, 2**20 + 3, True, "special"),
        (np.int32, 2**21 - 1, False, "random"),
        (np.float32, 2**21 + 5, True, "random"),
        (np.int64, 2**20 + 1, True, "few"),
        (np.float64, 2**20 + 9, False, "organ"),
    ], lambda case: case[0] in (np.uint8, np.float32), unpack=True),
    ids=["uint8", "float16-desc", "int32", "float32-desc", "int64-desc", "float64-organ"],
)
def test_sort_large(rng, dtype, n, descending, pattern):
    x = sort_input(rng, dtype, (n,), pattern, descending=descending)
    check_sort(x, descending=descending, what=f"large {pattern}")


# ------------------------------------------------------------------------------ stability


def test_stability_hand_example():
    x = np.array([3, 1, 3, 1, 2], np.int32)
    np.testing.assert_array_equal(np.asarray(jmp.argsort(x)), [1, 3, 4, 0, 2])
    np.testing.assert_array_equal(np.asarray(jmp.argsort(x, descending=True)), [0, 2, 4, 1, 3])
    np.testing.assert_array_equal(np.asarray(jmp.sort(x)), [1, 1, 2, 3, 3])
    np.testing.assert_array_equal(np.asarray(jmp.sort(x, descending=True)), [3, 3, 2, 1, 1])


@pytest.mark.parametrize("descending", DIRECTIONS, ids=DIR_IDS)
@pytest.mark.parametrize("n", [1, 2, 100, 5000, 20001])
def test_all_equal_keeps_input_order(rng, n, descending):
    """All keys equal (+0.0 and -0.0 mixed): argsort is the identity in both directions; sort
    returns the input bits unchanged, reversed when descending (as jnp.sort)."""
    x = np.where(rng.random(n) < 0.5, 0.0, -0.0).astype(np.float32)
    got = jmp.sort(x, descending=descending)
    assert_bits_equal(got, x[::-1] if descending else x, "all-equal sort")
    idx = jmp.argsort(x, descending=descending)
    assert_bits_equal(idx, np.arange(n, dtype=index_dtype()), "all-equal argsort")
    ints = np.full(n, -3, np.int64)
    assert_bits_equal(jmp.argsort(ints, descending=descending), np.arange(n, dtype=index_dtype()))


@pytest.mark.parametrize("descending", DIRECTIONS, ids=DIR_IDS)
def test_many_ties_argsort(rng, descending):
    """Two distinct keys in long runs: the order within each key is the input order."""
    n = 3 * sort_tile(np.int8, 4) + 11
    x = rng.integers(0, 2, n).astype(np.int8)
    idx = np.asarray(jmp.argsort(x, descending=descending))
    first, second = (1, 0) if descending else (0, 1)
    want = np.concatenate([np.flatnonzero(x == first), np.flatnonzero(x == second)])
    np.testing.assert_array_equal(idx, want.astype(np.int32))


# ------------------------------------------------------------------------------ batches and axes


def _width(w: str) -> int:
    return sort_tile(np.float32, 4) + 3 if w == "tile+3" else int(w)


@pytest.mark.parametrize("descending", DIRECTIONS, ids=DIR_IDS)
@pytest.mark.parametrize("dtype", core_fast([np.int16, np.float32], lambda d: d is np.float32),
                         ids=dtype_id)
@pytest.mark.parametrize(
    ("rows", "width"),
    [(700, "1"), (300, "7"), (100, "64"), (9, "513"), (3, "tile+3"), (1, "513"), (2, "0")],
    ids=shape_id,
)
def test_sort_batched_rows(rng, rows, width, dtype, descending):
    """Many rows of one width: every row sorted on its own (rows packed into tiles, or cut)."""
    x = random_keys(rng, dtype, (rows, _width(width)), "few")
    check_sort(x, descending=descending, what="rows")


def test_sort_batched_rows_are_independent(rng):
    x = np.stack([sort_input(rng, np.float64, (300,), p) for p in ("random", "few", "reverse")])
    got_v, got_i = jmp.sort(x), jmp.argsort(x)
    for r in range(3):
        assert_bits_equal(np.asarray(got_v)[r], ref_sort(x[r]), f"row {r}")
        assert_bits_equal(np.asarray(got_i)[r], np_argsort(x[r]), f"row {r} indices")


AXIS_CASES = [
    ((33, 4), 0),
    ((33, 4), -2),
    ((4, 33), 1),
    ((3, 257, 2), 1),
    ((3, 257, 2), -2),
    ((2, 3, 100, 5), 2),
    ((2, 3, 100, 5), 0),
    ((5, 2, 3), 0),
    ((2, 0, 3), 1),
    ((0, 7), -1),
    ((7, 0), 0),
    ((513, 3), 0),
    ((2, 8001, 2), 1),
]


@pytest.mark.parametrize("descending", core_fast(DIRECTIONS, lambda d: not d), ids=DIR_IDS)
@pytest.mark.parametrize("dtype", core_fast([np.uint32, np.float32], lambda d: d is np.float32),
                         ids=dtype_id)
@pytest.mark.parametrize(("shape", "axis"), AXIS_CASES, ids=shape_id)
def test_sort_any_axis(rng, shape, axis, dtype, descending):
    x = sort_input(rng, dtype, shape, "few", axis=axis)
    check_sort(x, axis=axis, descending=descending, what="axis")


def test_argsort_matches_jnp_reference_on_batches(rng):
    """ref_argsort (jnp.argsort over order keys) agrees with the outputs too (not only numpy)."""
    x = random_keys(rng, np.float32, (4, 300, 3), "special")
    for descending in DIRECTIONS:
        got = jmp.argsort(x, axis=1, descending=descending)
        assert_bits_equal(got, ref_argsort(x, 1, descending), f"desc={descending}")


# ------------------------------------------------------------------------------ drop-in


@pytest.mark.parametrize("descending", DIRECTIONS, ids=DIR_IDS)
@pytest.mark.parametrize(
    "dtype", core_fast([np.bool_, np.int8, np.uint16, np.int64, jnp.bfloat16, np.float32,
                        np.float64], lambda d: d in (np.int8, np.float32)),
    ids=dtype_id,
)  # fmt: skip
def test_matches_jnp_sort_and_argsort(rng, dtype, descending):
    """Without subnormals (XLA:CPU flushes them), sort equals jnp.sort bit for bit (ties of a
    descending sort reversed, as jnp) and argsort equals jnp.argsort(stable=True) exactly,
    dtypes included."""
    x = no_subnormals(random_keys(rng, dtype, (3, 1001)))
    assert_bits_equal(jmp.sort(x, descending=descending), jnp.sort(x, descending=descending))
    got_i = jmp.argsort(x, descending=descending)
    assert_bits_equal(got_i, jnp.argsort(x, stable=True, descending=descending))


def test_accepts_jax_and_numpy_arrays():
    np.testing.assert_array_equal(np.asarray(jmp.sort(jnp.array([3, 1, 2], jnp.int32))), [1, 2, 3])
    got = jmp.argsort(np.array([2.0, -1.0, 0.5]))
    np.testing.assert_array_equal(np.asarray(got), [1, 2, 0])
    assert np.asarray(got).dtype == index_dtype()
    k, v = jmp.sort_by_key(jnp.array([2, 0, 1]), jnp.array([10.0, 20.0, 30.0]))
    np.testing.assert_array_equal(np.asarray(k), [0, 1, 2])
    np.testing.assert_array_equal(np.asarray(v), [20.0, 30.0, 10.0])


def test_argsort_int64_with_x64():
    """argsort's positions are jnp.argsort's: int64 with x64 on (int32 with it off)."""
    assert jax.config.jax_enable_x64
    for dt in (np.int64, np.float64, np.uint8):
        assert np.asarray(jmp.argsort(np.arange(10, dtype=dt)[::-1])).dtype == np.int64
        with jax.enable_x64(False):
            assert jmp.argsort(np.arange(10, dtype=np.int32)).dtype == np.int32


# ------------------------------------------------------------------------------ sort_by_key


@pytest.mark.parametrize("descending", DIRECTIONS, ids=DIR_IDS)
@pytest.mark.parametrize("n", [0, 1, 2, 37, 1000, 9001])
def test_sort_by_key_array_values(rng, n, descending):
    keys = random_keys(rng, np.float32, (n,), "few")
    vals = np.arange(n, dtype=np.int32)  # the values show the permutation itself
    check_sort_by_key(keys, vals, descending=descending)
    got_k, got_v = jmp.sort_by_key(keys, vals, descending=descending)
    assert isinstance(got_v, jax.Array), type(got_v)
    assert_bits_equal(got_v, np_argsort(keys, -1, descending).astype(np.int32), "values = argsort")


@pytest.mark.parametrize("label", ["1", "tile-1", "tile", "tile+1", "2tile+1", "3tile", "4tile+1"])
@pytest.mark.parametrize(
    ("key_dtype", "value_dtype"),
    core_fast([(np.float32, np.int8), (np.float32, np.float16), (np.int32, np.float32),
               (np.float32, np.int64), (np.float64, np.float64), (np.uint16, np.uint8),
               (np.float32, np.complex128)], lambda pair: pair == (np.int32, np.float32),
              unpack=True),
    ids=lambda d: dtype_id(d),
)  # fmt: skip
def test_sort_by_key_tile_sizes(rng, key_dtype, value_dtype, label):
    """Sizes around the tile of each key and payload width (1 to 16 bytes)."""
    n = size_of(label, sort_tile(key_dtype, np.dtype(value_dtype).itemsize))
    keys = random_keys(rng, key_dtype, (n,), "few")
    if np.dtype(value_dtype).kind == "c":
        vals = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(value_dtype)
    else:
        vals = random_keys(rng, value_dtype, (n,))
    check_sort_by_key(keys, vals, descending=bool(n % 2))


@pytest.mark.parametrize("descending", DIRECTIONS, ids=DIR_IDS)
def test_sort_by_key_particles_pytree(rng, descending):
    """Particles sorted by cell id: positions (n, 3) float32 move with their keys, with ids,
    velocities, flags and species."""
    n = 3001
    cells = rng.integers(0, 50, n).astype(np.int32)
    particles = {
        "pos": rng.standard_normal((n, 3)).astype(np.float32),
        "vel": rng.standard_normal((n, 3)).astype(np.float64),
        "id": np.arange(n, dtype=np.int32),
        "alive": rng.random(n) < 0.5,
        "species": rng.integers(-128, 128, n).astype(np.int8),
    }
    check_sort_by_key(cells, particles, descending=descending, what="particles")
    _, got = jmp.sort_by_key(cells, particles, descending=descending)
    assert set(got) == set(particles)
    # each particle's fields stay together
    ids = np.asarray(got["id"])
    np.testing.assert_array_equal(np.asarray(got["pos"]), particles["pos"][ids])
    np.testing.assert_array_equal(np.asarray(got["alive"]), particles["alive"][ids])


@pytest.mark.parametrize("descending", DIRECTIONS, ids=DIR_IDS)
def test_sort_by_key_nested_pytree_and_dtypes(rng, descending):
    keys = random_keys(rng, np.uint16, (4, 257), "few")
    values = (
        [random_keys(rng, jnp.bfloat16, (4, 257), "special"), np.arange(4 * 257).reshape(4, 257)],
        {
            "c64": (rng.standard_normal((4, 257, 2)) + 1j * rng.standard_normal((4, 257, 2)))
            .astype(np.complex64),
            "c128": rng.standard_normal((4, 257)) + 1j * rng.standard_normal((4, 257)),
            "f16": random_keys(rng, np.float16, (4, 257), "special"),
            "u64": random_keys(rng, np.uint64, (4, 257)),
            "b": rng.random((4, 257)) < 0.3,
        },
    )
    check_sort_by_key(keys, values, descending=descending, what="nested")


@pytest.mark.parametrize("descending", core_fast(DIRECTIONS, lambda d: not d), ids=DIR_IDS)
@pytest.mark.parametrize(
    ("key_shape", "value_shape", "axis"),
    [((50,), (50, 3), -1), ((50,), (50, 2, 3), 0), ((4, 60), (4, 60, 3), -1),
     ((60, 4), (60, 4, 3), 0), ((3, 40, 2), (3, 40, 2, 5), 1), ((3, 40, 2), (3, 40, 2), -2),
     ((0,), (0, 3), -1), ((2, 0), (2, 0, 4), 1)],
    ids=shape_id,
)  # fmt: skip
def test_sort_by_key_trailing_dims_and_axis(rng, key_shape, value_shape, axis, descending):
    keys = sort_input(rng, np.int32, key_shape, "few", axis=axis)
    vals = rng.standard_normal(value_shape).astype(np.float32)
    check_sort_by_key(keys, vals, axis=axis, descending=descending, what="trailing")
    check_sort_by_key(keys, {"v": vals, "w": vals.astype(np.int16)}, axis=axis,
                      descending=descending, what="trailing tree")  # fmt: skip


def test_sort_by_key_keys_equal_sort(rng):
    """The keys output is sort(keys), bits included (+-0.0, NaN payloads)."""
    keys = random_keys(rng, np.float64, (3, 500), "special")
    for descending in DIRECTIONS:
        got_k, _ = jmp.sort_by_key(keys, np.zeros((3, 500), np.int8), descending=descending)
        assert_bits_equal(got_k, ref_sort(keys, -1, descending), f"desc={descending}")
        want_k, _ = ref_sort_by_key(keys, np.zeros((3, 500)), descending=descending)
        assert_bits_equal(got_k, want_k, "ref_sort_by_key")
