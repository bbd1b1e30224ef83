# GPU-only sort-family tests (skip themselves unless jax's default device is a GPU): CPU-vs-GPU
# bit-identity (docs/contract.md: results bit-identical on every backend, indices included) for
# every key dtype through sort, argsort, sort_by_key, lax_sort and searchsorted; sizes around the
# block-sort tile and merge passes compared with the references on the GPU; one 2**25-element int32
# sort and a 2**24-element float32 argsort.
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from merge_checks import DIR_IDS, DIRECTIONS
from reference import (
    KEY_DTYPES,
    assert_bits_equal,
    dtype_id,
    np_argsort,
    random_keys,
    ref_sort,
)
from sort_checks import (
    PATTERNS,
    assert_leaf_bits_equal,
    check_argsort_only,
    check_lax_sort,
    check_searchsorted,
    check_sort,
    check_sort_by_key,
    check_sort_only,
    sort_input,
    sort_tile,
    sorted_queries,
    tile_sizes,
)

import jax_mergepath as jmp
from jax_mergepath import _cpu, _ffi

pytestmark = pytest.mark.requires_gpu  # the GPU tier: skipped without a GPU


def test_gpu_is_default_device():
    assert jax.devices()[0].platform == "gpu"
    x = jnp.zeros(4, jnp.int32)
    assert next(iter(jmp.sort(x).devices())).platform == "gpu"


# --------------------------------------------------------------------------- GPU vs references


def test_gpu_large_int32_sort(rng):
    n = 2**25
    x = rng.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32)
    x[rng.integers(0, n, 64)] = np.iinfo(np.int32).min
    got = np.asarray(jmp.sort(x))
    np.testing.assert_array_equal(got, np.sort(x))


def test_gpu_large_float32_argsort(rng):
    n = 2**24
    x = random_keys(rng, np.float32, (n,), "random")  # duplicates, NaNs, +-0, subnormals
    got = np.asarray(jmp.argsort(x))
    assert_bits_equal(got, np_argsort(x), "2**24 float32 argsort")


@pytest.mark.parametrize(
    ("dtype", "descending"),
    [(np.uint8, False), (np.int16, True), (jnp.bfloat16, False), (np.int32, False),
     (np.float32, True), (np.int64, False), (np.float64, True)],
    ids=lambda v: dtype_id(v) if not isinstance(v, bool) else ("desc" if v else "asc"),
)  # fmt: skip
def test_gpu_tile_sweep(rng, dtype, descending):
    """Sizes around the sort and argsort tiles and pass boundaries, plus 2^17 +- 1."""
    for payload in (0, 4):
        for i, n in enumerate([*tile_sizes(sort_tile(dtype, payload)), 2**17 - 1, 2**17 + 1]):
            pattern = PATTERNS[i % len(PATTERNS)]
            x = sort_input(rng, dtype, (n,), pattern, descending=descending)
            check_sort(x, descending=descending, what=f"gpu {pattern}")


