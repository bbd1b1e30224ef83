# Hypothesis property tests of the merge family on random sorted int32/float32 inputs with many
# duplicates (and NaN, +-0, +-inf, subnormals for floats): the output is a permutation of the
# inputs and sorted, and equals the stable reference; ragged merges keep the invalid tails in
# place; merge_runs equals merge of its runs; co_rank satisfies the merge-path identity; is_sorted
# agrees with the reference. Examples are small and few (max_examples=12) to keep the suite fast.
from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from reference import (
    assert_bits_equal,
    is_permutation_of,
    ref_is_sorted,
    ref_merge,
    ref_sort,
    sort_segments,
)

import jax_mergepath as jmp

pytestmark = pytest.mark.fast  # the fast tier (the README's test command)

SETTINGS = settings(max_examples=12, deadline=None, derandomize=True)

_FLOATS = [0.0, -0.0, 1.0, -1.0, 2.5, -7.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 3e38]


def _elements(dtype: type) -> st.SearchStrategy:
    if dtype is np.int32:
        return st.one_of(
            st.integers(-4, 4),
            st.sampled_from([-(2**31), 2**31 - 1]),
            st.integers(-(2**31), 2**31 - 1),
        )
    return st.sampled_from(_FLOATS)


@st.composite
def sorted_pair(draw: st.DrawFn, max_len: int = 70) -> tuple[np.ndarray, np.ndarray, bool]:
    dtype = draw(st.sampled_from([np.int32, np.float32]))
    descending = draw(st.booleans())
    a = draw(hnp.arrays(dtype, st.integers(0, max_len), elements=_elements(dtype)))
    b = draw(hnp.arrays(dtype, st.integers(0, max_len), elements=_elements(dtype)))
    return ref_sort(a, -1, descending), ref_sort(b, -1, descending), descending


@SETTINGS
@given(sorted_pair())
def test_merge_is_sorted_permutation_equal_to_reference(pair):
    a, b, descending = pair
    got, idx = jmp.merge(a, b, descending=descending, return_indices=True)
    assert is_permutation_of(got, a, b)
    assert bool(ref_is_sorted(got, descending=descending))
    want_v, want_i = ref_merge(a, b, descending=descending)
    assert_bits_equal(got, want_v, "merge values")
    assert_bits_equal(idx, want_i, "merge indices")
    np.testing.assert_array_equal(np.sort(np.asarray(idx)), np.arange(a.size + b.size))


@SETTINGS
@given(sorted_pair(), st.data())
def test_ragged_merge_keeps_tails(pair, data):
    a, b, descending = pair
    la = data.draw(st.integers(0, a.size))
    lb = data.draw(st.integers(0, b.size))
    # Unsorted garbage after the valid prefixes.
    a = np.concatenate([a[:la], a[la:][::-1]])
    b = np.concatenate([b[:lb], b[lb:][::-1]])
    got = np.asarray(jmp.merge(a, b, descending=descending, a_length=la, b_length=lb))
    assert is_permutation_of(got, a, b)
    k = la + lb
    assert bool(ref_is_sorted(got[:k], descending=descending))
    assert_bits_equal(got[k:], np.concatenate([a[la:], b[lb:]]), "tails")
    assert_bits_equal(
        got, ref_merge(a, b, descending=descending, a_length=la, b_length=lb)[0], "ragged"
    )


@SETTINGS
@given(sorted_pair())
def test_merge_runs_equals_merge_of_runs(pair):
    a, b, descending = pair
    x = np.concatenate([a, b])
    got_v, got_i = jmp.merge_runs(x, a.size, descending=descending, return_indices=True)
    want_v, want_i = ref_merge(a, b, descending=descending)
    assert_bits_equal(got_v, want_v, "merge_runs values")
    assert_bits_equal(got_i, want_i, "merge_runs indices")


@SETTINGS
@given(sorted_pair(max_len=40), st.data())
def test_co_rank_merge_path_identity(pair, data):
    a, b, descending = pair
    ks = data.draw(st.lists(st.integers(0, a.size + b.size), min_size=1, max_size=5))
    i = np.asarray(jmp.co_rank(np.asarray(ks, np.int32), a, b, descending=descending))
    merged = ref_merge(a, b, descending=descending)[0]
    for k, ik in zip(ks, i.tolist(), strict=True):
        assert max(0, k - b.size) <= ik <= min(k, a.size)
        head = ref_merge(a[:ik], b[: k - ik], descending=descending)[0]
        assert_bits_equal(merged[:k], head, f"co_rank k={k}")


@SETTINGS
@given(
    st.sampled_from([np.int32, np.float32]).flatmap(
        lambda dt: hnp.arrays(dt, st.integers(1, 30), elements=_elements(dt))
    ),
    st.booleans(),
    st.booleans(),
)
def test_is_sorted_agrees_with_reference(x, descending, presort):
    if presort:
        x = ref_sort(x, -1, descending)
    assert bool(jmp.is_sorted(x, descending=descending)) == bool(
        ref_is_sorted(x, descending=descending)
    )


@SETTINGS
@given(st.integers(1, 6), st.integers(0, 30), st.integers(0, 2**32 - 1))
def test_batched_merge_runs_per_row_split(rows, d, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(-3, 4, (rows, d)).astype(np.float32)
    split = rng.integers(-2, d + 3, rows)
    x = sort_segments(x, split)
    got_v, got_i = jmp.merge_runs(x, jnp.asarray(split, jnp.int32), return_indices=True)
    want_i = np.argsort(x, axis=-1, kind="stable")  # no NaN/-0 here: numpy's order is the key order
    np.testing.assert_array_equal(np.asarray(got_i), want_i)
    assert_bits_equal(got_v, np.take_along_axis(x, want_i, -1), "merge_runs rows")
