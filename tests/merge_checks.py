# Assertion helpers shared by the merge test files: run one jax_mergepath call and compare every
# output bit-exactly (values, indices, value pytrees) with the references of reference.py.
from __future__ import annotations

from typing import Any

import jax
import numpy as np
from reference import (
    assert_bits_equal,
    index_dtype,
    order_key,
    random_keys,
    ref_co_rank,
    ref_merge,
    ref_merge_by_key,
    ref_merge_runs,
    ref_sort,
)

import jax_mergepath as jmp
from jax_mergepath import _cpu

# Merge tiles, read from the native module (tuning/merge.h's merge_shape: threads x items by key and
# payload bytes). Rows up to a tile long are packed (at most 256 per tile); longer rows are cut
# into tiles. Output lengths around 1 and 2 tiles, +-1.
DIRECTIONS = [False, True]  # descending=False / True, for parametrize
DIR_IDS = ["asc", "desc"]

MERGE_TILES = tuple(sorted({_cpu.merge_tile(k, p) for k in (1, 2, 4, 8) for p in (0, 1, 2, 4, 8)}))
TILE_TOTALS = sorted({t * k + d for t in MERGE_TILES for k in (1, 2) for d in (-1, 0, 1)})


def check_merge(a: Any, b: Any, *, values_only_too: bool = False, **kw: Any) -> None:
    """merge(a, b, return_indices=True, **kw) equals the reference, indices included
    (index_dtype()).
    With values_only_too, also checks the plain call returns one array equal to the values."""
    want_v, want_i = ref_merge(a, b, **kw)
    got_v, got_i = jmp.merge(a, b, return_indices=True, **kw)
    assert_bits_equal(got_v, want_v, f"merged values {kw}")
    assert np.asarray(got_i).dtype == index_dtype(), np.asarray(got_i).dtype
    assert_bits_equal(got_i, want_i, f"merge indices {kw}")
    if values_only_too:
        got = jmp.merge(a, b, **kw)
        assert isinstance(got, jax.Array), type(got)
        assert_bits_equal(got, want_v, f"merged values without indices {kw}")


def check_merge_by_key(a_k: Any, b_k: Any, a_v: Any, b_v: Any, **kw: Any) -> None:
    want_k, want_v = ref_merge_by_key(a_k, b_k, a_v, b_v, **kw)
    got_k, got_v = jmp.merge_by_key(a_k, b_k, a_v, b_v, **kw)
    assert_bits_equal(got_k, want_k, f"merge_by_key keys {kw}")
    assert jax.tree.structure(got_v) == jax.tree.structure(want_v)
    for g, w in zip(jax.tree.leaves(got_v), jax.tree.leaves(want_v), strict=True):
        assert_bits_equal(g, w, f"merge_by_key values {kw}")


def check_merge_runs(x: Any, split: Any, **kw: Any) -> None:
    want_v, want_i = ref_merge_runs(x, split, **kw)
    got_v, got_i = jmp.merge_runs(x, split, return_indices=True, **kw)
    assert_bits_equal(got_v, want_v, f"merge_runs values split={split} {kw}")
    assert np.asarray(got_i).dtype == index_dtype(), np.asarray(got_i).dtype
    assert_bits_equal(got_i, want_i, f"merge_runs indices split={split} {kw}")
    got = jmp.merge_runs(x, split, **kw)
    assert_bits_equal(got, want_v, f"merge_runs without indices split={split} {kw}")


def check_co_rank(k: Any, a: Any, b: Any, **kw: Any) -> None:
    want = ref_co_rank(k, a, b, **kw)
    got = np.asarray(jmp.co_rank(k, a, b, **kw))
    assert got.shape == np.shape(k), (got.shape, np.shape(k))
    assert np.issubdtype(got.dtype, np.integer), got.dtype
    np.testing.assert_array_equal(got.astype(np.int64), want, err_msg=f"co_rank {kw}")


# ---------------------------------------------------------------- ragged merges


def ragged_case(rng, dtype, runs: int, max_length: int, descending: bool, rows: int = 1,
                pattern: str = "random", equal_totals: bool = False, shuffled: bool = False):
    """(x (rows, span), starts, lengths (rows, runs) int32): sorted runs with gaps of garbage
    between and after them, one empty where there are several; equal_totals: every row's
    lengths summing alike; shuffled: the runs placed in the row in a random order (run r's
    ties still go first)."""
    lengths = rng.integers(0, max_length + 1, (rows, runs))
    if runs > 1:
        lengths[:, rng.integers(0, runs)] = 0
    if equal_totals:
        lengths[:, -1] += lengths.sum(1).max() - lengths.sum(1)
    gaps = rng.integers(0, 4, (rows, runs))
    starts = np.zeros((rows, runs), int)
    for row in range(rows):
        at = 0
        for r in (rng.permutation(runs) if shuffled else range(runs)):
            starts[row, r] = at
            at += lengths[row, r] + gaps[row, r]
    span = int((starts + lengths).max()) + 3
    x = random_keys(rng, dtype, (rows, span), pattern)
    for row in range(rows):
        for s, n in zip(starts[row], lengths[row], strict=True):
            x[row, s:s + n] = ref_sort(x[row, s:s + n], descending=descending)
    return x, starts.astype(np.int32), lengths.astype(np.int32)


def ref_ragged_positions(x, starts, lengths, descending: bool) -> np.ndarray:
    """Each row's merge as positions in the row: stable by (key, run)."""
    out = []
    for row in range(x.shape[0]):
        pos = np.concatenate([np.arange(s, s + n) for s, n in
                              zip(starts[row], lengths[row], strict=True)]).astype(int)
        _, rank = np.unique(order_key(x[row][pos]), return_inverse=True)
        out.append(pos[np.argsort(-rank if descending else rank, kind="stable")])
    return np.stack(out) if len({len(p) for p in out}) == 1 else out
