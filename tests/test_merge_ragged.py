# The ragged merge (jax_mergepath/_dispatch.py merge_ragged_rows; the primitive merge_ragged_p):
# up to eight sorted runs a row, anywhere in it and of any lengths, merged stably in one pass
# (the sharded sort's received pieces, _sharded/sort.py). Against a host reference: every key
# dtype, both directions, empty and gapped runs, values riding in the kernel (4 and 8 bytes) or
# gathered (other widths, trailing dimensions), batch rows and vmap, jvp, more than eight runs
# (the sort fallback). The GPU's results against the CPU's: test_merge_gpu.py.
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from merge_checks import ragged_case, ref_ragged_positions
from reference import KEY_DTYPES, assert_bits_equal, dtype_id

from jax_mergepath._dispatch import RAGGED_RUNS, merge_ragged_rows

pytestmark = pytest.mark.fast


@pytest.mark.parametrize("descending", [False, True], ids=["asc", "desc"])
@pytest.mark.parametrize("dtype", KEY_DTYPES, ids=dtype_id)
def test_ragged_merge_keys_and_values(rng, dtype, descending):
    for runs in (1, 3, RAGGED_RUNS):
        x, starts, lengths = ragged_case(rng, dtype, runs, 700, descending, rows=1,
                                         pattern="random" if runs != 3 else "few")
        out_length = int(lengths.sum())
        values = rng.integers(0, 2**31 - 1, x.shape).astype(np.int32)
        pos = ref_ragged_positions(x, starts, lengths, descending)
        def merge(x, s, n, v, out_length=out_length):
            return merge_ragged_rows(x, s, n, [v], out_length=out_length, descending=descending)

        keys, (moved,) = jax.jit(merge)(x, starts, lengths, values)
        assert_bits_equal(keys, np.take_along_axis(x, pos, -1), f"keys, {runs} runs")
        np.testing.assert_array_equal(moved, np.take_along_axis(values, pos, -1))


@pytest.mark.parametrize("runs", [2, 5, RAGGED_RUNS + 2])
def test_ragged_merge_rows_leaves_and_vmap(rng, runs):
    """Batch rows (one kernel call), values of 8 and 2 bytes and with trailing dimensions, the
    same rows under vmap; more than eight runs take the sort."""
    x, starts, lengths = ragged_case(rng, np.float32, runs, 300, False, rows=4,
                                     equal_totals=True, shuffled=runs == 5)
    out_length = int(lengths[0].sum())
    leaves = [rng.integers(0, 2**40, x.shape),
              rng.standard_normal(x.shape).astype(np.float16),
              rng.standard_normal((*x.shape, 2)).astype(np.float32)]
    pos = ref_ragged_positions(x, starts, lengths, False)

    def merge(x, s, n, leaves):
        return merge_ragged_rows(x, s, n, leaves, out_length=out_length, descending=False)

    for fn in (jax.jit(merge), jax.jit(jax.vmap(merge))):
        keys, moved = fn(x, starts, lengths, leaves)
        assert_bits_equal(keys, np.take_along_axis(x, pos, -1))
        for leaf, got in zip(leaves, moved, strict=True):
            idx = pos if leaf.ndim == 2 else pos[..., None]
            assert_bits_equal(got, np.take_along_axis(leaf, idx, 1))


@pytest.mark.parametrize("runs", [4, RAGGED_RUNS + 1])
def test_ragged_merge_runs_anywhere_and_cut(rng, runs):
    """Runs placed in the row in any order (ties still by run index, not by address); lengths
    summing past out_length cut the merge there (the kernel and the sort alike)."""
    x, starts, lengths = ragged_case(rng, np.int16, runs, 400, True, rows=3, pattern="few",
                                     equal_totals=True, shuffled=True)
    pos = ref_ragged_positions(x, starts, lengths, True)
    out_length = int(lengths[0].sum()) * 2 // 3
    keys, (moved,) = jax.jit(lambda x, s, n, v: merge_ragged_rows(
        x, s, n, [v], out_length=out_length, descending=True))(x, starts, lengths, x * 3)
    assert_bits_equal(keys, np.take_along_axis(x, pos, -1)[:, :out_length])
    assert_bits_equal(moved, np.take_along_axis(x * 3, pos, -1)[:, :out_length])


def test_ragged_merge_jvp(rng):
    x, starts, lengths = ragged_case(rng, np.float32, 4, 50, False)
    out_length = int(lengths.sum())
    v = rng.standard_normal(x.shape).astype(np.float32)
    pos = ref_ragged_positions(x, starts, lengths, False)

    def f(x, v):
        keys, (moved,) = merge_ragged_rows(jnp.asarray(x), starts, lengths, [v],
                                           out_length=out_length, descending=False)
        return keys, moved

    tx, tv = rng.standard_normal(x.shape).astype(np.float32), np.ones_like(v)
    _, (dk, dv) = jax.jvp(f, (x, v), (tx, tv))
    np.testing.assert_array_equal(dk, np.take_along_axis(tx, pos, -1))
    np.testing.assert_array_equal(dv, np.take_along_axis(tv, pos, -1))
    grad = jax.grad(lambda x: jnp.sum(f(x, v)[0] * jnp.arange(out_length)))(x)
    want = np.zeros_like(x)
    want[0, pos[0]] = np.arange(out_length)
    np.testing.assert_array_equal(grad, want)


def test_ragged_merge_long_lengths_are_clamped(rng):
    """Lengths past the row's end and negative starts read nothing outside the row."""
    x = np.sort(rng.integers(0, 100, (1, 64)).astype(np.int32))
    starts = np.array([[-5, 40]], np.int32)
    lengths = np.array([[10, 1000]], np.int32)  # clamped: [0, 10) and [40, 64)
    keys, _ = merge_ragged_rows(x, starts, lengths, [], out_length=34, descending=False)
    want = np.sort(np.concatenate([x[0, :10], x[0, 40:]]), kind="stable")
    np.testing.assert_array_equal(keys[0], want)
