# Bad arguments raise at trace time (docs/contract.md "Errors"): dtypes without a common dtype ->
# jnp's TypePromotionError (a ValueError); Python lists and tuples given as arrays (keys,
# lengths, splits, k) -> TypeError naming the argument, as jnp refuses them; 0-d inputs, axis out
# of range, mismatched batch shapes, lengths/splits of the wrong shape, an axis too long for
# int32 indices with x64 off -> ValueError (with x64 on it merges, with int64 indices). Each case
# is checked eagerly and under jax.eval_shape (abstract inputs: nothing runs), and messages are
# checked loosely for the argument's name.
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jax_mergepath as jmp

pytestmark = pytest.mark.fast  # the fast tier (the README's test command)

S = jax.ShapeDtypeStruct
F32, I32 = jnp.float32, jnp.int32
F8, F16 = jnp.float8_e4m3fn, jnp.float16  # no implicit promotion between them (jnp's rule)
PROMOTION = r"(?i)promotion"


def _raises_both_ways(exc: type[Exception], match: str, fn: Callable, *specs: Any) -> None:
    """fn raises exc (message matching) on abstract inputs and on concrete zero inputs."""
    with pytest.raises(exc, match=match):
        jax.eval_shape(fn, *specs)
    concrete = [
        jnp.zeros(s.shape, s.dtype) if isinstance(s, jax.ShapeDtypeStruct) else s for s in specs
    ]
    with pytest.raises(exc, match=match):
        fn(*concrete)


# -------------------------------------------------------------------------------------- merge

MERGE_ERRORS = [
    # (id, exception, match, a spec, b spec, kwargs)
    ("dtype_f8_f16", ValueError, PROMOTION, S((5,), F8), S((4,), F16), {}),
    ("dtype_f8_f8", ValueError, PROMOTION, S((5,), F8), S((4,), jnp.float8_e5m2), {}),
    ("a_0d", ValueError, r"\ba\b", S((), F32), S((4,), F32), {}),
    ("b_0d", ValueError, r"\bb\b", S((5,), F32), S((), F32), {}),
    ("both_0d", ValueError, r"\b[ab]\b", S((), F32), S((), F32), {}),
    ("axis_too_big", ValueError, r"(?i)axis", S((2, 5), F32), S((2, 4), F32), {"axis": 2}),
    ("axis_too_small", ValueError, r"(?i)axis", S((2, 5), F32), S((2, 4), F32), {"axis": -3}),
    ("axis_1d", ValueError, r"(?i)axis", S((5,), F32), S((4,), F32), {"axis": 1}),
    ("batch_mismatch", ValueError, r"(?i)batch|shape|dim", S((3, 5), F32), S((4, 5), F32), {}),
    ("batch_mismatch_axis0", ValueError, r"(?i)batch|shape|dim", S((5, 3), F32),
     S((5, 2), F32), {"axis": 0}),
    ("ndim_mismatch", ValueError, r"(?i)dim|shape", S((5,), F32), S((1, 5), F32), {}),
    ("a_length_shape", ValueError, r"a_length", S((3, 5), F32), S((3, 4), F32),
     {"a_length": jnp.zeros((4,), I32)}),
    ("b_length_shape", ValueError, r"b_length", S((3, 5), F32), S((3, 4), F32),
     {"b_length": jnp.zeros((3, 2), I32)}),
]  # fmt: skip


@pytest.mark.parametrize(
    ("exc", "match", "a", "b", "kw"),
    [c[1:] for c in MERGE_ERRORS],
    ids=[c[0] for c in MERGE_ERRORS],
)
def test_merge_bad_arguments(exc, match, a, b, kw):
    _raises_both_ways(exc, match, functools.partial(jmp.merge, **kw), a, b)
    _raises_both_ways(exc, match, functools.partial(jmp.merge, return_indices=True, **kw), a, b)


def test_merge_errors_under_jit_and_vmap():
    a, b = jnp.zeros((3, 5), F8), jnp.zeros((3, 4), F16)
    with pytest.raises(ValueError, match=PROMOTION):
        jax.jit(jmp.merge)(a, b)
    with pytest.raises(ValueError, match=PROMOTION):
        jax.vmap(jmp.merge)(a, b)
    with pytest.raises(ValueError):
        jax.vmap(jmp.merge)(jnp.zeros((3,), F32), jnp.zeros((3,), F32))  # 0-d per example
    with pytest.raises(ValueError, match=r"(?i)axis"):
        jax.jit(functools.partial(jmp.merge, axis=5))(a, a)


