# Unsorted input (a precondition violation): the order of the result is unspecified, but
# docs/contract.md's goal is that every merge still returns a permutation of its inputs, on every
# backend. Checked on jax's default device and, when that is a GPU, on the CPU too, for every kernel
# shape the CUDA backend has: tiled merges (one row or a batch, several tiles a row: the partition's
# chain check), full rows no longer than a tile (the rows kernel), ragged rows (the packed
# kernel), merge_runs, key + value and 8-byte keys; and for nearly sorted input (one pair
# swapped), where a single tile's threads disagree.
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference import is_permutation_of, random_keys, ref_merge, ref_merge_runs, to_bits

import jax_mergepath as jmp
from jax_mergepath import _cpu

pytestmark = pytest.mark.slow  # the slow tier (23 s of test time on 2 cores)


def _devices() -> list[jax.Device]:
    default = jax.devices()[0]
    return [default] if default.platform == "cpu" else [default, jax.devices("cpu")[0]]


DEVICES = pytest.mark.parametrize("device", _devices(), ids=lambda d: d.platform)


def _assert_permutation(a, b, out, idx, what: str) -> None:
    """idx is a permutation of every row's positions in [a | b] and out is [a | b] gathered by
    it, bit for bit."""
    both = np.concatenate([np.asarray(a), np.asarray(b)], axis=-1)
    idx = np.asarray(idx)
    want = np.broadcast_to(np.arange(both.shape[-1]), both.shape)
    assert np.array_equal(np.sort(idx, axis=-1), want), f"{what}: indices are no permutation"
    gathered = np.take_along_axis(both, idx, axis=-1)
    assert np.array_equal(to_bits(np.asarray(out)), to_bits(gathered)), f"{what}: keys"


def _narrow_ints(rng: np.random.Generator, shape) -> np.ndarray:
    return rng.integers(0, 1000, shape).astype(np.int32)


@DEVICES
@pytest.mark.parametrize(
    "shape_a, shape_b",
    [
        ((5000,), (4097,)),
        ((1 << 17,), ((1 << 16) + 3,)),
        ((300_001,), (7,)),
        ((3, 20_000), (3, 7_001)),  # several tiled merges, several tiles each
        ((1 << 20,), (1 << 20,)),
    ],
    ids=str,
)
def test_tiled_merge_of_unsorted_input_is_a_permutation(rng, device, shape_a, shape_b):
    a = jax.device_put(_narrow_ints(rng, shape_a), device)
    b = jax.device_put(_narrow_ints(rng, shape_b), device)
    for descending in (False, True):
        out, idx = jmp.merge(a, b, descending=descending, return_indices=True)
        _assert_permutation(a, b, out, idx, f"descending={descending}")
        # Keys alone take another kernel shape: another permutation, but a permutation.
        plain = jmp.merge(a, b, descending=descending)
        assert is_permutation_of(plain, a, b), "keys alone: no permutation"


@DEVICES
@pytest.mark.parametrize("m, n", [(32, 32), (512, 500), (2400, 2400), (1, 4000)], ids=str)
def test_batched_rows_of_unsorted_input_are_permutations(rng, device, m, n):
    # Rows no longer than a tile: the rows kernel (no lengths given) or, through vmap, the same.
    a = jax.device_put(random_keys(rng, np.float32, (64, m), "special"), device)
    b = jax.device_put(random_keys(rng, np.float32, (64, n)), device)
    out, idx = jmp.merge(a, b, return_indices=True)
    _assert_permutation(a, b, out, idx, "batch")
    vout, vidx = jax.vmap(lambda x, y: jmp.merge(x, y, return_indices=True))(a, b)
    _assert_permutation(a, b, vout, vidx, "vmap")


@DEVICES
def test_ragged_rows_of_unsorted_input_are_permutations(rng, device):
    # Valid lengths per row: the packed kernel (threads cross row boundaries).
    rows, m, n = 300, 40, 25
    a = jax.device_put(_narrow_ints(rng, (rows, m)), device)
    b = jax.device_put(_narrow_ints(rng, (rows, n)), device)
    a_len = jax.device_put(rng.integers(0, m + 1, rows).astype(np.int32), device)
    b_len = jax.device_put(rng.integers(0, n + 1, rows).astype(np.int32), device)
    out, idx = jmp.merge(a, b, a_length=a_len, b_length=b_len, return_indices=True)
    _assert_permutation(a, b, out, idx, "ragged")


