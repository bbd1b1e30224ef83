# GPU-only merge tests (skip themselves unless jax's default device is a GPU): one 2**26-element
# int32 merge, tile +- 1 sweeps for key sizes of 1, 2, 4 and 8 bytes (with and without a value
# payload), full rows from 1 output up, and CPU-vs-GPU bit-identity (docs/contract.md: results
# bit-identical, indices included) for every key dtype and every function of the merge family on
# the same inputs.
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from merge_checks import (
    DIR_IDS,
    DIRECTIONS,
    MERGE_TILES,
    TILE_TOTALS,
    check_merge,
    check_merge_by_key,
    check_merge_runs,
    ragged_case,
)
from reference import (
    KEY_DTYPES,
    assert_bits_equal,
    dtype_id,
    random_keys,
    ref_merge,
    ref_sort,
    sort_segments,
    sorted_keys,
)
from sort_checks import check_searchsorted

import jax_mergepath as jmp
from jax_mergepath import _cpu
from jax_mergepath._dispatch import RAGGED_RUNS, merge_ragged_rows

pytestmark = pytest.mark.requires_gpu  # the GPU tier: skipped without a GPU

# Several tiles and one more output, at the tiles the native module reports: 3 tiles of 8-byte
# keys alone, 77 of 4-byte keys with a 1-byte payload.
GPU_SIZES = [*TILE_TOTALS, 3 * _cpu.merge_tile(8, 0) + 1, 2**17 - 1, 2**17 + 1,
             77 * _cpu.merge_tile(4, 1) + 1]


def test_gpu_is_default_device():
    assert jax.devices()[0].platform == "gpu"
    x = jnp.zeros(4, jnp.int32)
    assert next(iter(jmp.merge(x, x).devices())).platform == "gpu"


def test_gpu_large_int32_merge(rng):
    m, n = 2**25 + 3, 2**25 - 3  # 2**26 outputs
    a = np.sort(rng.integers(-(2**20), 2**20, m, dtype=np.int32))
    b = np.sort(rng.integers(-(2**20), 2**20, n, dtype=np.int32))
    a[:5], b[-5:] = np.iinfo(np.int32).min, np.iinfo(np.int32).max
    check_merge(a, b)


@pytest.mark.parametrize(
    ("dtype", "descending"),
    [(np.uint8, False), (jnp.bfloat16, True), (np.float32, False), (np.float32, True),
     (np.float64, False)],
    ids=["uint8", "bfloat16-desc", "float32", "float32-desc", "float64"],
)  # fmt: skip
def test_gpu_tile_sweep(rng, dtype, descending):
    for i, s in enumerate(GPU_SIZES):
        m = 2 * s // 5 if i % 2 else s // 2  # uneven and even splits
        pattern = "few" if i % 3 == 0 else "random"
        a = sorted_keys(rng, dtype, (m,), pattern, descending=descending)
        b = sorted_keys(rng, dtype, (s - m,), pattern, descending=descending)
        check_merge(a, b, descending=descending, values_only_too=True)


@pytest.mark.parametrize("value_dtype", [np.int8, np.int32, np.int64])
def test_gpu_tile_sweep_with_values(rng, value_dtype):
    for s in GPU_SIZES:
        m = s // 3
        a_k = sorted_keys(rng, np.float32, (m,), "few")
        b_k = sorted_keys(rng, np.float32, (s - m,), "few")
        a_v = random_keys(rng, value_dtype, (m,))
        b_v = random_keys(rng, value_dtype, (s - m,))
        check_merge_by_key(a_k, b_k, a_v, b_v)