@pytest.mark.parametrize(("m", "n"), [(2**31, 1), (2**30, 2**30), (2**31 - 1, 1)])
def test_merge_axis_longer_than_int32(m, n):
    """An output axis of 2**31 or more elements (eval_shape only): int64 indices with x64 on, a
    ValueError at trace time that says to turn x64 on with it off."""
    idx = functools.partial(jmp.merge, return_indices=True)
    out, pos = jax.eval_shape(idx, S((2, m), jnp.int8), S((2, n), jnp.int8))
    assert (out.shape, pos.dtype) == ((2, m + n), jnp.int64)
    with jax.enable_x64(False):
        with pytest.raises(ValueError, match=r"jax_enable_x64"):
            jax.eval_shape(jmp.merge, S((m,), jnp.int8), S((n,), jnp.int8))
        with pytest.raises(ValueError, match=r"jax_enable_x64"):
            jax.eval_shape(idx, S((2, m), jnp.int8), S((2, n), jnp.int8))


def test_merge_axis_just_fits_int32():
    out, idx = jax.eval_shape(
        functools.partial(jmp.merge, return_indices=True),
        S((2**31 - 2,), jnp.int8),
        S((1,), jnp.int8),
    )
    assert out.shape == (2**31 - 1,) and out.dtype == jnp.int8
    assert idx.shape == (2**31 - 1,) and idx.dtype == jnp.int64  # (x64 on: conftest)


# ------------------------------------------------------------------------------- merge_by_key

MBK_ERRORS = [
    ("key_dtype", ValueError, PROMOTION,
     (S((5,), F8), S((4,), F16), S((5,), F32), S((4,), F32)), {}),
    ("value_dtype", ValueError, PROMOTION,
     (S((5,), F32), S((4,), F32), S((5,), F8), S((4,), F16)), {}),
    ("keys_0d", ValueError, r"a_keys|b_keys|key",
     (S((), F32), S((4,), F32), S((), F32), S((4,), F32)), {}),
    ("axis", ValueError, r"(?i)axis",
     (S((2, 5), F32), S((2, 4), F32), S((2, 5), F32), S((2, 4), F32)), {"axis": 2}),
    ("key_batch", ValueError, r"(?i)batch|shape|dim",
     (S((3, 5), F32), S((2, 4), F32), S((3, 5), F32), S((2, 4), F32)), {}),
    ("a_values_batch", ValueError, r"a_values|value",
     (S((3, 5), F32), S((3, 4), F32), S((2, 5), F32), S((3, 4), F32)), {}),
    ("b_values_length", ValueError, r"b_values|value",
     (S((3, 5), F32), S((3, 4), F32), S((3, 5), F32), S((3, 6), F32)), {}),
    ("values_fewer_dims", ValueError, r"a_values|value",
     (S((3, 5), F32), S((3, 4), F32), S((5,), F32), S((3, 4), F32)), {}),
]  # fmt: skip


@pytest.mark.parametrize(
    ("exc", "match", "specs", "kw"), [c[1:] for c in MBK_ERRORS], ids=[c[0] for c in MBK_ERRORS]
)
def test_merge_by_key_bad_arguments(exc, match, specs, kw):
    _raises_both_ways(exc, match, functools.partial(jmp.merge_by_key, **kw), *specs)


def test_merge_by_key_mismatched_value_trees():
    k5, k4 = jnp.zeros(5, F32), jnp.zeros(4, F32)
    with pytest.raises((ValueError, TypeError)):
        jmp.merge_by_key(k5, k4, {"x": jnp.zeros(5)}, {"y": jnp.zeros(4)})
    with pytest.raises((ValueError, TypeError)):
        jmp.merge_by_key(k5, k4, (jnp.zeros(5), jnp.zeros(5)), (jnp.zeros(4),))


# --------------------------------------------------------------------------------- merge_runs

RUNS_ERRORS = [
    ("x_0d", ValueError, r"\bx\b", S((), F32), 0, {}),
    ("axis", ValueError, r"(?i)axis", S((3, 5), F32), 2, {"axis": 2}),
    ("axis_neg", ValueError, r"(?i)axis", S((3, 5), F32), 2, {"axis": -3}),
    ("split_shape", ValueError, r"split", S((3, 5), F32), jnp.zeros((4,), I32), {}),
    ("split_shape_axis0", ValueError, r"split", S((3, 5), F32), jnp.zeros((3,), I32),
     {"axis": 0}),
]  # fmt: skip


@pytest.mark.parametrize(
    ("exc", "match", "x", "split", "kw"),
    [c[1:] for c in RUNS_ERRORS],
    ids=[c[0] for c in RUNS_ERRORS],
)
def test_merge_runs_bad_arguments(exc, match, x, split, kw):
    _raises_both_ways(exc, match, lambda x: jmp.merge_runs(x, split, **kw), x)


def test_merge_runs_axis_longer_than_int32():
    out = jax.eval_shape(lambda x: jmp.merge_runs(x, 5), S((2**31,), jnp.int8))
    assert out.shape == (2**31,)
    with jax.enable_x64(False), pytest.raises(ValueError, match=r"jax_enable_x64"):
        jax.eval_shape(lambda x: jmp.merge_runs(x, 5), S((2**31,), jnp.int8))