# Merge sorts (forced: as dispatched, most of these take the radix path) of 4- or 8-byte keys,
# alone or with argsort's positions, that move at least tuning/sort.h's quad_min_bytes a pass merge
# four runs a pass (quad passes): an even count of two-way levels after the block sort, or an odd
# one (a two-way pass first; or, 4-byte keys alone or with 4-byte payloads, the wide block sort's
# tile where it leaves fewer passes), quads of one to three runs (a row's last), sorted rows that
# skip every pass, both directions; keys alone (4 and 8 bytes), argsort (keys with int32
# positions: 4 + 4 and 8 + 4 bytes) and sort_by_key (4 + 4 bytes). Elements over 4 bytes merge
# eight runs a pass instead (eight-way passes, tuning/sort.h sort_pass_factor: after a quad pass or
# a two-way pass where the levels are not a multiple of three: "8w", "q + 8w", "2 + 8w" below),
# groups of one to seven runs at a row's end.
_QUAD_CASES = [
    ("sort", np.int32, (2**27 + 5,), True, "few"),  # 15 levels: the wide block sort, 14
    ("sort", np.uint32, (3, 3 * 2**23 + 7), False, "random"),  # rows of 13 levels: wide, 12
    ("sort", np.float32, (2**27 + 3,), True, "sparse"),  # wide; plain and NaN-last tiles
    # the wide tile: more workspace than the narrow tile's (_cpu.sort_tile(4, 0))
    ("sort", np.int32, (81_788_929,), False, "random"),
    ("sort", np.uint32, (78_000_000,), True, "few"),  # wide, 13 levels: a two-way pass, 6 quads
    ("sort", np.float32, (143 * 2**20,), False, "special"),  # 16 levels: wide, 14 (7 quads)
    ("argsort", np.int32, (150 * 2**20,), False, "random"),  # 16 levels: 2 + 8w
    ("argsort", np.int32, (2**26 + 5,), True, "few"),  # 15 levels: wide, 14 (q + 8w)
    ("argsort", np.int32, (47_000_000,), False, "random"),  # 15 levels: wide, 13 (2 + 8w)
    ("argsort", np.float32, (2**26 + 7,), False, "special"),  # wide; NaN-last; q + 8w
    ("argsort", np.float32, (2**24 + 3,), True, "random"),  # 128 MB a pass: the smallest; 8w
    ("sort_by_key", np.int32, (2**24 + 3,), False, "few"),  # 4-byte values: wide tile; 8w
    ("sort", np.int32, (2**26 + 1,), False, "random"),  # 256 MB: 4-byte elements' smallest
    ("argsort", np.int64, (2**26 + 11,), True, "random"),  # wide (8 + 4 bytes), 13: 2 + 8w
    ("argsort", np.float64, (2**24 + 5,), False, "special"),  # wide, 11: q + 8w; NaN-last
    ("sort", np.int64, (2**26 + 3,), True, "random"),  # wide (8 bytes), 13 levels: 2 + 8w
    ("sort_by_key", np.int64, (2**24 + 5,), True, "random"),  # wide (8 + 4), 11: q + 8w
    ("sort", np.float64, (3, 2**25 + 99), False, "few"),  # rows, wide, 12: 8w; row 1 sorted
    ("argsort", np.int64, (2, 2**24 + 5), False, "random"),  # rows, wide, 11: q + 8w; row 1 too
]


@pytest.mark.parametrize(
    ("op", "dtype", "shape", "descending", "pattern"),
    _QUAD_CASES,
    ids=[f"{op}-{dtype_id(d)}-{'x'.join(map(str, s))}" for op, d, s, _, _ in _QUAD_CASES],
)
def test_gpu_quad_passes(rng, op, dtype, shape, descending, pattern):
    x = sort_input(rng, dtype, shape, pattern, descending=descending)
    if len(shape) == 2:
        x[1] = np.sort(x[1])
    with _ffi.forced_sort_method("merge"):
        if op == "sort_by_key":
            values = rng.integers(-(2**31), 2**31, x.shape, dtype=np.int64).astype(np.int32)
            check_sort_by_key(x, values, descending=descending)
            return
        check = check_argsort_only if op == "argsort" else check_sort_only
        check(x, descending=descending)