def test_gpu_batched_tile_sweep(rng):
    t = _cpu.merge_tile(4, 4)  # int32 keys + int32 indices
    for s in (255, 256, 257, t // 2 - 1, t // 2, t // 2 + 1, t - 1, t, t + 1):
        a_len = rng.integers(0, s + 1, 33)
        b_len = rng.integers(0, s + 1, 33)
        a = sort_segments(random_keys(rng, np.int32, (33, s)), a_len, sort_tail=False)
        b = sort_segments(random_keys(rng, np.int32, (33, s)), b_len, sort_tail=False)
        check_merge(a, b, a_length=jnp.asarray(a_len), b_length=jnp.asarray(b_len))


def _full_row_lengths(key_bytes: int, payloads: tuple[int, ...]) -> list[int]:
    """Row lengths around the rows kernel's steps for each tile shape in play: threads per row
    (items), rows per block, and the largest row it takes (tile - items) next to the packed and
    tiled kernels' lengths."""
    lengths = {1, 2, 3, 64, 100, 1024}
    for payload in payloads:
        threads, items, _ = _cpu.merge_shape_for(key_bytes, 2 if payload else 0, payload)
        tile = threads * items  # (_cpu.merge_tile(key_bytes, payload))
        lengths |= {items - 1, items, items + 1, 2 * items + 1}
        lengths |= {tile - items - 1, tile - items, tile - items + 1, tile - 1, tile}
    return sorted(lengths)


@pytest.mark.parametrize(
    ("key_dtype", "value_dtype"),
    [(np.int32, None), (np.float32, np.int32), (np.int64, None), (np.uint8, np.int64),
     (np.float64, np.int8)],
    ids=["int32", "float32+int32", "int64", "uint8+int64", "float64+int8"],
)  # fmt: skip
def test_gpu_full_rows_sweep(rng, key_dtype, value_dtype):
    """Full rows no longer than a tile (the rows kernel: a thread group a row), batches that do
    not fill their last block, uneven splits, both directions: merge (indices too),
    merge_by_key and merge_runs against the reference."""
    key_bytes = np.dtype(key_dtype).itemsize
    payloads = (0, 4) if value_dtype is None else (np.dtype(value_dtype).itemsize,)
    for i, length in enumerate(_full_row_lengths(key_bytes, payloads)):
        rows = 37 + i if length > 64 else 600 + i  # short rows: several blocks of rows too
        m = length // 3 if i % 2 else length // 2
        pattern = "few" if i % 3 == 0 else "random"
        desc = i % 4 == 3
        a = sorted_keys(rng, key_dtype, (rows, m), pattern, descending=desc)
        b = sorted_keys(rng, key_dtype, (rows, length - m), pattern, descending=desc)
        if value_dtype is None:
            check_merge(a, b, descending=desc, values_only_too=True)
        else:
            a_v = random_keys(rng, value_dtype, (rows, m))
            b_v = random_keys(rng, value_dtype, (rows, length - m))
            check_merge_by_key(a, b, a_v, b_v, descending=desc)
        split = rng.integers(0, length + 1, rows)
        x = sort_segments(random_keys(rng, key_dtype, (rows, length), pattern), split, -1, desc)
        check_merge_runs(x, split.astype(np.int32), descending=desc)


# Rows whose sides are whole 16-byte chunks: the rows kernel stages them as strided rows
# (tile_io.cuh strided_row_stride), or contiguously where a row has more than
# kRowsStridedMaxThreadsPerRow threads (64+64 with indices) or a side's chunks are already odd.
STRIDED_ROW_SIDES = [(8, 8), (16, 16), (8, 24), (32, 32), (48, 16), (64, 64)]


@pytest.mark.parametrize(
    ("key_dtype", "value_dtype"),
    [(np.int32, None), (np.float32, np.float64), (np.uint16, np.int32), (np.int64, np.int16),
     (jnp.bfloat16, None)],
    ids=["int32", "float32+float64", "uint16+int32", "int64+int16", "bfloat16"],
)  # fmt: skip
def test_gpu_strided_rows(rng, key_dtype, value_dtype):
    """Full rows of whole 16-byte chunks a side, many blocks of them (the last one part full),
    both directions: merge (indices too), merge_by_key and merge_runs against the reference, and
    unsorted rows among sorted ones (each row falls back on its own)."""
    for i, (m, n) in enumerate(STRIDED_ROW_SIDES):
        rows = 1500 + 37 * i
        pattern = ("few", "random", "special")[i % 3]
        desc = i % 2 == 1
        a = sorted_keys(rng, key_dtype, (rows, m), pattern, descending=desc)
        b = sorted_keys(rng, key_dtype, (rows, n), pattern, descending=desc)
        check_merge(a, b, descending=desc, values_only_too=True)
        if value_dtype is not None:
            a_v = random_keys(rng, value_dtype, (rows, m))
            b_v = random_keys(rng, value_dtype, (rows, n))
            check_merge_by_key(a, b, a_v, b_v, descending=desc)
        split = rng.integers(0, m + n + 1, rows)
        x = sort_segments(random_keys(rng, key_dtype, (rows, m + n), pattern), split, -1, desc)
        check_merge_runs(x, split.astype(np.int32), descending=desc)
        # Rows 5 and rows - 2 unsorted: the others are merged exactly, those two permuted.
        bad = np.asarray(a).copy()
        for r in (5, rows - 2):
            bad[r] = bad[r, ::-1]
        got, idx = jmp.merge(bad, b, descending=desc, return_indices=True)
        keep = np.delete(np.arange(rows), (5, rows - 2))
        want, want_idx = ref_merge(bad[keep], np.asarray(b)[keep], descending=desc)
        assert_bits_equal(np.asarray(got)[keep], want, f"sorted rows beside unsorted {m}+{n}")
        assert_bits_equal(np.asarray(idx)[keep], want_idx, f"their indices {m}+{n}")
        for r in (5, rows - 2):
            both = np.concatenate([bad[r], np.asarray(b)[r]])
            assert np.array_equal(np.sort(np.asarray(idx)[r]), np.arange(m + n)), "no permutation"
            assert_bits_equal(np.asarray(got)[r], both[np.asarray(idx)[r]], f"row {r} keys")


# The shortest full rows (the rows kernel: a row a thread or a few, several rows a thread group):
# lengths around powers of two up to 33.
SHORT_ROW_LENGTHS = [1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 24, 31, 32, 33]
SHORT_ROW_DTYPES = [np.int32, np.float32, np.uint8, jnp.bfloat16, np.int64, np.float64, np.int16]


def test_gpu_short_rows_sweep(rng):
    """Full rows of 1 to 33 outputs, several splits each (empty sides too), key widths 1-8 bytes
    with special values, both directions, batches that do not fill their last block: merge
    (indices too), merge_by_key, merge_runs (a split a row) and sorted-query searchsorted (its
    ranks) against the reference."""
    case = 0
    for length in SHORT_ROW_LENGTHS:
        for m in sorted({0, 1, length // 3, length // 2, length}):
            case += 1
            dtype = SHORT_ROW_DTYPES[case % len(SHORT_ROW_DTYPES)]
            rows = 41 + case % 23
            pattern = ("few", "random", "special")[case % 3]
            desc = case % 4 == 3
            a = sorted_keys(rng, dtype, (rows, m), pattern, descending=desc)
            b = sorted_keys(rng, dtype, (rows, length - m), pattern, descending=desc)
            check_merge(a, b, descending=desc, values_only_too=True)
            values = random_keys(rng, np.int16 if case % 2 else np.float64, (rows, length))
            check_merge_by_key(a, b, values[:, :m], values[:, m:], descending=desc)
            split = rng.integers(0, length + 1, rows)
            x = sort_segments(random_keys(rng, dtype, (rows, length), pattern), split, -1, desc)
            check_merge_runs(x, split.astype(np.int32), descending=desc)
            if not desc and m not in (0, length):
                for side in ("left", "right"):
                    check_searchsorted(a, b, side, what=f"rows of {m} + {length - m}")


# --------------------------------------------------------------------------- CPU vs GPU parity


def _run_on(device: jax.Device, fn: Callable, *args: Any) -> Any:
    args = jax.device_put(args, device)
    with jax.default_device(device):
        out = fn(*args)
    return jax.tree.map(np.asarray, out)


def _assert_same_on_cpu_and_gpu(fn: Callable, *args: Any) -> None:
    cpu_out = _run_on(jax.devices("cpu")[0], fn, *args)
    gpu_out = _run_on(jax.devices("gpu")[0], fn, *args)
    assert jax.tree.structure(cpu_out) == jax.tree.structure(gpu_out)
    for c, g in zip(jax.tree.leaves(cpu_out), jax.tree.leaves(gpu_out), strict=True):
        assert_bits_equal(g, c, "GPU vs CPU")


@pytest.mark.parametrize("descending", DIRECTIONS, ids=DIR_IDS)
@pytest.mark.parametrize("dtype", KEY_DTYPES, ids=dtype_id)
def test_cpu_gpu_bit_identical(rng, dtype, descending):
    for pattern in ("random", "special", "few"):
        a = sorted_keys(rng, dtype, (3, 5000), pattern, descending=descending)
        b = sorted_keys(rng, dtype, (3, 3001), pattern, descending=descending)

        def merge(a, b):
            return jmp.merge(a, b, descending=descending, return_indices=True)

        _assert_same_on_cpu_and_gpu(merge, a, b)

    a_len, b_len = np.array([0, 4999, 1234]), np.array([3001, 17, 0])
    a = sort_segments(random_keys(rng, dtype, (3, 5000)), a_len, -1, descending, sort_tail=False)
    b = sort_segments(random_keys(rng, dtype, (3, 3001)), b_len, -1, descending, sort_tail=False)

    def ragged(a, b, la, lb):
        return jmp.merge(a, b, a_length=la, b_length=lb, descending=descending)

    _assert_same_on_cpu_and_gpu(ragged, a, b, a_len.astype(np.int32), b_len.astype(np.int32))

    a_k = sorted_keys(rng, dtype, (2, 700), "few", descending=descending)
    b_k = sorted_keys(rng, dtype, (2, 513), "few", descending=descending)
    vals = ({"v": np.arange(1400).reshape(2, 700)}, {"v": np.arange(1026).reshape(2, 513)})

    def by_key(ak, bk, av, bv):
        return jmp.merge_by_key(ak, bk, av, bv, descending=descending)

    _assert_same_on_cpu_and_gpu(by_key, a_k, b_k, *vals)

    split = np.array([0, 100, 4097, 9000])
    x = sort_segments(random_keys(rng, dtype, (4, 4097), "special"), split, -1, descending)

    def runs(x, s):
        return jmp.merge_runs(x, s, descending=descending, return_indices=True)

    _assert_same_on_cpu_and_gpu(runs, x, split.astype(np.int32))

    k = np.arange(0, 1214, 7, dtype=np.int32)

    def corank(k, a, b):
        return jmp.co_rank(k, a, b, descending=descending)

    _assert_same_on_cpu_and_gpu(corank, k, a_k[0], b_k[0])

    rows = np.stack([random_keys(rng, dtype, (300,), "special") for _ in range(4)])
    rows[0] = sorted_keys(rng, dtype, (300,), "special", descending=descending)

    def issorted(x):
        return jmp.is_sorted(x, descending=descending)

    _assert_same_on_cpu_and_gpu(issorted, rows)


@pytest.mark.parametrize("d", [2, 3, 5, 16, 17, 33])
def test_is_sorted_rows_across_chunks(rng, d):
    """The GPU checks the flattened rows in chunks of 16 keys (kernels/query_kernels.cuh), a thread
    clearing each row's flag once: rows shorter than a chunk, rows ending inside one, and one
    out-of-order pair anywhere in a row (its first, its last) flag exactly that row; sorted rows
    stay sorted although every row's last key exceeds the next row's first."""
    rows = 301
    x = np.stack([np.sort(rng.choice(10**6, d, replace=False)) - r * 10**6 for r in range(rows)])
    x = x.astype(np.int32)
    broken = rng.random(rows) < 0.4
    broken[:2] = True
    for r in np.flatnonzero(broken):
        p = 0 if r == 0 else (d - 2 if r == 1 else int(rng.integers(0, d - 1)))
        x[r, p], x[r, p + 1] = x[r, p + 1], x[r, p]
    got = _run_on(jax.devices("gpu")[0], jmp.is_sorted, x)
    np.testing.assert_array_equal(got, ~broken)
    _assert_same_on_cpu_and_gpu(jmp.is_sorted, x)
    x_desc = x[:, ::-1].copy()  # the same rows read the other way
    got = _run_on(jax.devices("gpu")[0], lambda v: jmp.is_sorted(v, descending=True), x_desc)
    np.testing.assert_array_equal(got, ~broken)


@pytest.mark.parametrize("dtype", [np.uint8, np.int32, np.float32, np.int64], ids=dtype_id)
def test_cpu_gpu_bit_identical_many_boundaries(rng, dtype):
    """More than 4096 tile boundaries (tuning/merge.h kWarpSearchMaxBoundaries: 4096): the GPU
    partition takes its thread-per-boundary path (ffi/cuda/kernels/partition.cuh). Ragged rows, both
    directions, indices, and merge_runs."""
    rows, m, n = 512, 24000, 20000
    assert rows * ((m + n) // max(MERGE_TILES) + 1) > 4096
    a_len, b_len = rng.integers(0, m + 1, rows), rng.integers(0, n + 1, rows)
    a_len[:3], b_len[:3] = m, n  # full rows too
    split = rng.integers(0, m + n + 1, rows)
    for descending in DIRECTIONS:
        a = sort_segments(random_keys(rng, dtype, (rows, m)), a_len, -1, descending, False)
        b = sort_segments(random_keys(rng, dtype, (rows, n)), b_len, -1, descending, False)

        def ragged(a, b, la, lb, descending=descending):
            return jmp.merge(
                a, b, a_length=la, b_length=lb, descending=descending, return_indices=True
            )

        _assert_same_on_cpu_and_gpu(ragged, a, b, a_len.astype(np.int32), b_len.astype(np.int32))
        x = sort_segments(random_keys(rng, dtype, (rows, m + n)), split, -1, descending)

        def runs(x, s, descending=descending):
            return jmp.merge_runs(x, s, descending=descending)

        _assert_same_on_cpu_and_gpu(runs, x, split.astype(np.int32))


def test_cpu_gpu_bit_identical_large_float(rng):
    for dtype in (np.float32, np.float64):
        a = sorted_keys(rng, dtype, (2**21 + 1,), "special")
        b = sorted_keys(rng, dtype, (2**21 - 1,))
        _assert_same_on_cpu_and_gpu(lambda a, b: jmp.merge(a, b, return_indices=True), a, b)


def test_gpu_subnormals_and_signed_zeros_parity():
    for dtype in (np.float16, jnp.bfloat16, np.float32, np.float64):
        tiny = float(jnp.finfo(dtype).smallest_subnormal)
        x = np.array([tiny, 0.0, -0.0, -tiny, np.nan], np.float64).astype(dtype)
        a = np.sort(x.astype(np.float64)).astype(dtype)
        b = np.array([-tiny, -0.0, 0.0, tiny], np.float64).astype(dtype)
        _assert_same_on_cpu_and_gpu(lambda a, b: jmp.merge(a, b, return_indices=True), a, b)
        _assert_same_on_cpu_and_gpu(jmp.is_sorted, np.array([tiny, 0.0], np.float64).astype(dtype))


# float32 / float64 tiles whose sorted ranges hold no NaN merge by plain FPU compares
# (ordering.h PlainFloatCompare; the ranges' end keys tell), the others by the NaN-last order:
# one merge mixes both kinds of tiles (NaNs only in A, only in B, in both, in neither; -0.0 and
# +0.0 in the plain ones: ties that plain compares must keep stable), 1-D and as full rows (the
# rows kernel keeps the NaN-last order), both directions, indices included, against the CPU bit
# for bit.
@pytest.mark.parametrize("descending", DIRECTIONS, ids=DIR_IDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=dtype_id)
def test_cpu_gpu_bit_identical_nan_free_tiles(rng, dtype, descending):
    def merge(a, b):
        return jmp.merge(a, b, descending=descending, return_indices=True)

    def with_zeros(x):  # "plain" keys with -0.0 back among the +0.0 (no NaN)
        zeros = (x == 0) & (rng.random(x.shape) < 0.5)
        return np.where(zeros, -0.0, x).astype(dtype)

    def keys(shape, nans, density):
        x = with_zeros(random_keys(rng, dtype, shape, "plain"))
        if nans:
            x[rng.random(shape) < density] = np.nan
        return ref_sort(x, -1, descending)

    for a_nans, b_nans in ((True, False), (False, True), (True, True), (False, False)):
        n = 3 * 2**17 + 5
        _assert_same_on_cpu_and_gpu(merge, keys((n,), a_nans, 0.01), keys((n - 7,), b_nans, 0.01))
        # Rows: about half of them hold a NaN.
        rows_a, rows_b = keys((300, 400), a_nans, 1 / 600), keys((300, 301), b_nans, 1 / 450)
        _assert_same_on_cpu_and_gpu(merge, rows_a, rows_b)


@pytest.mark.parametrize("dtype", KEY_DTYPES, ids=dtype_id)
def test_cpu_gpu_ragged_merge_bit_identical(rng, dtype):
    """The ragged merge (_dispatch.merge_ragged_rows: the sharded sort's received runs) over
    many tiles: keys alone, with 4-byte and with 8-byte values, 3 and 8 runs, both ways."""
    for runs, descending, pattern in ((3, False, "random"), (RAGGED_RUNS, True, "few"),
                                      (RAGGED_RUNS, False, "special")):
        x, starts, lengths = ragged_case(rng, dtype, runs, 30000, descending, rows=2,
                                         pattern=pattern, equal_totals=True,
                                         shuffled=pattern != "random")
        out_length = int(lengths[0].sum()) - (pattern == "special")  # (special: the merge cut)
        for values in ([], [rng.integers(0, 2**31, x.shape).astype(np.int32)],
                       [rng.integers(0, 2**62, x.shape)]):
            def merge(x, s, n, values, descending=descending, out_length=out_length):
                return merge_ragged_rows(x, s, n, values, out_length=out_length,
                                         descending=descending)

            _assert_same_on_cpu_and_gpu(jax.jit(merge), x, starts, lengths, values)