# ---------------------------------------------------------------------- co_rank and is_sorted


def test_co_rank_bad_arguments():
    k = jnp.arange(4, dtype=I32)
    with pytest.raises(ValueError, match=PROMOTION):
        jax.eval_shape(jmp.co_rank, k, S((5,), F8), S((4,), F16))
    with pytest.raises(ValueError, match=r"\ba\b"):
        jax.eval_shape(jmp.co_rank, k, S((), F32), S((4,), F32))
    with pytest.raises(ValueError, match=r"(?i)batch|shape|dim"):
        jax.eval_shape(jmp.co_rank, k, S((2, 5), F32), S((3, 4), F32))
    with pytest.raises(ValueError, match=PROMOTION):
        jmp.co_rank(k, jnp.zeros(5, F8), jnp.zeros(4, F16))


IS_SORTED_ERRORS = [
    ("x_0d", ValueError, r"\bx\b", S((), F32), {}),
    ("axis", ValueError, r"(?i)axis", S((3, 5), F32), {"axis": 2}),
    ("axis_neg", ValueError, r"(?i)axis", S((3, 5), F32), {"axis": -3}),
]


@pytest.mark.parametrize(
    ("exc", "match", "x", "kw"),
    [c[1:] for c in IS_SORTED_ERRORS],
    ids=[c[0] for c in IS_SORTED_ERRORS],
)
def test_is_sorted_bad_arguments(exc, match, x, kw):
    _raises_both_ways(exc, match, functools.partial(jmp.is_sorted, **kw), x)


def test_good_arguments_do_not_raise():
    """The checks reject only bad arguments: every supported combination traces."""
    for dt in (jnp.bool_, jnp.int8, jnp.uint64, jnp.bfloat16, jnp.float64):
        out = jax.eval_shape(jmp.merge, S((3, 5), dt), S((3, 0), dt))
        assert out.shape == (3, 5) and out.dtype == dt
    out = jax.eval_shape(functools.partial(jmp.merge, axis=0), S((5, 3), F32), S((2, 3), F32))
    assert out.shape == (7, 3)
    out = jax.eval_shape(
        lambda a, b: jmp.merge(a, b, a_length=np.int32(2), b_length=jnp.array([1, 2, 3])),
        S((3, 5), F32),
        S((3, 4), F32),
    )
    assert out.shape == (3, 9)
    assert np.asarray(jmp.merge(np.array([1.0, 2.0]), np.array([1.5]))).tolist() == [1.0, 1.5, 2.0]


# ---------------------------------------------------------------------- Python lists


A, B = jnp.array([[1, 3, 5]]), jnp.array([[2, 4]])
LIST_CASES = {
    # name: (the call with a Python list, the argument the message names)
    "merge a": (lambda: jmp.merge([1, 3], jnp.array([2])), "a"),
    "merge b": (lambda: jmp.merge(jnp.array([1, 3]), [2]), "b"),
    "merge b tuple": (lambda: jmp.merge(jnp.array([1, 3]), (2,)), "b"),
    "merge a_length": (lambda: jmp.merge(A, B, a_length=[2]), "a_length"),
    "merge b_length": (lambda: jmp.merge(A, B, b_length=[1]), "b_length"),
    "merge_by_key keys": (lambda: jmp.merge_by_key([1], jnp.array([2]), jnp.array([0]),
                                                   jnp.array([1])), "a_keys"),
    "merge_runs x": (lambda: jmp.merge_runs([1, 3, 2], 2), "x"),
    "merge_runs split": (lambda: jmp.merge_runs(A, [2]), "split"),
    "co_rank k": (lambda: jmp.co_rank([1, 2], jnp.array([1, 3]), jnp.array([2])), "k"),
    "co_rank a": (lambda: jmp.co_rank(1, [1, 3], jnp.array([2])), "a"),
    "is_sorted x": (lambda: jmp.is_sorted([1, 2]), "x"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(LIST_CASES))
def test_python_lists_are_refused(case):
    """Every array argument refuses a Python list or tuple with a TypeError naming it, as jnp's
    functions do (jnp.concatenate([[1, 3], [2]]) raises one too); a Python scalar is taken (a
    0-d array: an int k, a length)."""
    call, name = LIST_CASES[case]
    with pytest.raises(TypeError, match=rf"\b{name} must be an array or a scalar, got a Python"):
        call()


def test_python_scalars_are_arrays():
    assert jmp.co_rank(2, jnp.array([1, 3]), jnp.array([2])).tolist() == 1
    out = jmp.merge(A, B, a_length=2, b_length=np.int64(1))
    assert out.tolist() == [[1, 2, 3, 5, 4]]
    with pytest.raises(TypeError):
        jnp.concatenate([[1, 3], [2]])  # (jnp's own)