# One row longer than the narrow block-sort tile that the wide one holds whole takes the wide
# block sort alone (tuning/sort.h sort_takes_wide_tile: no row flags, no pass; the block checks
# its own order): both tiles' edges, every wide shape it takes (4-byte keys alone and with
# argsort's positions or sort_by_key's 4-byte values, 2-byte keys with them, 8-byte keys alone),
# random, special and presorted keys.
@pytest.mark.parametrize(("op", "dtype"), [
    ("sort", np.int32), ("sort", np.float32), ("argsort", np.uint32), ("argsort", np.float32),
    ("sort_by_key", np.int32), ("sort", np.float64), ("sort", np.int64),
    ("argsort", np.int16), ("argsort", jnp.bfloat16), ("sort_by_key", np.float16),
], ids=lambda v: v if isinstance(v, str) else dtype_id(v))
def test_gpu_one_row_in_the_wide_tile(rng, op, dtype):
    carried = 0 if op == "sort" else 4
    key_bytes = np.dtype(dtype).itemsize
    narrow = int(_cpu.sort_tile(key_bytes, carried))
    wide = int(np.prod(_cpu.cuda_sort_shape(key_bytes, carried, 1, narrow + 1)))
    assert wide > narrow, (narrow, wide)
    for i, n in enumerate((narrow + 1, (narrow + wide) // 2, wide - 1, wide)):
        for pattern in ("random", "special", "sorted"):
            x = sort_input(rng, dtype, (n,), pattern, descending=i % 2 == 1)
            with _ffi.forced_sort_method("merge"):
                if op == "sort_by_key":
                    values = rng.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32)
                    check_sort_by_key(x, values, descending=i % 2 == 1)
                else:
                    check = check_argsort_only if op == "argsort" else check_sort_only
                    check(x, descending=i % 2 == 1)


# Sorted rows (row_done) skip their passes' partitions as well as their merges (partition.cuh
# row_done_of_merge): two-way passes (no quads at these sizes) over rows of which one is sorted,
# and one presorted row of many passes, beside unsorted rows whose splits must still be found.
@pytest.mark.parametrize(("op", "dtype", "shape"), [
    ("argsort", np.int32, (3, 2**22 + 3)), ("sort", np.float32, (2, 2**22 + 1)),
    ("sort", np.int32, (2**24 + 7,)), ("argsort", np.float32, (2**23 + 5,)),
])
def test_gpu_sorted_rows_skip_their_partitions(rng, op, dtype, shape):
    x = sort_input(rng, dtype, shape, "random", descending=False)
    x = np.sort(x) if len(shape) == 1 else np.stack([x[0], np.sort(x[1]), *x[2:]])
    with _ffi.forced_sort_method("merge"):
        (check_argsort_only if op == "argsort" else check_sort_only)(x, descending=False)


# Sorted rows are stored to the outputs by the row flags' kernel as it checks them (kernels/
# sorted_copy.cuh; the block sort and the passes then leave them alone): keys alone, argsort's
# positions and values of every width; rows whose ends fall inside a chunk of 16 keys, on a
# chunk's end (length a multiple of 16), and a sorted last row whose last chunk holds one key;
# sorted rows of random, tied ("few": positions show the order) and special keys (-0.0 / +0.0
# and NaNs of distinct bits in order); rows sorted but for their last pair or for 1% of their
# keys swapped (their chunks in order stored for nothing, then overwritten by their passes) and a
# random row beside them. (The results are checked, not which path made them: the probe cases
# sort_presorted and argsort_presorted time it.)
@pytest.mark.parametrize("descending", DIRECTIONS, ids=DIR_IDS)
@pytest.mark.parametrize(("op", "dtype", "value_dtype"), [
    ("sort", np.int32, None), ("argsort", np.float32, None), ("sort", np.float64, None),
    ("argsort", jnp.bfloat16, None), ("sort", np.int16, None),
    ("sort_by_key", np.float32, np.int8), ("sort_by_key", np.int32, np.float16),
    ("sort_by_key", np.float32, np.int32), ("sort_by_key", np.int64, np.float64),
], ids=lambda v: v if isinstance(v, str) else dtype_id(v))
def test_gpu_sorted_rows_stored_with_their_flags(rng, op, dtype, value_dtype, descending):
    payload = 0 if op == "sort" else (4 if value_dtype is None else np.dtype(value_dtype).itemsize)
    rows, t = 7, sort_tile(dtype, payload)
    one_key_last = next(d for d in range(2 * t + 1, 2 * t + 17) if rows * d % 16 == 1)
    for d in (one_key_last, (2 * t + 15) // 16 * 16):
        x = np.stack([
            sort_input(rng, dtype, (d,), "sorted", descending=descending),
            sort_input(rng, dtype, (d,), "few", descending=descending),
            sort_input(rng, dtype, (d,), "special", descending=descending),
            sort_input(rng, dtype, (d,), "sorted", descending=descending),
            sort_input(rng, dtype, (d,), "random"),
            sort_input(rng, dtype, (d,), "swaps", descending=descending),
            sort_input(rng, dtype, (d,), "sorted", descending=descending),
        ])
        x[1] = ref_sort(x[1], -1, descending)
        x[2] = ref_sort(x[2], -1, descending)
        x[3, [-2, -1]] = x[3, [-1, -2]]  # sorted but for its last pair (unless the two tie)
        with _ffi.forced_sort_method("merge"):
            if op == "sort_by_key":
                values = random_keys(rng, value_dtype, x.shape)
                check_sort_by_key(x, values, descending=descending)
            else:
                check = check_argsort_only if op == "argsort" else check_sort_only
                check(x, descending=descending)


# float32 tiles without NaN and -0.0 sort by plain compares and, keys alone, a min / max network
# (block_sort.cuh, ordering.h PlainHeldKey); a tile with one takes the NaN-last order. "plain":
# every tile the first way; "sparse" (a NaN or -0.0 about every 10^4 keys): both in one sort.
# (float64 keeps the NaN-last order: checked on the same data.)
@pytest.mark.parametrize("pattern", ["plain", "sparse"])
@pytest.mark.parametrize("descending", DIRECTIONS, ids=DIR_IDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=dtype_id)
def test_gpu_plain_float_tiles(rng, dtype, descending, pattern):
    for payload in (0, 4):
        t = sort_tile(dtype, payload)
        for n in (t - 1, t + 1, 5 * t + 3, 2**17 + 1):
            x = sort_input(rng, dtype, (n,), pattern, descending=descending)
            check_sort(x, descending=descending, what=f"gpu {pattern}")
    rows = sort_input(rng, dtype, (300, 513), pattern, descending=descending)
    check_sort(rows, descending=descending, what=f"gpu rows {pattern}")
    keys = sort_input(rng, dtype, (3 * sort_tile(dtype, 4) + 5,), pattern)
    check_sort_by_key(keys, np.arange(keys.size, dtype=np.int32), descending=descending)

    def both(x):
        return (jmp.sort(x, descending=descending), jmp.argsort(x, descending=descending))

    x = sort_input(rng, dtype, (2**20 + 7,), pattern)
    _assert_same_on_cpu_and_gpu(both, x, what=f"{pattern} 2**20+7")


@pytest.mark.parametrize("value_dtype", [np.int8, np.float16, np.int32, np.float64], ids=dtype_id)
def test_gpu_sort_by_key_tile_sweep(rng, value_dtype):
    t = sort_tile(np.float32, np.dtype(value_dtype).itemsize)
    for n in (t - 1, t, t + 1, 2 * t + 1, 3 * t, 4 * t + 1):
        keys = random_keys(rng, np.float32, (n,), "few")
        check_sort_by_key(keys, random_keys(rng, value_dtype, (n,)), descending=bool(n % 2))


def test_gpu_batched_rows(rng):
    t = sort_tile(np.float32, 4)
    for rows, width in ((5000, 1), (3000, 7), (700, 64), (40, 513), (7, t + 3), (3, 4 * t + 1)):
        x = random_keys(rng, np.float32, (rows, width), "few")
        check_sort(x, what="gpu rows")
        check_sort(np.ascontiguousarray(x.T), axis=0, descending=True, what="gpu rows axis 0")


def test_gpu_lax_sort_and_searchsorted(rng):
    k1 = random_keys(rng, np.int64, (3, 9000), "few")
    k2 = random_keys(rng, np.float64, (3, 9000), "special")
    check_lax_sort([k1, k2, np.arange(27000).reshape(3, 9000)], num_keys=2, what="gpu")
    a = ref_sort(random_keys(rng, np.float32, (3, 20000), "few"))
    v = random_keys(rng, np.float32, (3, 5000), "special")
    for side in ("left", "right"):
        check_searchsorted(a, v, side, what="gpu")
        check_searchsorted(a, ref_sort(v), side, what="gpu sorted")


def test_gpu_searchsorted_around_the_ranks_tile(rng):
    """sorted_v=True merges a with the queries on searchsorted's own tile (tuning/merge.h
    merge_shape_for, ranks payload): outputs around one and two tiles, rows packed into tiles,
    one merge whose tiles split themselves (under merge_splits_in_tiles' bound) and one that
    takes the partition pass (over it)."""
    threads, items, min_blocks = _cpu.merge_shape_for(4, 4, 0)  # int32 keys, ranks of B
    tile = threads * items
    # tuning/merge.h merge_searching_tiles_most: kSelfSplitMaxWaves (4) waves on the device's SMs
    self_split_tiles = max(4 * jax.devices()[0].core_count * min_blocks, 1024)
    totals = (tile - 1, tile, tile + 1, 2 * tile + 1, (self_split_tiles - 7) * tile + 3,
              (self_split_tiles + 300) * tile + 1)
    for total in totals:
        m = total // 2 + 1
        a = ref_sort(random_keys(rng, np.int32, (m,), "few"))
        v = sorted_queries(random_keys(rng, np.int32, (total - m,), "few"))
        for side in ("left", "right"):
            check_searchsorted(a, v, side, what=f"gpu {m} + {total - m}")
    rows = random_keys(rng, np.int32, (300, tile // 5), "few")
    v = sorted_queries(random_keys(rng, np.int32, (300, tile // 7), "few"), batch_ndim=1)
    check_searchsorted(ref_sort(rows), v, "left", what="gpu rows")


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.uint8, jnp.bfloat16, np.int64,
                                   np.float64], ids=dtype_id)  # fmt: skip
def test_gpu_searchsorted_short_rows(rng, dtype):
    """Batched sorted-query searches of rows up to half the ranks tile run the rows kernel, several
    rows a block (tuning/merge.h merge_is_packed); longer rows stay tiled. Row lengths around that
    bound (queries + a), tiny rows, queries longer than a, an empty a, both sides, against the
    reference; the CPU gives the same bits."""
    threads, items, _ = _cpu.merge_shape_for(np.dtype(dtype).itemsize, 3, 0)  # ranks of A
    half = threads * items // 2
    shapes = ((4096, 1024, 65), (333, 1, 1), (100, 5, 3), (700, 17, 40), (9, 3, half - 3),
              (5, 0, 30), (50, half - 100, 99), (50, half - 100, 100), (50, half - 100, 101))
    for rows, n, q in shapes:
        a = ref_sort(random_keys(rng, dtype, (rows, n), "few"))
        v = sorted_queries(random_keys(rng, dtype, (rows, q), "special"), batch_ndim=1)
        for side in ("left", "right"):
            check_searchsorted(a, v, side, what=f"gpu rows {rows} x ({n} + {q})")

    a = ref_sort(random_keys(rng, dtype, (300, 200), "few"))
    v = sorted_queries(random_keys(rng, dtype, (300, 70), "special"), batch_ndim=1)

    def search(a, v):
        return tuple(jmp.searchsorted(a, v, side, sorted_v=True) for side in ("left", "right"))

    _assert_same_on_cpu_and_gpu(search, a, v, what="searchsorted rows")


# --------------------------------------------------------------------------- CPU vs GPU parity


def _run_on(device: jax.Device, fn: Callable, *args: Any) -> Any:
    args = jax.device_put(args, device)
    with jax.default_device(device):
        out = fn(*args)
    return jax.tree.map(np.asarray, out)


def _gpu_device() -> jax.Device:
    return jax.devices("gpu")[0]


def _assert_same_on_cpu_and_gpu(fn: Callable, *args: Any, what: str = "") -> None:
    cpu_out = _run_on(jax.devices("cpu")[0], fn, *args)
    gpu_out = _run_on(_gpu_device(), fn, *args)
    assert jax.tree.structure(cpu_out) == jax.tree.structure(gpu_out)
    for c, g in zip(jax.tree.leaves(cpu_out), jax.tree.leaves(gpu_out), strict=True):
        assert_leaf_bits_equal(g, c, f"GPU vs CPU {what}")


@pytest.mark.parametrize("descending", DIRECTIONS, ids=DIR_IDS)
@pytest.mark.parametrize("dtype", KEY_DTYPES, ids=dtype_id)
def test_cpu_gpu_bit_identical(rng, dtype, descending):
    def both(x):
        return (jmp.sort(x, descending=descending), jmp.argsort(x, descending=descending))

    rows = np.stack([sort_input(rng, dtype, (2000,), p, descending=descending) for p in PATTERNS])
    _assert_same_on_cpu_and_gpu(both, rows, what="patterns")
    for payload in (0, 4):
        t = sort_tile(dtype, payload)
        for n in (t - 1, t + 1, 2 * t + 1, 3 * t, 4 * t + 1):
            x = random_keys(rng, dtype, (n,), "special" if n % 2 else "random")
            _assert_same_on_cpu_and_gpu(both, x, what=f"n={n}")
    x3 = random_keys(rng, dtype, (3, 513, 4), "few")

    def axis1(x):
        return jmp.argsort(x, axis=1, descending=descending)

    _assert_same_on_cpu_and_gpu(axis1, x3, what="axis=1")

    keys = random_keys(rng, dtype, (2, 3000), "few")
    vals = {
        "pos": rng.standard_normal((2, 3000, 3)).astype(np.float32),
        "id": np.arange(6000, dtype=np.int32).reshape(2, 3000),
        "same": random_keys(rng, dtype, (2, 3000), "special"),
        "flag": rng.random((2, 3000)) < 0.5,
    }

    def by_key(k, v):
        return jmp.sort_by_key(k, v, descending=descending)

    _assert_same_on_cpu_and_gpu(by_key, keys, vals, what="sort_by_key")

    k2 = random_keys(rng, dtype, (2, 3000), "special")
    c = (rng.standard_normal((2, 3000)) + 1j).astype(np.complex64)

    def lax(k1, k2, c):
        return jmp.lax_sort((k1, k2, c), num_keys=2)

    _assert_same_on_cpu_and_gpu(lax, keys, k2, c, what="lax_sort")

    a = ref_sort(random_keys(rng, dtype, (2, 4000), "few"))
    v = random_keys(rng, dtype, (2, 3, 700), "special")
    vs = sorted_queries(v, 1)

    def search(a, v, vs):
        return tuple(
            jmp.searchsorted(a, q, side, sorted_v=s)
            for side in ("left", "right")
            for q, s in ((v, False), (vs, True), (vs, False))
        )

    _assert_same_on_cpu_and_gpu(search, a, v, vs, what="searchsorted")


@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.int32, np.float32, np.float64],
                         ids=dtype_id)  # fmt: skip
def test_cpu_gpu_bit_identical_large(rng, dtype):
    x = random_keys(rng, dtype, (2**20 + 7,), "random")

    def both(x):
        return (jmp.sort(x), jmp.argsort(x, descending=True))

    _assert_same_on_cpu_and_gpu(both, x, what="2**20+7")


def test_gpu_subnormals_and_signed_zeros_parity():
    for dtype in (np.float16, jnp.bfloat16, np.float32, np.float64):
        tiny = float(jnp.finfo(dtype).smallest_subnormal)
        x = np.array([tiny, 0.0, -0.0, -tiny, np.nan, 3 * tiny, -0.0, 0.0], np.float64)
        x = x.astype(dtype)

        def all_of_it(x):
            return (jmp.sort(x), jmp.argsort(x), jmp.sort(x, descending=True),
                    jmp.argsort(x, descending=True), jmp.searchsorted(jmp.sort(x), x))  # fmt: skip

        _assert_same_on_cpu_and_gpu(all_of_it, x, what=str(np.dtype(dtype)))
        np.testing.assert_array_equal(
            _run_on(_gpu_device(), jmp.argsort, x), [3, 1, 2, 6, 7, 0, 5, 4]
        )