@DEVICES
@pytest.mark.parametrize("d", [64, 3000, 50_000], ids=str)
def test_merge_runs_of_unsorted_input_is_a_permutation(rng, device, d):
    x = _narrow_ints(rng, (4, d))
    split = rng.integers(0, d + 1, 4).astype(np.int32)
    out, idx = jmp.merge_runs(jax.device_put(x, device), jax.device_put(split, device),
                              return_indices=True)
    _assert_permutation(x, x[:, :0], out, idx, "merge_runs")


@DEVICES
@pytest.mark.parametrize("shape", [(2, 700), (20_000,)], ids=str)
def test_merge_by_key_of_unsorted_input_moves_values_with_keys(rng, device, shape):
    a = _narrow_ints(rng, shape)
    b = _narrow_ints(rng, shape)
    pos = np.broadcast_to(np.arange(2 * shape[-1], dtype=np.float64), (*shape[:-1], 2 * shape[-1]))
    va, vb = pos[..., : shape[-1]], pos[..., shape[-1] :]
    put = lambda x: jax.device_put(np.ascontiguousarray(x), device)  # noqa: E731
    keys, values = jmp.merge_by_key(put(a), put(b), put(va), put(vb))
    _assert_permutation(a, b, keys, np.asarray(values).astype(np.int64), "merge_by_key")


@DEVICES
def test_eight_byte_keys_of_unsorted_input_are_a_permutation(rng, device):
    a = jax.device_put(random_keys(rng, np.int64, (70_000,)), device)
    b = jax.device_put(random_keys(rng, np.int64, (9_000,)), device)
    out, idx = jmp.merge(a, b, return_indices=True)
    _assert_permutation(a, b, out, idx, "int64")


