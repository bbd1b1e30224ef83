# Sanity checks of the test references themselves (reference.py): the float order key agrees
# with numpy's stable argsort and with jnp.argsort(stable=True) on data without subnormals, in
# both directions, and the ragged reference follows docs/contract.md's layout on a hand-worked
# example.
from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from reference import (
    FLOAT_DTYPES,
    KEY_DTYPES,
    index_dtype,
    np_argsort,
    random_keys,
    ref_argsort,
    ref_merge,
    to_bits,
)

pytestmark = pytest.mark.slow  # the test references' own checks against jnp (.ci/run)


def _numpy_stable_argsort(x: np.ndarray, descending: bool) -> np.ndarray:
    y = x.astype(np.float64)  # exact for every float key dtype
    if not descending:
        return np.argsort(y, kind="stable")
    # jnp.argsort's stable descending: sort the reversed array, reverse the indices back.
    p = np.argsort(y[::-1], kind="stable")
    return (len(y) - 1 - p)[::-1]


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_order_key_matches_numpy_and_jnp(rng, dtype, descending):
    x = random_keys(rng, dtype, (500,), "special")
    np.testing.assert_array_equal(
        ref_argsort(x, descending=descending), _numpy_stable_argsort(x, descending)
    )
    tiny = np.abs(x.astype(np.float64)) < float(jnp.finfo(dtype).smallest_normal)
    x = np.where(tiny & (x != 0), np.array(1.0, dtype), x)  # XLA:CPU flushes subnormals
    want = jnp.argsort(jnp.asarray(x), stable=True, descending=descending)
    np.testing.assert_array_equal(ref_argsort(x, descending=descending), np.asarray(want))


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("dtype", KEY_DTYPES, ids=str)
def test_numpy_argsort_matches_jnp_reference(rng, dtype, descending):
    x = random_keys(rng, dtype, (3, 400), "few")
    for axis in (0, 1):
        np.testing.assert_array_equal(
            np_argsort(x, axis, descending), ref_argsort(x, axis, descending)
        )


def test_ragged_reference_layout():
    a = np.array([1.0, 4.0, 9.0, -5.0], np.float32)  # valid: 1, 4
    b = np.array([2.0, 3.0, 0.0], np.float32)  # valid: 2
    v, i = ref_merge(a, b, a_length=2, b_length=1)
    np.testing.assert_array_equal(v, [1.0, 2.0, 4.0, 9.0, -5.0, 3.0, 0.0])
    np.testing.assert_array_equal(i, [0, 4, 1, 2, 3, 5, 6])
    assert i.dtype == index_dtype()


def test_reference_orders_signed_zeros_and_nans():
    nan_neg = np.array([0xFFC00000], np.uint32).view(np.float32)[0]
    a = np.array([-0.0, 1e-45, np.nan], np.float32)
    b = np.array([-1e-45, 0.0, 0.0, nan_neg], np.float32)
    v, i = ref_merge(a, b)
    np.testing.assert_array_equal(i, [3, 0, 4, 5, 1, 2, 6])
    assert to_bits(v)[-1] == 0xFFC00000
    v, i = ref_merge(a[::-1], b[::-1], descending=True)
    np.testing.assert_array_equal(i, [0, 3, 1, 2, 4, 5, 6])