@DEVICES
@pytest.mark.parametrize("length", [700, 40_000], ids=str)
def test_one_swapped_pair_still_gives_a_permutation(rng, device, length):
    # Sorted halves but for one pair swapped inside a: most of the merge path is right, one
    # block's threads (or one partition boundary) disagree.
    a = np.sort(_narrow_ints(rng, (length,)))
    b = np.sort(_narrow_ints(rng, (length,)))
    for i in (1, length // 2, length - 1):
        swapped = a.copy()
        swapped[i - 1], swapped[i] = a[-1], a[0]
        out, idx = jmp.merge(jax.device_put(swapped, device), jax.device_put(b, device),
                             return_indices=True)
        _assert_permutation(swapped, b, out, idx, f"swap at {i}")


def _check_sorted_rows_beside_unsorted_ones(rng, device, a, b, bad) -> None:
    """A batch is a vmap: a row whose input is sorted gets its merge whatever the other rows
    hold; rows `bad` (their b unsorted) only a permutation. Full rows with indices, keys alone
    and with values (other kernel instantiations), ragged rows (the bad ones at full length)
    and merge_runs of [a | b]."""
    rows, m = a.shape
    n = b.shape[1]
    good = np.setdiff1d(np.arange(rows), bad)
    put = lambda x: jax.device_put(x, device)  # noqa: E731

    def check(out, idx, want, want_idx, x, y, what):
        out, idx = np.asarray(out), np.asarray(idx)
        assert np.array_equal(idx[good], want_idx[good]), f"{what}: sorted rows' indices"
        assert np.array_equal(out[good], want[good]), f"{what}: sorted rows' keys"
        _assert_permutation(x[bad], y[bad], out[bad], idx[bad], f"{what}: unsorted rows")

    want, want_idx = ref_merge(a, b)
    out, idx = jmp.merge(put(a), put(b), return_indices=True)
    check(out, idx, want, want_idx, a, b, "full rows")
    keys = np.asarray(jmp.merge(put(a), put(b)))
    assert np.array_equal(keys[good], want[good]), "full rows, keys alone"
    pos = np.arange(m + n, dtype=np.float32)
    va, vb = np.broadcast_to(pos[:m], a.shape), np.broadcast_to(pos[m:], b.shape)
    keys, vals = jmp.merge_by_key(put(a), put(b), put(va.copy()), put(vb.copy()))
    check(keys, np.asarray(vals).astype(np.int32), want, want_idx, a, b, "merge_by_key")
    a_len = rng.integers(0, m + 1, rows).astype(np.int32)
    b_len = rng.integers(0, n + 1, rows).astype(np.int32)
    a_len[bad], b_len[bad] = m, n
    want, want_idx = ref_merge(a, b, a_length=a_len, b_length=b_len)
    out, idx = jmp.merge(put(a), put(b), a_length=put(a_len), b_length=put(b_len),
                         return_indices=True)
    check(out, idx, want, want_idx, a, b, "ragged rows")
    x = np.concatenate([a, b], axis=-1)
    want, want_idx = ref_merge_runs(x, m)
    out, idx = jmp.merge_runs(put(x), m, return_indices=True)
    check(out, idx, want, want_idx, x, x[:, :0], "merge_runs")


def _sorted_rows(rng, rows: int, length: int) -> np.ndarray:
    return np.sort(rng.integers(-(10**6), 10**6, (rows, length)).astype(np.int32), axis=-1)


@DEVICES
@pytest.mark.parametrize("m, n", [(32, 32), (512, 500), (1, 40), (16, 16), (5, 9)], ids=str)
def test_sorted_rows_beside_unsorted_ones_are_still_merged(rng, device, m, n):
    # On the GPU the rows kernel (full rows), the packed kernel (valid lengths) and merge_runs
    # put many rows in one block; only the unsorted rows may fall back to A then B.
    rows, bad = 64, np.array([0, 5, 63])
    a, b = _sorted_rows(rng, rows, m), _sorted_rows(rng, rows, n)
    for r in bad:
        b[r] = rng.permutation(b[r])
    _check_sorted_rows_beside_unsorted_ones(rng, device, a, b, bad)


@DEVICES
@pytest.mark.parametrize("rows, m, n", [(64, 5000, 7000), (1100, 5000, 7000), (8, 40000, 40000)],
                         ids=str)
def test_tiled_rows_beside_a_broken_partition_are_still_merged(rng, device, rows, m, n):
    # Rows longer than a tile (int32 keys alone: _cpu.merge_tile(4, 0), 4864 at this writing;
    # with indices or values: merge_tile(4, 4), 3840; asserted below) are cut at tile boundaries
    # by the partition pass, whose blocks hold the boundaries of several rows (8 a block; 256
    # past 4096 boundaries: 1100 rows of 4 or 5), and a long row spans several blocks (8 rows of
    # 17 or 21 tiles). A bad row's b is 4000 huge keys then negative ones: the partition's
    # searches return splits that are not monotone along it (a host emulation of the thread
    # search, which the warp search replays, 5000 + 7000 at those tiles: 0, 4864, 2728, 5000 for
    # keys alone, 0, 3840, 5000, 4520, 5000 with indices; 6000 huge keys chained up for keys
    # alone), so the partition flags that block; the other rows of the block must still be
    # merged.
    assert m > _cpu.merge_tile(4, 0) and m > _cpu.merge_tile(4, 4), "rows of one tile"
    h = 4000
    bad = np.array([0, 5, rows - 1])
    a, b = _sorted_rows(rng, rows, m), _sorted_rows(rng, rows, n)
    a[bad] = np.sort(np.abs(a[bad]), axis=-1)  # sorted, >= 0: below every huge key
    b[bad, :h] = 2 * 10**6 + np.arange(h)
    b[bad, h:] = -(2 * 10**6) + np.arange(n - h)
    _check_sorted_rows_beside_unsorted_ones(rng, device, a, b, bad)


@DEVICES
def test_sorted_input_is_still_merged_exactly(rng, device):
    # The checks must never fire on sorted input: the result is the stable merge.
    a = np.sort(_narrow_ints(rng, (100_003,)))
    b = np.sort(_narrow_ints(rng, (77_777,)))
    out, idx = jmp.merge(jax.device_put(a, device), jax.device_put(b, device), return_indices=True)
    want = np.argsort(np.concatenate([a, b]), kind="stable")
    assert np.array_equal(np.asarray(idx), want)
    assert jnp.array_equal(out, np.concatenate([a, b])[want])
